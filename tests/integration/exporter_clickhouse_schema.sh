#!/bin/bash
# Schema versions of the ClickHouse store (store_clickhouse_schema.c):
#   - a database made by an exporter of schema version 1 (its DDL below:
#     no cgperf_schema, no expiry table, cgroups without image) holding a
#     batch of rows: the exporter opens it, ADDs cgroups.image, creates
#     expiry, records version 3, and answers the old rows (folded stacks,
#     the counter on /metrics, the agent and cgroup on targets, its image
#     empty); a restart upgrades nothing twice, and a cgroups row with an
#     image (written by SQL as the exporter's INSERT does: image last)
#     shows on targets after it (issue 13; a cgroup without counters has
#     no /metrics series: identity_podman checks /metrics on SQLite);
#   - a database of a newer version (4) is refused at start with an error
#     that says so, and is left as it was.
# Skips only when clickhouse-server cannot run here.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
why=$(ch_available) || skip "$why"
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
ch_shared one || fail "clickhouse-server did not start"
DB=$(ch_db v1)
q() { ch_query one "$1" >/dev/null || fail "SQL failed: ${1:0:80}"; }
DAY='toDate(toDateTime(intDiv(%s, 1000000000)))'
MONTH='toYYYYMM(toDateTime(intDiv(%s, 1000000000)))'
# shellcheck disable=SC2059 # the partition expressions are formats
{
q "CREATE DATABASE $DB"
q "CREATE TABLE $DB.batches (agent_id String, seq UInt64, host String, version String,
 start_ns UInt64, end_ns UInt64, received_ns UInt64, stack_samples UInt64, samples UInt64,
 lost_samples UInt64, unwind_failures UInt64, push_failures UInt64, push_rejected UInt64,
 spool_dropped_batches UInt64, stacks_refused UInt64, spool_bytes UInt64, spool_batches UInt64,
 ins UInt64) ENGINE = ReplacingMergeTree PARTITION BY $(printf "$MONTH" received_ns)
 ORDER BY (agent_id, seq)"
q "CREATE TABLE $DB.cgroups (host String, path String, cgroup_id UInt64, container_id String,
 runtime String, pod_uid String, qos String, k8s_namespace String, pod_name String,
 container_name String, unit String, slice String, last_seen_ns UInt64)
 ENGINE = MergeTree PARTITION BY $(printf "$DAY" last_seen_ns) ORDER BY (host, path)"
q "CREATE TABLE $DB.counters (agent_id String, seq UInt64, row UInt64, host String, path String,
 event String, value UInt64, time_enabled UInt64, time_running UInt64, supported UInt8,
 scaled Float64, received_ns UInt64) ENGINE = ReplacingMergeTree
 PARTITION BY $(printf "$MONTH" received_ns) ORDER BY (host, path, event, row)"
q "CREATE TABLE $DB.samples (bucket UInt64, host String, path String, event String,
 frequency UInt64, period UInt64, stack UInt64, count UInt64, agent_id String, seq UInt64,
 ins UInt64) ENGINE = MergeTree PARTITION BY $(printf "$DAY" bucket)
 ORDER BY (bucket, host, path, event, stack)"
q "CREATE TABLE $DB.stacks (hash UInt64, folded String, modules String)
 ENGINE = ReplacingMergeTree ORDER BY hash"
q "CREATE TABLE $DB.modules (id UInt64, path String, build_id String)
 ENGINE = ReplacingMergeTree ORDER BY id"
q "CREATE TABLE $DB.probes (agent_id String, seq UInt64, row UInt64, host String, path String,
 label String, hits UInt64, vals Array(UInt64), latency Array(UInt64), received_ns UInt64)
 ENGINE = ReplacingMergeTree PARTITION BY $(printf "$MONTH" received_ns)
 ORDER BY (host, path, label, row)"
}
now=$(date +%s%N)
bucket=$((now / 60000000000 * 60000000000))
q "INSERT INTO $DB.stacks VALUES (7, 'main;old_fn', '')"
q "INSERT INTO $DB.samples VALUES ($bucket, 'h', '/old', 'cpu-clock', 99, 0, 7, 5, 'ag', 1, 42)"
q "INSERT INTO $DB.cgroups VALUES ('h', '/old', 1, 'c0', 'docker', '', '', '', '', 'oldname',
 '', '', $now)"
