// SPDX-License-Identifier: MIT
/*
 * cgperf-exporter: receives the batches cgperf-agent pushes, stores them in
 * SQLite under --data-dir and serves per-cgroup totals on /metrics. See
 * docs/cgperf-exporter.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/log.h"
#include "agent/wire.h"
#include "exporter/http.h"
#include "exporter/store.h"
#include "exporter/totals.h"

/* Longest token file accepted. */
#define TOKEN_MAX 4096

static void usage(FILE *f)
{
	fputs("usage: cgperf-exporter --listen ADDR:PORT --data-dir DIR [--token-file FILE]\n"
	      "                       [--max-body BYTES] [--log-level LEVEL]\n",
	      f);
}

/* Read the token in @path (trailing whitespace cut). 0 or -errno. */
static int read_token(const char *path, char **out)
{
	char buf[TOKEN_MAX + 2];
	FILE *f = fopen(path, "r");
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

static int rebuild_one(void *arg, const struct store_counter *c)
{
	return totals_add(arg, c->host, c->cgroup_path, c->container_id, c->pod_uid, c->unit,
			  c->event, c->value, c->time_enabled, c->time_running, c->supported);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "token-file", required_argument, NULL, 't' },
		{ "max-body", required_argument, NULL, 'm' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen = NULL, *dir = NULL, *token_file = NULL, *level = "info";
	unsigned long long max_body = WIRE_BODY_MAX_DEFAULT;
	struct store *store = NULL;
	struct totals *totals = NULL;
	struct http *http = NULL;
	char *token = NULL;
	char err[512] = "";
	sigset_t sigs;
	int opt, sig, ret, status = 1;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case 'l': listen = optarg; break;
		case 'd': dir = optarg; break;
		case 't': token_file = optarg; break;
		case 'L': level = optarg; break;
		case 'm':
			errno = 0;
			max_body = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || max_body == 0 ||
			    max_body > (1ull << 30)) {
				fprintf(stderr, "cgperf-exporter: --max-body '%s': want 1..%llu bytes\n",
					optarg, 1ull << 30);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !listen || !dir) {
		usage(stderr);
		return 2;
	}
	if (log_setup("logfmt", level)) {
		fprintf(stderr, "cgperf-exporter: --log-level '%s': want debug, info, warn or error\n",
			level);
		return 2;
	}
	if (token_file) {
		ret = read_token(token_file, &token);
		if (ret) {
			log_kv(LOG_ERROR, "cannot read token file", "file", token_file, "error",
			       ret == -EINVAL ? "empty or several lines" : strerror(-ret), NULL);
			return 1;
		}
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		log_kv(LOG_ERROR, "cannot create data directory", "dir", dir, "error",
		       strerror(errno), NULL);
		goto out;
	}
	store = store_open(dir, err, sizeof(err));
	if (!store) {
		log_kv(LOG_ERROR, "cannot open store", "error", err[0] ? err : strerror(errno), NULL);
		goto out;
	}
	totals = totals_new();
	if (!totals || (ret = store_each_counter(store, rebuild_one, totals))) {
		log_kv(LOG_ERROR, "cannot rebuild totals from the store", NULL);
		goto out;
	}
	/* Every thread started from here on inherits the blocked set. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	http = http_start(&(struct http_config){ .listen = listen,
						 .token = token,
						 .max_body = (size_t)max_body,
						 .store = store,
						 .totals = totals },
			  err, sizeof(err));
	if (!http) {
		log_kv(LOG_ERROR, "cannot start HTTP service", "error",
		       err[0] ? err : strerror(errno), NULL);
		goto out;
	}
	char mb[32];

	snprintf(mb, sizeof(mb), "%llu", max_body);
	log_kv(LOG_INFO, "exporter started", "listen", listen, "data_dir", dir, "auth",
	       token ? "bearer" : "none", "max_body", mb, NULL);
	if (sigwait(&sigs, &sig) == 0)
		log_kv(LOG_INFO, "stopping", "signal", sig == SIGTERM ? "TERM" : "INT", NULL);
	http_stop(http);
	status = 0;
	log_kv(LOG_INFO, "exporter stopped", NULL);
out:
	totals_free(totals);
	store_close(store);
	free(token);
	return status;
}
