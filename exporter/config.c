// SPDX-License-Identifier: MIT
/*
 * The exporter's configuration is one flat mapping of scalars, so the walk
 * is short: libyaml's document API builds the tree, every key must be one
 * of the settings, exactly once, and each value goes through the same
 * setter a command-line flag uses, so a file and a flag accept exactly the
 * same text. As in agent/cmd/config.c, YAML's implicit typing is not used:
 * values are read as text by this file.
 */
#include "exporter/config.h"
#include "exporter/http.h"
#include "exporter/totals.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/httpc.h"
#include "lib/strv.h"
#include "lib/suggest.h"
#include "lib/units.h"
#include "lib/ydoc.h"

#define CONFIG_FILE_MAX (1 << 20)
#define VALUE_MAX 4096
#define NS_S UINT64_C(1000000000)
/* The last second a time in ns fits an int64 (2262-04-11), as the store
 * keeps times: a later one would wrap around to the past. */
#define SEC_MAX ((uint64_t)INT64_MAX / NS_S - 1)

static const char *const keys[] = {
	"listen", "data_dir", "token_file", "log_level", "store",
	"retention", "series_expiry", "max_body", "max_series", "max_series_bytes",
	"max_connections", "idle_timeout", "ingest_queue",
	"remote_write_url", "remote_write_bearer_token_file", "remote_write_basic_auth_user",
	"remote_write_basic_auth_password_file", "remote_write_instance", "remote_write_interval",
	"remote_write_queue", "clickhouse_url", "clickhouse_database", "clickhouse_cluster",
	"clickhouse_user", "clickhouse_password_file", "clickhouse_shard_urls", "ui_dir", NULL,
};

/* The clickhouse store's string settings, by key; NULL for another key. */
static char **clickhouse_setting(struct exporter_config *c, const char *key)
{
	return !strcmp(key, "clickhouse_url")		  ? &c->clickhouse_url
	       : !strcmp(key, "clickhouse_database")	  ? &c->clickhouse_database
	       : !strcmp(key, "clickhouse_cluster")	  ? &c->clickhouse_cluster
	       : !strcmp(key, "clickhouse_user")	  ? &c->clickhouse_user
	       : !strcmp(key, "clickhouse_password_file") ? &c->clickhouse_password_file
	       : !strcmp(key, "clickhouse_shard_urls")	  ? &c->clickhouse_shard_urls
							  : NULL;
}

static const char *const clickhouse_keys[] = { "clickhouse_url", "clickhouse_database",
					       "clickhouse_cluster", "clickhouse_user",
					       "clickhouse_password_file", "clickhouse_shard_urls" };

int exporter_config_defaults(struct exporter_config *c)
{
	memset(c, 0, sizeof(*c));
	c->retention_ns = 7 * 24 * 3600 * NS_S;
	c->series_expiry_ns = 15 * 60 * NS_S;
	c->max_body = 32u << 20;
	c->max_series = TOTALS_ENTRIES_MAX_DEFAULT;
	c->max_series_bytes = TOTALS_BYTES_MAX_DEFAULT;
	c->max_connections = HTTP_CONNECTIONS_DEFAULT;
	c->idle_timeout_ns = HTTP_IDLE_TIMEOUT_DEFAULT_S * NS_S;
	c->ingest_queue = HTTP_INGEST_QUEUE_DEFAULT;
	c->remote_write.interval_ns = 15 * NS_S;
	c->remote_write.queue = 64;
	if (strv_set(&c->log_level, "info") || strv_set(&c->store, "sqlite")) {
		exporter_config_release(c);
		return -ENOMEM;
	}
	return 0;
}

void exporter_config_release(struct exporter_config *c)
{
	free(c->listen);
	free(c->data_dir);
	free(c->token_file);
	free(c->log_level);
	free(c->store);
	free(c->ui_dir);
	for (size_t i = 0; i < sizeof(clickhouse_keys) / sizeof(clickhouse_keys[0]); i++)
		free(*clickhouse_setting(c, clickhouse_keys[i]));
	strv_free(c->remote_write.urls, c->remote_write.nurls);
	free(c->remote_write.bearer_token_file);
	free(c->remote_write.basic_user);
	free(c->remote_write.basic_password_file);
	free(c->remote_write.instance);
	memset(c, 0, sizeof(*c));
}

