// SPDX-License-Identifier: MIT
/*
 * cgperf-exporter: receives the batches cgperf-agent pushes, stores them
 * under --data-dir and serves /metrics, stacks (folded, pprof, SVG),
 * targets, the explorer page and an index page. See docs/cgperf-exporter.md.
 *
 * The main thread only starts things, then waits for a signal and runs the
 * periodic work between two waits: series expiry and retention.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "exporter/config.h"
#include "exporter/http.h"
#include "exporter/store/store.h"
#include "exporter/totals.h"
#include "lib/clock.h"
#include "lib/strv.h"
#include "lib/version.h"
#include "exporter/remote_write.h"

/* Longest token file accepted. */
#define TOKEN_MAX 4096
#define NS_S UINT64_C(1000000000)
/* Rows deleted per retention transaction, and transactions per round. */
#define RETENTION_ROWS 5000
#define RETENTION_STEPS 200
/* Descriptors kept for the store, the event loops and logs. */
#define FD_RESERVE 64

static void usage(FILE *f)
{
	fputs("usage: cgperf-exporter --listen ADDR:PORT --data-dir DIR [--token-file FILE]\n"
	      "                       [--retention DURATION] [--series-expiry DURATION]\n"
	      "                       [--max-body BYTES] [--max-series N] [--max-series-bytes BYTES]\n"
	      "                       [--max-connections N] [--idle-timeout DURATION]\n"
	      "                       [--ingest-queue N]\n"
	      "                       [--store sqlite|clickhouse] [--clickhouse-url URL]\n"
	      "                       [--clickhouse-database DB] [--clickhouse-cluster NAME]\n"
	      "                       [--clickhouse-shard-urls URL,URL...]\n"
	      "                       [--clickhouse-user USER --clickhouse-password-file FILE]\n"
	      "                       [--remote-write-url URL ...] [--remote-write-interval DURATION]\n"
	      "                       [--remote-write-bearer-token-file FILE]\n"
	      "                       [--remote-write-basic-auth-user USER\n"
	      "                        --remote-write-basic-auth-password-file FILE]\n"
	      "                       [--remote-write-instance NAME] [--remote-write-queue N]\n"
	      "                       [--ui-dir DIR] [--config FILE.yaml]\n"
	      "                       [--log-level debug|info|warn|error] [--help] [--version]\n",
	      f);
}

/* Read the token in @path (trailing whitespace cut). 0 or -errno. */
static int read_token(const char *path, char **out)
{
	char buf[TOKEN_MAX + 2];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n > TOKEN_MAX)
		return -EFBIG;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
		     buf[n - 1] == '\t'))
		n--;
	if (!n || memchr(buf, '\n', n) || memchr(buf, '\0', n))
		return -EINVAL;
	buf[n] = '\0';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

/* Long-only options: codes above any character. */
enum {
	OPT_RW_URL = 0x400,
	OPT_RW_TOKEN,
	OPT_RW_USER,
	OPT_RW_PASSWORD,
	OPT_RW_INSTANCE,
	OPT_RW_INTERVAL,
	OPT_RW_QUEUE,
	OPT_CH_SHARDS,
	OPT_UI_DIR,
};

