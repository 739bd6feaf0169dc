#!/bin/bash
# Probes find their binary among the traced cgroup's processes (issue 13):
# `trace -G CG -e sdt:postgresql:query__start` with no @BINARY, PostgreSQL in
# CG and no binary named "postgresql" anywhere in PATH, counts what perf
# counts over the same 400 pgbench -S transactions (perf stat -G CG on perf's
# own sdt_postgresql:query__start uprobe event); and run's config probe of the
# same spec, with the cgroup followed, counts the queries of 100 more.
# (A probe on a cgroup with no such process yet waits: trace_cgroup_wait.)
# holds: uprobe_events pg-uprobe
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
command -v perf >/dev/null && perf --version >/dev/null 2>&1 || fail "perf missing (linux-perf)"
cg_new pgbin
PERF_EV=sdt_postgresql:query__start
MADE_EV=0
_ev_cleanup() { ((MADE_EV)) && perf probe -q -d "$PERF_EV" >/dev/null 2>&1; MADE_EV=0; }
trap '_ev_cleanup; _pg_cleanup; _cleanup' EXIT
command -v postgresql >/dev/null && fail "a 'postgresql' in PATH would make this test moot"
pg_start "$cg" 1
T=400

if ! perf probe -l 2>/dev/null | grep -q "$PERF_EV"; then
	perf probe -q -x "$PG_BIN/postgres" -a "$PERF_EV" >"$TMP/pp.err" 2>&1 ||
		fail "perf probe $PERF_EV failed: $(cat "$TMP/pp.err")"
	MADE_EV=1
fi
# perf stat and the agent over the same run: perf outside, the agent inside.
perf stat -a -x, -e "$PERF_EV" -G "$rel" -o "$TMP/perf.csv" -- \
	"$AGENT" trace -G "$rel" -e sdt:postgresql:query__start --json -- \
	sh -c "cd '$TMP' && exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
	'$PG_BIN/pgbench' -n -S -M simple -c 1 -t $T >'$TMP/pgbench.log' 2>&1" \
	>"$TMP/t.json" 2>"$TMP/err" || fail "trace failed: $(cat "$TMP/err" "$TMP/perf.csv" 2>/dev/null)"
grep -q "processed: $T/$T" "$TMP/pgbench.log" || fail "pgbench: $(cat "$TMP/pgbench.log")"
ours=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(r["hits"] for r in rows if r["probe"] == "sdt:postgresql:query__start" and r["cgroup"] == sys.argv[2]))' "$TMP/t.json" "$rel")
perfs=$(awk -F, -v e="$PERF_EV" '$3 == e { print $1 }' "$TMP/perf.csv")
[[ $perfs =~ ^[0-9]+$ ]] || fail "perf stat gave no count: $(cat "$TMP/perf.csv")"
info "query__start in $rel: agent $ours, perf $perfs ($T transactions)"
(( ours >= T )) || fail "agent counted $ours < $T transactions"
(( ours == perfs )) || fail "agent $ours != perf $perfs"

# run: a config probe without @BINARY resolves among the followed cgroups' processes.
source "$(dirname "$0")/../lib/containers.sh"
source "$(dirname "$0")/../lib/exporter.sh"
exporter_up
port=$(free_port)
agent_yaml pgbin "$rel" 'probes: [{spec: "sdt:postgresql:query__start"}]' "metrics: {listen: \"127.0.0.1:$port\"}"
run_agent "$TMP/agent.yaml" "$port"
pg_bench_run -n -S -M simple -c 1 -t 100 >"$TMP/pgbench2.log" 2>&1 || fail "pgbench: $(cat "$TMP/pgbench2.log")"
# (the hits reach the exporter's /metrics with the next push, 1 s apart,
# then its ingest, both slow on a loaded host: up to 30 s)
for i in $(seq $(( 150 * TIME_SCALE ))); do
	hits=$(curl -sf "$ex/metrics" |
		awk -v id="id=\"$rel\"" '/^cgperf_probe_hits_total\{/ && index($0, id) && /query__start/ { s += $NF } END { print s + 0 }')
	(( hits >= 100 )) && break
	sleep 0.2
done
(( hits >= 100 )) || fail "run's sdt:postgresql:query__start counted $hits < 100: $(tail -3 "$TMP/run.log")"
info "run: sdt:postgresql:query__start (no @BINARY) counted $hits for 100 transactions"
kill -TERM $AG; wait $AG || fail "agent exited with $?"
