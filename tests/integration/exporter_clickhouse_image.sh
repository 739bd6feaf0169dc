#!/bin/bash
# The ClickHouse store's cgroups table gains the image column (issue 13):
#   - a database made before it (the cgroups table without `image`, one row
#     in it): the exporter opens it, adds the column, and the old row loads
#     (its cgroup on /api/v1/targets, image empty);
#   - a row with an image (written by SQL, as the exporter's INSERT does:
#     image last): after a restart, /api/v1/targets shows it (a cgroup
#     without counters has no /metrics series; identity_podman checks
#     /metrics on SQLite).
# Skips only when clickhouse-server cannot run here.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
why=$(ch_available) || skip "$why"
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
ch_start one || fail "clickhouse-server did not start"
DB=cg_old
ch_query one "CREATE DATABASE $DB" >/dev/null || fail "CREATE DATABASE"
ch_query one "CREATE TABLE $DB.cgroups (host String, path String, cgroup_id UInt64,
 container_id String, runtime String, pod_uid String, qos String, k8s_namespace String,
 pod_name String, container_name String, unit String, slice String, last_seen_ns UInt64)
 ENGINE = MergeTree PARTITION BY toDate(toDateTime(intDiv(last_seen_ns, 1000000000)))
 ORDER BY (host, path)" >/dev/null || fail "CREATE TABLE cgroups (old)"
now=$(date +%s%N)
ch_query one "INSERT INTO $DB.cgroups VALUES ('h', '/old', 1, 'c0', 'docker', '', '', '', '',
 'oldname', '', '', $now)" >/dev/null || fail "INSERT old row"

port=$(free_port)
start_exporter() {
	"$EXPORTER" --listen "127.0.0.1:$port" --store clickhouse \
		--clickhouse-url "http://127.0.0.1:${CH_HTTP[one]}" --clickhouse-database "$DB" \
		>"$TMP/exp.log" 2>&1 &
	EXP=$!
	bg_track $EXP
	wait_http "http://127.0.0.1:$port/healthz" "$(scaled 10)" "$TMP/exp.log"
}
start_exporter
cols=$(ch_query one "SELECT name FROM system.columns WHERE database = '$DB' AND table = 'cgroups' AND name = 'image'")
[[ $cols == image ]] || fail "no image column added: '$cols' $(tail -3 "$TMP/exp.log")"
curl -sf "http://127.0.0.1:$port/api/v1/targets" >"$TMP/t1.json" || fail "no /api/v1/targets"
python3 - "$TMP/t1.json" <<'PY' || fail "old row: $(head -c 1500 "$TMP/t1.json")"
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["cgroups"] if c["path"] == "/old"]
assert c and c[0]["container_name"] == "oldname" and c[0].get("image", "") == "", c
PY
info "old cgroups table: image column added, the old row loads"

ch_query one "INSERT INTO $DB.cgroups VALUES ('h', '/old', 1, 'c0', 'docker', '', '', '', '',
 'oldname', '', '', $((now + 1)), 'localhost/img:7')" >/dev/null ||
	fail "INSERT row with an image"
kill -TERM $EXP
wait $EXP 2>/dev/null || true
start_exporter
curl -sf "http://127.0.0.1:$port/api/v1/targets" >"$TMP/t2.json" || fail "no /api/v1/targets"
grep -q 'localhost/img:7' "$TMP/t2.json" || fail "targets lack the image: $(head -c 1500 "$TMP/t2.json")"
info "restart: the image on /api/v1/targets, loaded from the store"
kill -TERM $EXP
wait $EXP 2>/dev/null || true