q "INSERT INTO $DB.counters VALUES ('ag', 1, 1, 'h', '/old', 'task-clock', 2000000000,
 1, 1, 1, 2000000000, $now)"
q "INSERT INTO $DB.batches VALUES ('ag', 1, 'h', '0.old', $now, $now, $now, 5, 5,
 0, 0, 0, 0, 0, 0, 0, 0, 42)"

port=$(free_port)
start_exporter() { # LOG: start it, wait for /healthz
	"$EXPORTER" --listen "127.0.0.1:$port" --store clickhouse \
		--clickhouse-url "http://127.0.0.1:${CH_HTTP[one]}" --clickhouse-database "$DB" \
		>"$1" 2>&1 &
	EXP=$!
	bg_track $EXP
	wait_http "http://127.0.0.1:$port/healthz" "$(scaled 10)" "$1"
}
start_exporter "$TMP/exp.log"
[[ $(ch_query one "EXISTS TABLE $DB.expiry") == 1 ]] || fail "no expiry table made"
[[ $(ch_query one "SELECT count() FROM system.columns WHERE database = '$DB' AND table = 'cgroups' AND name = 'image'") == 1 ]] ||
	fail "no image column added"
[[ $(ch_query one "SELECT groupArray(version) FROM $DB.cgperf_schema") == '[3]' ]] ||
	fail "schema version: $(ch_query one "SELECT * FROM $DB.cgperf_schema")"
curl -sf "http://127.0.0.1:$port/api/v1/stacks?host=h" >"$TMP/f" || fail "no stacks from the old rows"
[[ $(cat "$TMP/f") == 'main;old_fn 5' ]] || fail "old stacks: $(cat "$TMP/f")"
curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/m" || fail "no /metrics"
grep -q '^cgperf_cgroup_cpu_seconds_total{host="h",id="/old",.*} 2$' "$TMP/m" ||
	fail "old counter: $(grep /old "$TMP/m")"
curl -sf "http://127.0.0.1:$port/api/v1/targets" >"$TMP/t" || fail "no targets"
python3 - "$TMP/t" <<'PY' || fail "old rows on targets: $(head -c 1500 "$TMP/t")"
import json, sys
t = json.load(open(sys.argv[1]))
assert [a for a in t["agents"] if a["agent_id"] == "ag" and a["batches"] == 1], t["agents"]
assert [c for c in t["cgroups"] if c["path"] == "/old" and c["container_name"] == "oldname"
        and c.get("image", "") == ""], t
PY
info "version 1 database: image added, expiry made, version 3 recorded, the old rows answered"
q "INSERT INTO $DB.cgroups VALUES ('h', '/old', 1, 'c0', 'docker', '', '', '', '', 'oldname',
 '', '', $((now + 1)), 'localhost/img:7')"
kill -TERM $EXP
wait $EXP || fail "exporter did not stop cleanly: $(tail -3 "$TMP/exp.log")"
start_exporter "$TMP/exp2.log"
[[ $(ch_query one "SELECT count() FROM $DB.cgperf_schema") == 1 ]] || fail "upgraded twice"
curl -sf "http://127.0.0.1:$port/api/v1/targets" >"$TMP/t2" || fail "no targets"
grep -q 'localhost/img:7' "$TMP/t2" || fail "targets lack the image: $(head -c 1500 "$TMP/t2")"
info "restart: nothing upgraded twice; the image on /api/v1/targets, loaded from the store"
kill -TERM $EXP
wait $EXP || fail "exporter did not stop cleanly"

q "INSERT INTO $DB.cgperf_schema VALUES (4, $now)"
"$EXPORTER" --listen "127.0.0.1:$port" --store clickhouse \
	--clickhouse-url "http://127.0.0.1:${CH_HTTP[one]}" --clickhouse-database "$DB" \
	2>"$TMP/new.err" && fail "a database of a newer schema was accepted"
grep -q "database $DB at .* has schema version 4, newer than this exporter's 3" "$TMP/new.err" ||
	fail "newer schema: $(cat "$TMP/new.err")"
[[ $(ch_query one "SELECT count() FROM $DB.cgperf_schema") == 2 ]] || fail "the newer database was changed"
info "version 4 database refused: $(grep -o 'has schema version.*' "$TMP/new.err" | head -1)"
