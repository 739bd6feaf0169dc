/* SPDX-License-Identifier: MIT */
#ifndef CGPERF_EXPORTER_CONFIG_H
#define CGPERF_EXPORTER_CONFIG_H

/*
 * cgperf-exporter's settings: a flat YAML file (--config) and command-line
 * flags over it, flags winning. docs/config-exporter.md is the user's
 * reference. Checks are complete before anything starts: an unknown or
 * duplicate key, a wrong type or an out-of-range value is one line
 * "FILE:LINE:COL: what is wrong", with a suggestion for a misspelt key.
 * Nothing here prints.
 */

#include <stddef.h>
#include <stdint.h>

#define EXPORTER_MAX_BODY_MAX (1ull << 30)
#define EXPORTER_MAX_CONNECTIONS_MAX 1000000u
#define EXPORTER_REMOTE_WRITE_URLS_MAX 8

/* Prometheus remote_write (exporter/remote_write.h); no URL: off. */
struct exporter_rw_config {
	char **urls; /* remote_write_url: repeatable */
	size_t nurls;
	char *bearer_token_file; /* or NULL */
	char *basic_user, *basic_password_file; /* or NULL */
	char *instance; /* the instance label; NULL: HOSTNAME:PORT of listen */
	uint64_t interval_ns; /* default 15s */
	uint64_t queue; /* requests waiting per URL, at most; default 64 */
};

struct exporter_config {
	char *listen;      /* "HOST:PORT" */
	char *data_dir;
	char *token_file;  /* NULL: pushes are not authenticated */
	char *log_level;   /* debug, info, warn, error */
	char *store;       /* backend name: "sqlite" or "clickhouse" */
	char *ui_dir;      /* the page's files read from here first (development); NULL: built-in */
	/* The clickhouse store (NULL: unset): its HTTP interface's URL, the
	 * database, the remote_servers cluster, the user and a file holding
	 * the password; every server's HTTP URL, comma-separated. */
	char *clickhouse_url, *clickhouse_database, *clickhouse_cluster, *clickhouse_user,
		*clickhouse_password_file, *clickhouse_shard_urls;
	uint64_t retention_ns;     /* raw rows older than this are deleted; default 7d */
	uint64_t series_expiry_ns; /* series not updated for this long vanish; default 15m */
	uint64_t max_body;         /* bytes, 1..EXPORTER_MAX_BODY_MAX */
	uint64_t max_series;       /* entries /metrics may hold (cgroups, series, agents) */
	uint64_t max_series_bytes; /* bytes they may take */
	uint64_t max_connections;  /* HTTP connections held at once; default 16384 */
	uint64_t idle_timeout_ns;  /* an idle connection is closed after this; default 120s */
	uint64_t ingest_queue;     /* pushes waiting for the store, at most; default 4096 */
	struct exporter_rw_config remote_write;
};

/* Defaults into @c (strings malloc'd). 0 or -ENOMEM. */
int exporter_config_defaults(struct exporter_config *c);
void exporter_config_release(struct exporter_config *c);

/*
 * Read the YAML file @path over @c. 0; -EINVAL (bad file, reason in @err),
 * -EFBIG, -ENOMEM or the -errno of reading it. @c is changed only on
 * success.
 */
int exporter_config_load(struct exporter_config *c, const char *path, char *err, size_t errlen);
/* The same on @len bytes at @buf named @name in messages. */
int exporter_config_parse(struct exporter_config *c, const char *name, const char *buf,
			  size_t len, char *err, size_t errlen);

/*
 * Set the setting @key ("retention", "max_body", ... as in the file) from
 * its text @value, as a flag does (remote_write_url adds a URL; the file
 * may give it a list). 0, -EINVAL (reason in @err: what is
 * accepted), -ENOENT for an unknown key, or -ENOMEM.
 */
int exporter_config_set(struct exporter_config *c, const char *key, const char *value, char *err,
			size_t errlen);

/* Durations are lib/units.h's units_duration_ns() ("7d", "1h30m"). */

/*
 * A point in time for a query: Unix seconds ("1714564800", fractions
 * allowed), RFC 3339 ("2024-05-01T12:00:00Z", "...T14:00:00.5+02:00"),
 * "now", or a duration before @now_ns ("-1h", "-90m"). 0 and *@ns set, or
 * -EINVAL.
 */
int exporter_parse_time(const char *s, uint64_t now_ns, uint64_t *ns);

#endif