static const struct option opts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "token-file", required_argument, NULL, 't' },
	{ "retention", required_argument, NULL, 'r' },
	{ "series-expiry", required_argument, NULL, 'e' },
	{ "max-body", required_argument, NULL, 'm' },
	{ "max-series", required_argument, NULL, 'S' },
	{ "max-series-bytes", required_argument, NULL, 'B' },
	{ "max-connections", required_argument, NULL, 'C' },
	{ "idle-timeout", required_argument, NULL, 'I' },
	{ "ingest-queue", required_argument, NULL, 'Q' },
	{ "store", required_argument, NULL, 's' },
	{ "clickhouse-url", required_argument, NULL, 'U' },
	{ "clickhouse-database", required_argument, NULL, 'D' },
	{ "clickhouse-cluster", required_argument, NULL, 'K' },
	{ "clickhouse-user", required_argument, NULL, 'u' },
	{ "clickhouse-password-file", required_argument, NULL, 'P' },
	{ "clickhouse-shard-urls", required_argument, NULL, OPT_CH_SHARDS },
	{ "ui-dir", required_argument, NULL, OPT_UI_DIR },
	{ "config", required_argument, NULL, 'c' },
	{ "log-level", required_argument, NULL, 'L' },
	/* remote_write (exporter/remote_write.h) */
	{ "remote-write-url", required_argument, NULL, OPT_RW_URL },
	{ "remote-write-bearer-token-file", required_argument, NULL, OPT_RW_TOKEN },
	{ "remote-write-basic-auth-user", required_argument, NULL, OPT_RW_USER },
	{ "remote-write-basic-auth-password-file", required_argument, NULL, OPT_RW_PASSWORD },
	{ "remote-write-instance", required_argument, NULL, OPT_RW_INSTANCE },
	{ "remote-write-interval", required_argument, NULL, OPT_RW_INTERVAL },
	{ "remote-write-queue", required_argument, NULL, OPT_RW_QUEUE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The setting a flag sets, by its short code. */
static const char *setting(int opt)
{
	switch (opt) {
	case 'l': return "listen";
	case 'd': return "data_dir";
	case 't': return "token_file";
	case 'r': return "retention";
	case 'e': return "series_expiry";
	case 'm': return "max_body";
	case 'S': return "max_series";
	case 'B': return "max_series_bytes";
	case 'C': return "max_connections";
	case 'I': return "idle_timeout";
	case 'Q': return "ingest_queue";
	case 'L': return "log_level";
	case 's': return "store";
	case 'U': return "clickhouse_url";
	case 'D': return "clickhouse_database";
	case 'K': return "clickhouse_cluster";
	case 'u': return "clickhouse_user";
	case 'P': return "clickhouse_password_file";
	case OPT_CH_SHARDS: return "clickhouse_shard_urls";
	case OPT_UI_DIR: return "ui_dir";
	case OPT_RW_URL: return "remote_write_url";
	case OPT_RW_TOKEN: return "remote_write_bearer_token_file";
	case OPT_RW_USER: return "remote_write_basic_auth_user";
	case OPT_RW_PASSWORD: return "remote_write_basic_auth_password_file";
	case OPT_RW_INSTANCE: return "remote_write_instance";
	case OPT_RW_INTERVAL: return "remote_write_interval";
	case OPT_RW_QUEUE: return "remote_write_queue";
	default: return NULL;
	}
}

/*
 * The configuration: defaults, then --config's file, then the other flags
 * in order. 0, 2 for bad usage (message printed), 1 otherwise.
 */
static int configure(int argc, char **argv, struct exporter_config *cfg)
{
	const char *file = NULL;
	char err[512];
	int opt, rc;

	if (exporter_config_defaults(cfg))
		return 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'c')
			file = optarg;
		else if (opt == 'h')
			return usage(stdout), -1;
		else if (opt == 'V')
			return printf("cgperf-exporter %s\n", CGPERF_VERSION), -1;
		else if (opt == '?')
			return usage(stderr), 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (file) {
		rc = exporter_config_load(cfg, file, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "cgperf-exporter: %s\n", rc == -ENOMEM ? "out of memory" : err);
			return 2;
		}
	}
	optind = 1;
	bool rw_urls_flagged = false;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *key = setting(opt);

		if (!key)
			continue;
		if (opt == OPT_RW_URL && !rw_urls_flagged) {
			/* The flags' URLs replace the file's. */
			strv_free(cfg->remote_write.urls, cfg->remote_write.nurls);
			cfg->remote_write.urls = NULL;
			cfg->remote_write.nurls = 0;
			rw_urls_flagged = true;
		}
		rc = exporter_config_set(cfg, key, optarg, err, sizeof(err));
		if (rc) {
			/* The reason starts with the file's key: name the flag. */
			for (char *p = err; *p && *p != ':'; p++)
				if (*p == '_')
					*p = '-';
			fprintf(stderr, "cgperf-exporter: --%s\n",
				rc == -ENOMEM ? "out of memory" : err);
			return 2;
		}
	}
	if (!cfg->listen || (!cfg->data_dir && strcmp(cfg->store, "clickhouse")) ||
	    (!cfg->clickhouse_url && !strcmp(cfg->store, "clickhouse"))) {
		fprintf(stderr, "cgperf-exporter: %s is required (flag or config file)\n",
			!cfg->listen			 ? "--listen"
			: !strcmp(cfg->store, "clickhouse") ? "--clickhouse-url"
							    : "--data-dir");
		usage(stderr);
		return 2;
	}
	return 0;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void retention(struct store *s, uint64_t keep_ns)
{
	uint64_t now = http_now_ns(), total = 0;
	size_t n;
	int ret = 1;

	for (int i = 0; i < RETENTION_STEPS && ret == 1; i++) {
		ret = store_retention(s, now > keep_ns ? now - keep_ns : 0, RETENTION_ROWS, &n);
		total += n;
	}
	if (ret < 0) {
		log_kv(LOG_ERROR, "retention failed", "error", strerror(-ret), NULL);
	} else if (total) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, total);
		log_kv(LOG_DEBUG, "retention", "deleted_rows", t, NULL);
	}
}