static int set_duration(uint64_t *dst, const char *key, const char *v, uint64_t min, char *err,
			size_t errlen)
{
	uint64_t ns;

	if (units_duration_ns(v, &ns) || ns < min || ns > 3650 * 86400 * NS_S) {
		snprintf(err, errlen,
			 "%s: '%.60s' is not a duration of 1s to 3650d (like 7d, 12h, 30m, 1h30m)",
			 key, v);
		return -EINVAL;
	}
	*dst = ns;
	return 0;
}

/* A whole number @min..@max; the refusal says "want [a whole number ]MIN..MAX[@unit]". */
static int set_count(uint64_t *dst, const char *key, const char *v, uint64_t min, uint64_t max,
		     const char *unit, char *err, size_t errlen)
{
	const char *p = v;
	uint64_t n;

	if (units_digits(&p, &n) || *p || n < min || n > max) {
		snprintf(err, errlen, "%s: '%.60s': want %s%" PRIu64 "..%" PRIu64 "%s", key, v,
			 unit ? "" : "a whole number ", min, max, unit ? unit : "");
		return -EINVAL;
	}
	*dst = n;
	return 0;
}

/* The remote_write_* settings. */
static int set_remote_write(struct exporter_rw_config *rw, const char *key, const char *v, char *err,
			    size_t errlen)
{
	const char *k = key + strlen("remote_write_");

	if (!strcmp(k, "interval"))
		return set_duration(&rw->interval_ns, key, v, NS_S, err, errlen);
	if (!strcmp(k, "queue"))
		return set_count(&rw->queue, key, v, 1, 100000, NULL, err, errlen);
	if (!*v || strpbrk(v, "\r\n")) {
		snprintf(err, errlen, "%s: empty or several lines", key);
		return -EINVAL;
	}
	if (!strcmp(k, "url")) {
		char **n;

		if (!httpc_is_http_url(v)) {
			snprintf(err, errlen, "%s: '%.60s' is not an http:// or https:// URL", key, v);
			return -EINVAL;
		}
		for (size_t i = 0; i < rw->nurls; i++)
			if (!strcmp(rw->urls[i], v)) {
				snprintf(err, errlen, "%s: '%.60s' given twice", key, v);
				return -EINVAL;
			}
		if (rw->nurls >= EXPORTER_REMOTE_WRITE_URLS_MAX) {
			snprintf(err, errlen, "%s: at most %d URLs", key, EXPORTER_REMOTE_WRITE_URLS_MAX);
			return -EINVAL;
		}
		n = realloc(rw->urls, (rw->nurls + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		rw->urls = n;
		rw->urls[rw->nurls] = NULL;
		if (strv_set(&rw->urls[rw->nurls], v))
			return -ENOMEM;
		rw->nurls++;
		return 0;
	}
	if (!strcmp(k, "bearer_token_file"))
		return strv_set(&rw->bearer_token_file, v);
	if (!strcmp(k, "basic_auth_user"))
		return strv_set(&rw->basic_user, v);
	if (!strcmp(k, "basic_auth_password_file"))
		return strv_set(&rw->basic_password_file, v);
	if (!strcmp(k, "instance"))
		return strv_set(&rw->instance, v);
	snprintf(err, errlen, "unknown setting '%.60s'", key);
	return -ENOENT;
}

static int copy_remote_write(struct exporter_rw_config *dst, const struct exporter_rw_config *src)
{
	*dst = *src;
	dst->urls = NULL;
	dst->nurls = 0;
	dst->bearer_token_file = dst->basic_user = dst->basic_password_file = dst->instance = NULL;
	if (strv_dup(&dst->urls, &dst->nurls, (const char *const *)src->urls, src->nurls) ||
	    strv_set(&dst->bearer_token_file, src->bearer_token_file) ||
	    strv_set(&dst->basic_user, src->basic_user) ||
	    strv_set(&dst->basic_password_file, src->basic_password_file) ||
	    strv_set(&dst->instance, src->instance))
		return -ENOMEM;
	return 0;
}

int exporter_config_set(struct exporter_config *c, const char *key, const char *v, char *err,
			size_t errlen)
{
	if (!strncmp(key, "remote_write_", 13))
		return set_remote_write(&c->remote_write, key, v, err, errlen);
	if (!strcmp(key, "listen") || !strcmp(key, "data_dir") || !strcmp(key, "token_file") ||
	    !strcmp(key, "ui_dir")) {
		char **dst = key[0] == 'l'   ? &c->listen
			     : key[0] == 'd' ? &c->data_dir
			     : key[0] == 'u' ? &c->ui_dir
					     : &c->token_file;

		if (!*v) {
			snprintf(err, errlen, "%s: empty", key);
			return -EINVAL;
		}
		if (key[0] == 'l' && !strchr(v, ':')) {
			snprintf(err, errlen, "%s: '%.60s' is not HOST:PORT (like 127.0.0.1:9464)",
				 key, v);
			return -EINVAL;
		}
		return strv_set(dst, v);
	}
	if (!strcmp(key, "log_level")) {
		if (strcmp(v, "debug") && strcmp(v, "info") && strcmp(v, "warn") &&
		    strcmp(v, "error")) {
			snprintf(err, errlen, "%s: '%.60s': want debug, info, warn or error", key,
				 v);
			return -EINVAL;
		}
		return strv_set(&c->log_level, v);
	}
	if (!strcmp(key, "store")) {
		if (strcmp(v, "sqlite") && strcmp(v, "clickhouse")) {
			snprintf(err, errlen, "%s: '%.60s': want sqlite or clickhouse", key, v);
			return -EINVAL;
		}
		return strv_set(&c->store, v);
	}
	if (clickhouse_setting(c, key)) {
		if (!strcmp(key, "clickhouse_url") && !httpc_is_http_url(v)) {
			snprintf(err, errlen, "%s: '%.60s': want http://HOST:PORT", key, v);
			return -EINVAL;
		}
		if (!*v) {
			snprintf(err, errlen, "%s: empty", key);
			return -EINVAL;
		}
		return strv_set(clickhouse_setting(c, key), v);
	}
	if (!strcmp(key, "retention"))
		return set_duration(&c->retention_ns, key, v, NS_S, err, errlen);
	if (!strcmp(key, "series_expiry"))
		return set_duration(&c->series_expiry_ns, key, v, NS_S, err, errlen);
	if (!strcmp(key, "max_body"))
		return set_count(&c->max_body, key, v, 1, EXPORTER_MAX_BODY_MAX, " bytes", err,
				 errlen);
	if (!strcmp(key, "idle_timeout"))
		return set_duration(&c->idle_timeout_ns, key, v, NS_S, err, errlen);
	if (!strcmp(key, "max_connections"))
		return set_count(&c->max_connections, key, v, 16, EXPORTER_MAX_CONNECTIONS_MAX,
				 NULL, err, errlen);
	if (!strcmp(key, "ingest_queue"))
		return set_count(&c->ingest_queue, key, v, 1, HTTP_INGEST_QUEUE_MAX, NULL, err,
				 errlen);
	if (!strcmp(key, "max_series"))
		return set_count(&c->max_series, key, v, 1, 1ull << 40, NULL, err, errlen);
	if (!strcmp(key, "max_series_bytes"))
		return set_count(&c->max_series_bytes, key, v, 1, 1ull << 40, NULL, err, errlen);
	snprintf(err, errlen, "unknown setting '%.60s'", key);
	return -ENOENT;
}

static int copy_config(struct exporter_config *dst, const struct exporter_config *src)
{
	struct exporter_config n = *src;

	n.listen = n.data_dir = n.token_file = n.log_level = n.store = n.ui_dir = NULL;
	for (size_t i = 0; i < sizeof(clickhouse_keys) / sizeof(clickhouse_keys[0]); i++)
		*clickhouse_setting(&n, clickhouse_keys[i]) = NULL;
	if (copy_remote_write(&n.remote_write, &src->remote_write) ||
	    (src->listen && strv_set(&n.listen, src->listen)) ||
	    (src->data_dir && strv_set(&n.data_dir, src->data_dir)) ||
	    (src->token_file && strv_set(&n.token_file, src->token_file)) ||
	    (src->log_level && strv_set(&n.log_level, src->log_level)) ||
	    (src->store && strv_set(&n.store, src->store)) ||
	    (src->ui_dir && strv_set(&n.ui_dir, src->ui_dir))) {
		exporter_config_release(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(clickhouse_keys) / sizeof(clickhouse_keys[0]); i++) {
		char **from = clickhouse_setting((struct exporter_config *)src, clickhouse_keys[i]);

		if (*from && strv_set(clickhouse_setting(&n, clickhouse_keys[i]), *from)) {
			exporter_config_release(&n);
			return -ENOMEM;
		}
	}
	*dst = n;
	return 0;
}

/* A value of the root mapping: a scalar of at most VALUE_MAX bytes. */
static int value_text(struct ydoc *x, const yaml_node_t *v, const char *key, const char **out)
{
	bool known = false;

	if (v->type != YAML_SCALAR_NODE || ydoc_is_null(v)) {
		for (size_t i = 0; keys[i]; i++)
			known |= !strcmp(keys[i], key);
		if (known)
			return ydoc_fail(x, v, "%s: expected a value, got %s", key, ydoc_what(v).s);
		*out = ""; /* an unknown key: named as such by the caller */
		return 0;
	}
	*out = (const char *)v->data.scalar.value;
	if (strlen(*out) != v->data.scalar.length || v->data.scalar.length > VALUE_MAX)
		return ydoc_fail(x, v, "%s: NUL byte or longer than %d bytes", key, VALUE_MAX);
	return 0;
}

/* remote_write_url given as a list: each item as one flag would be. */
static int url_list(struct ydoc *x, struct exporter_config *c, const yaml_node_t *v)
{
	char why[320];

	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
		const yaml_node_t *n = ydoc_node(x, *i);
		const char *val;
		int rc;

		if (!n || n->type != YAML_SCALAR_NODE || ydoc_is_null(n))
			return ydoc_fail(x, n ? n : v, "remote_write_url: a list of URLs");
		if ((rc = value_text(x, n, "remote_write_url", &val)))
			return rc;
		rc = exporter_config_set(c, "remote_write_url", val, why, sizeof(why));
		if (rc == -EINVAL)
			return ydoc_fail(x, n, "%s", why);
		if (rc)
			return rc;
	}
	return 0;
}

/* The keys and values of the root mapping, over a copy of @c. */
static int walk(struct ydoc *x, struct exporter_config *c)
{
	const yaml_node_t *root = ydoc_root(x);
	const yaml_node_pair_t *first;
	char why[320];

	if (!root || ydoc_is_null(root))
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return ydoc_fail(x, root, "expected a mapping of settings (listen: ...)");
	first = root->data.mapping.pairs.start;
	for (const yaml_node_pair_t *p = first; p < root->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = ydoc_node(x, p->key), *v = ydoc_node(x, p->value);
		const char *key, *val = "", *hint;
		int rc;

		if (!k || !v || k->type != YAML_SCALAR_NODE)
			return ydoc_fail(x, k, "keys must be names");
		key = (const char *)k->data.scalar.value;
		for (const yaml_node_pair_t *q = first; q < p; q++) {
			const yaml_node_t *k0 = ydoc_node(x, q->key);

			if (k0 && k0->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k0->data.scalar.value, key))
				return ydoc_fail(x, k, "duplicate key '%.60s' (first at line %zu)",
						 key, k0->start_mark.line + 1);
		}
		if (v->type == YAML_SEQUENCE_NODE && !strcmp(key, "remote_write_url")) {
			if ((rc = url_list(x, c, v)))
				return rc;
			continue;
		}
		if ((rc = value_text(x, v, key, &val)))
			return rc;
		rc = exporter_config_set(c, key, val, why, sizeof(why));
		if (rc == -ENOENT) {
			hint = suggest_best(key, keys, SIZE_MAX, suggest_limit(strlen(key)));
			if (hint)
				return ydoc_fail(x, k, "unknown key '%.60s' (did you mean '%s'?)",
						 key, hint);
			return ydoc_fail(x, k, "unknown key '%.60s'", key);
		}
		if (rc == -EINVAL)
			return ydoc_fail(x, v, "%s", why);
		if (rc)
			return rc;
	}
	return 0;
}

static const struct ydoc_limits file_limits = {
	.depth = 16, .anchors = 64, .string = VALUE_MAX,
};

int exporter_config_parse(struct exporter_config *c, const char *name, const char *buf,
			  size_t len, char *err, size_t errlen)
{
	struct exporter_config n;
	struct ydoc *x;
	int rc;

	if (len > CONFIG_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", name, CONFIG_FILE_MAX);
		return -EFBIG;
	}
	rc = copy_config(&n, c);
	if (rc)
		return rc;
	rc = ydoc_load(name, buf, len, &file_limits, err, errlen, &x);
	if (rc) {
		exporter_config_release(&n);
		return rc;
	}
	rc = walk(x, &n);
	ydoc_free(x);
	if (rc) {
		exporter_config_release(&n);
		return rc;
	}
	exporter_config_release(c);
	*c = n;
	return 0;
}

int exporter_config_load(struct exporter_config *c, const char *path, char *err, size_t errlen)
{
	char *buf = malloc(CONFIG_FILE_MAX + 1);
	size_t len = 0;
	int fd, rc;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		free(buf);
		return rc;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
			close(fd);
			free(buf);
			return rc;
		}
		if (r == 0 || (len += (size_t)r) > CONFIG_FILE_MAX)
			break;
	}
	close(fd);
	rc = exporter_config_parse(c, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

/* Up to 9 digits of a fraction of a second at *@s, in ns. */
static uint64_t fraction(const char **s)
{
	uint64_t ns = 0, scale = 100000000;

	for (; isdigit((unsigned char)**s); (*s)++) {
		ns += (uint64_t)(**s - '0') * scale;
		scale /= 10;
	}
	return ns;
}

int exporter_parse_time(const char *s, uint64_t now_ns, uint64_t *out)
{
	uint64_t ns;

	if (!strcmp(s, "now")) {
		*out = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		if (units_duration_ns(s + 1, &ns) || ns > now_ns)
			return -EINVAL;
		*out = now_ns - ns;
		return 0;
	}
	if (strlen(s) >= 19 && s[4] == '-' && s[10] == 'T') {
		struct tm tm = { 0 };
		const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
		uint64_t frac = 0;
		int64_t off = 0;
		time_t t;

		if (!p)
			return -EINVAL;
		if (*p == '.') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			frac = fraction(&p);
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
			   isdigit((unsigned char)p[2]) && p[3] == ':' &&
			   isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
			off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
			      ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
			if (*p == '-')
				off = -off;
			p += 6;
		} else {
			return -EINVAL;
		}
		if (*p)
			return -EINVAL;
		t = timegm(&tm);
		if (t == (time_t)-1 || (int64_t)t - off < 0 ||
		    (uint64_t)((int64_t)t - off) > SEC_MAX)
			return -EINVAL;
		*out = (uint64_t)((int64_t)t - off) * NS_S + frac;
		return 0;
	}
	if (isdigit((unsigned char)s[0])) {
		uint64_t sec = 0, frac = 0;

		for (; isdigit((unsigned char)*s); s++) {
			sec = sec * 10 + (uint64_t)(*s - '0');
			if (sec > SEC_MAX)
				return -EINVAL;
		}
		if (*s == '.') {
			s++;
			frac = fraction(&s);
		}
		if (*s)
			return -EINVAL;
		*out = sec * NS_S + frac;
		return 0;
	}
	return -EINVAL;
}