/*
 * Every connection is a descriptor: raise the soft RLIMIT_NOFILE to the hard
 * one, and when even that does not cover the connection limit (plus the
 * store's and the loops' own descriptors), lower the limit to what fits and
 * say so. Returns the connection limit to use.
 */
static size_t fit_connections(size_t want)
{
	struct rlimit rl;
	rlim_t before;
	char w[32], s[32], h[32], u[32];
	size_t fit;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return want;
	before = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = before;
	}
	snprintf(w, sizeof(w), "%zu", want);
	snprintf(s, sizeof(s), "%llu", (unsigned long long)before);
	snprintf(h, sizeof(h), "%llu", (unsigned long long)rl.rlim_cur);
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)want + FD_RESERVE) {
		if (before != rl.rlim_cur)
			log_kv(LOG_DEBUG, "raised the open files limit", "from", s, "to", h, NULL);
		return want;
	}
	fit = rl.rlim_cur > 2 * FD_RESERVE ? (size_t)rl.rlim_cur - FD_RESERVE : FD_RESERVE;
	snprintf(u, sizeof(u), "%zu", fit);
	log_kv(LOG_WARN,
	       "open files limit (RLIMIT_NOFILE, hard) is below the connection limit: "
	       "fewer agents can stay connected; raise it (ulimit -Hn, LimitNOFILE=)",
	       "nofile", h, "max_connections", w, "using", u, NULL);
	return fit;
}

/* ---- remote_write ---- */

static int rw_snapshot(void *arg, struct page *p)
{
	return http_render_totals(arg, p);
}

static void rw_metrics(void *arg, struct page *p, bool om)
{
	rw_render(arg, p, om);
}

/* The instance label: the configured one, or HOSTNAME:PORT of --listen. */
static int rw_instance(const struct exporter_config *cfg, char *buf, size_t len)
{
	const char *port = strrchr(cfg->listen, ':');
	char host[256] = "";

	if (cfg->remote_write.instance)
		return snprintf(buf, len, "%s", cfg->remote_write.instance) < (int)len ? 0 : -ENAMETOOLONG;
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "localhost");
	return snprintf(buf, len, "%s%s", host, port ? port : "") < (int)len ? 0 : -ENAMETOOLONG;
}

/* remote_write from the configuration, not yet started; NULL when off or
 * on error (*@failed then set, and logged). */
static struct rw *rw_setup(const struct exporter_config *cfg, bool *failed)
{
	const struct exporter_rw_config *c = &cfg->remote_write;
	char *token = NULL, *password = NULL, instance[512];
	struct rw *rw = NULL;
	const char *what = NULL, *file = NULL;
	int ret = 0;

	*failed = false;
	if (!c->nurls)
		return NULL;
	if (c->bearer_token_file && (ret = read_token(c->bearer_token_file, &token)))
		what = "cannot read remote_write token file", file = c->bearer_token_file;
	else if (c->basic_password_file && (ret = read_token(c->basic_password_file, &password)))
		what = "cannot read remote_write password file", file = c->basic_password_file;
	else if (!c->basic_user != !c->basic_password_file)
		what = "remote_write basic auth needs both a user and a password file", ret = -EINVAL;
	else if ((ret = rw_instance(cfg, instance, sizeof(instance))))
		what = "remote_write instance label too long";
	if (!what) {
		rw = rw_new(&(struct rw_opts){ .urls = (const char *const *)c->urls,
					       .nurls = c->nurls,
					       .bearer_token = token,
					       .basic_user = c->basic_user,
					       .basic_password = password,
					       .instance = instance,
					       .interval_ms = c->interval_ns / 1000000,
					       .queue_max = (size_t)c->queue });
		if (!rw)
			what = "cannot set up remote_write", ret = -errno;
	}
	if (what) {
		log_kv(LOG_ERROR, what, "file", file ? file : "-", "error", strerror(-ret), NULL);
		*failed = true;
	}
	free(token);
	free(password);
	return rw;
}

/* Wait for SIGTERM or SIGINT, expiring series and enforcing retention
 * meanwhile. */
static void serve(struct http *http, struct store *store, const struct exporter_config *cfg,
		  const sigset_t *sigs)
{
	uint64_t expire_every = clamp(cfg->series_expiry_ns / 3, NS_S, 60 * NS_S);
	uint64_t retain_every = clamp(cfg->retention_ns / 2, NS_S, 60 * NS_S);
	uint64_t next_expire = clock_mono_ns(), next_retain = clock_mono_ns();

	for (;;) {
		struct timespec tick = { .tv_sec = 1 };
		uint64_t now;
		int sig = sigtimedwait(sigs, NULL, &tick);

		if (sig == SIGTERM || sig == SIGINT) {
			log_kv(LOG_INFO, "stopping", "signal", sig == SIGTERM ? "TERM" : "INT", NULL);
			return;
		}
		now = clock_mono_ns();
		if (now >= next_expire) {
			int ret = http_expire(http, http_now_ns());

			if (ret)
				log_kv(LOG_ERROR, "series expiry failed", "error", strerror(-ret),
				       NULL);
			next_expire = now + expire_every;
		}
		if (now >= next_retain) {
			retention(store, cfg->retention_ns);
			next_retain = clock_mono_ns() + retain_every;
		}
	}
}

/* The store of @cfg, opened; NULL when it cannot be (said in the log). */
static struct store *open_store(const struct exporter_config *cfg)
{
	const struct store_ops *backend = store_backend(cfg->store);
	struct store_config sc = { .dir = cfg->data_dir,
				   .url = cfg->clickhouse_url,
				   .database = cfg->clickhouse_database,
				   .cluster = cfg->clickhouse_cluster,
				   .user = cfg->clickhouse_user,
				   .shard_urls = cfg->clickhouse_shard_urls };
	char *password = NULL, err[512] = "";
	struct store *store = NULL;
	int ret;

	if (cfg->data_dir && mkdir(cfg->data_dir, 0700) && errno != EEXIST) {
		log_kv(LOG_ERROR, "cannot create data directory", "dir", cfg->data_dir, "error",
		       strerror(errno), NULL);
		return NULL;
	}
	if (cfg->clickhouse_password_file) {
		ret = read_token(cfg->clickhouse_password_file, &password);
		if (ret) {
			log_kv(LOG_ERROR, "cannot read clickhouse password file", "file",
			       cfg->clickhouse_password_file, "error",
			       ret == -EINVAL ? "empty or several lines" : strerror(-ret), NULL);
			return NULL;
		}
		sc.password = password;
	}
	store = backend ? store_open_config(backend, &sc, err, sizeof(err)) : NULL;
	if (!store)
		log_kv(LOG_ERROR, "cannot open store", "error", err[0] ? err : strerror(errno),
		       NULL);
	free(password);
	return store;
}

int main(int argc, char **argv)
{
	struct exporter_config cfg;
	struct store *store = NULL;
	struct totals *totals = NULL;
	struct http *http = NULL;
	struct rw *rw = NULL;
	bool rw_failed;
	struct store_visitor visitor;
	char *token = NULL;
	char err[512] = "";
	sigset_t sigs;
	int ret, status;

	status = configure(argc, argv, &cfg);
	if (status) {
		exporter_config_release(&cfg);
		return status < 0 ? 0 : status;
	}
	status = 1;
	if (log_setup("logfmt", cfg.log_level)) {
		fprintf(stderr, "cgperf-exporter: --log-level '%s': want debug, info, warn or error\n",
			cfg.log_level);
		goto out;
	}
	if (cfg.token_file) {
		ret = read_token(cfg.token_file, &token);
		if (ret) {
			log_kv(LOG_ERROR, "cannot read token file", "file", cfg.token_file, "error",
			       ret == -EINVAL ? "empty or several lines" : strerror(-ret), NULL);
			goto out;
		}
	}
	store = open_store(&cfg);
	if (!store)
		goto out;
	totals = totals_new();
	if (totals)
		totals_visitor(totals, &visitor);
	if (!totals || (ret = store_load(store, &visitor))) {
		/* A shared store's totals are loaded again before each answer:
		 * a shard whose tables are not made yet may come later. */
		if (totals && store_shared(store)) {
			log_kv(LOG_WARN, "cannot load totals from the store yet", "error",
			       strerror(-ret), NULL);
		} else {
			log_kv(LOG_ERROR, "cannot rebuild totals from the store", NULL);
			goto out;
		}
	}
	/* Every thread started from here on inherits the blocked set. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	size_t max_conn = fit_connections((size_t)cfg.max_connections);

	rw = rw_setup(&cfg, &rw_failed);
	if (rw_failed)
		goto out;

	http = http_start(&(struct http_config){ .listen = cfg.listen,
						 .token = token,
						 .max_body = (size_t)cfg.max_body,
						 .max_series = (size_t)cfg.max_series,
						 .max_series_bytes = (size_t)cfg.max_series_bytes,
						 .series_expiry_ns = cfg.series_expiry_ns,
						 .max_connections = max_conn,
						 .idle_timeout_s = (unsigned)(cfg.idle_timeout_ns / NS_S),
						 .ingest_queue = (size_t)cfg.ingest_queue,
						 .ui_dir = cfg.ui_dir,
						 .store = store,
						 .totals = totals,
						 .extra_metrics = rw ? rw_metrics : NULL,
						 .extra_arg = rw },
			  err, sizeof(err));
	if (!http) {
		log_kv(LOG_ERROR, "cannot start HTTP service", "error",
		       err[0] ? err : strerror(errno), NULL);
		goto out;
	}
	char mb[32], rt[32], ex[32], mc[32], it[32], iq[32];

	snprintf(mb, sizeof(mb), "%" PRIu64, cfg.max_body);
	snprintf(rt, sizeof(rt), "%" PRIu64 "s", cfg.retention_ns / NS_S);
	snprintf(ex, sizeof(ex), "%" PRIu64 "s", cfg.series_expiry_ns / NS_S);
	snprintf(mc, sizeof(mc), "%zu", max_conn);
	snprintf(it, sizeof(it), "%" PRIu64 "s", cfg.idle_timeout_ns / NS_S);
	snprintf(iq, sizeof(iq), "%" PRIu64, cfg.ingest_queue);
	log_kv(LOG_INFO, "exporter started", "listen", cfg.listen, "data_dir",
	       cfg.data_dir ? cfg.data_dir : "-", "auth",
	       token ? "bearer" : "none", "max_body", mb, "retention", rt, "series_expiry", ex,
	       "store", cfg.store, "max_connections", mc, "idle_timeout", it,
	       "ingest_queue", iq, NULL);
	if (rw && (ret = rw_start(rw, rw_snapshot, http))) {
		log_kv(LOG_ERROR, "cannot start remote_write", "error", strerror(-ret), NULL);
		http_stop(http);
		goto out;
	}
	if (rw) {
		char n[16];

		snprintf(n, sizeof(n), "%zu", cfg.remote_write.nurls);
		log_kv(LOG_INFO, "remote_write started", "urls", n, NULL);
	}
	serve(http, store, &cfg, &sigs);
	rw_free(rw); /* before the server its snapshots read */
	rw = NULL;
	http_stop(http);
	status = 0;
	log_kv(LOG_INFO, "exporter stopped", NULL);
out:
	rw_free(rw);
	totals_free(totals);
	store_close(store);
	free(token);
	exporter_config_release(&cfg);
	return status;
}
