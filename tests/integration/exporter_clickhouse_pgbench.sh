#!/bin/bash
# A ClickHouse outage in the middle of a pgbench run: PostgreSQL in its own
# cgroup under pgbench, a real `cgperf-agent run` pushing each batch to
# exporter E (ClickHouse store, a clickhouse-server started here) and to a
# SQLite exporter R (the reference). The ClickHouse server is killed for
# about 3 s while the agent pushes, then started again on the same data.
# Once E has caught up and the agent has stopped: the agent saw 503s, and E
# answers exactly R's folded stacks (nothing lost, nothing counted twice)
# and R's cgroup and agent series on /metrics. Skips without
# clickhouse-server or PostgreSQL.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
source "$(dirname "$0")/../lib/pg.sh"
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
why=$(ch_available) || skip "$why"
[[ -x $PG_BIN/pgbench ]] || skip "PostgreSQL (pgbench) not installed"

cg=$(cg_make pgch)
rel=${cg#"$(cg2_mount)"}
pg_start "$cg" 1
ch_start s || fail "clickhouse-server did not start"

declare -A PORT PID
start() { # NAME ARGS...: an exporter on a free port
	local n=$1
	shift
	PORT[$n]=$(free_port)
	"$EXPORTER" --listen "127.0.0.1:${PORT[$n]}" --log-level debug "$@" 2>>"$TMP/$n.log" &
	PID[$n]=$!
	bg_track $!
	wait_http "http://127.0.0.1:${PORT[$n]}/healthz" $(scaled 10) "$TMP/$n.log"
}
url() { echo "http://127.0.0.1:${PORT[$1]}$2"; }
folded() { # NAME OUT: sorted folded stacks of the test's host
	local st
	st=$(curl -s -o "$2.raw" -w '%{http_code}' "$(url "$1" "/api/v1/stacks?host=pg-ch-host")")
	[[ $st == 200 ]] || fail "$1 stacks: HTTP $st $(head -c 300 "$2.raw")"
	sort "$2.raw" >"$2"
}
series() { # NAME OUT: the host's cgroup series and agent counts of /metrics, sorted
	curl -sf "$(url "$1" /metrics)" >"$2.raw" || fail "$1: no /metrics"
	grep -E '^cgperf_cgroup_(cpu_seconds|perf_events)_total|^cgperf_agent_(batches|stack_samples)_total' \
		"$2.raw" | grep 'pg-ch-host' | sort >"$2"
}
same() { # WHAT A B
	cmp -s "$2" "$3" || fail "$1 differ: $(diff "$2" "$3" | head -8)"
}
metric() { # URL NAME [LABEL]: the first sample of NAME whose labels hold LABEL
	curl -sf "$1" | awk -v n="$2" -v l="${3:-}" '($1 == n || index($1, n "{") == 1) &&
		(l == "" || index($1, l)) { print $NF; exit }'
}
start E --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[s]}"
start R --data-dir "$TMP/R"

cat >"$TMP/agent.yaml" <<YAML
host: {name: pg-ch-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {frequency: 99, call_graph: fp}
log: {level: debug}
push:
  collectors: ["$(url E /api/v1/push)", "$(url R /api/v1/push)"]
  interval: 1s
  retry: {initial: 100ms, max: 500ms}
  spool: {dir: $TMP/spool}
  timeout: 5s
YAML
pg_bench_start "$TMP/pgbench.log" -n -S -c 2 -j 2 -T 10 -R 3000
# No --duration: the agent runs until its spool has gone into the restarted
# server, however long that takes to come back.
"$AGENT" run --config "$TMP/agent.yaml" 2>"$TMP/agent.log" &
AG=$!
bg_track $AG
# the outage comes once E has stored two of the agent's batches
for ((i = 0; i < $(scaled 20) * 5; i++)); do
	n=$(metric "$(url E /metrics)" cgperf_agent_batches_total 'host="pg-ch-host"')
	((${n:-0} >= 2)) && break
	kill -0 $AG 2>/dev/null || fail "the agent exited: $(tail -3 "$TMP/agent.log")"
	sleep 0.2
done
((${n:-0} >= 2)) || fail "E stored ${n:-no} batches of the agent in $(scaled 20)s: $(tail -3 "$TMP/agent.log")"
ch_stop s KILL
sleep 3 # the outage
ch_start s || fail "clickhouse-server did not start again"
# E caught up: the agent says its lane recovered and E has as many of its
# batches as R (the agent's /metrics spool gauge is read right after a new
# batch is queued: never 0 while it runs)
for ((i = 0; i < $(scaled 30) * 5; i++)); do
	ne=$(metric "$(url E /metrics)" cgperf_agent_batches_total 'host="pg-ch-host"')
	nr=$(metric "$(url R /metrics)" cgperf_agent_batches_total 'host="pg-ch-host"')
	grep -q 'recovered: batch' "$TMP/agent.log" && [[ -n $ne && $ne == "$nr" ]] && break
	sleep 0.2
done
grep -q 'recovered: batch' "$TMP/agent.log" && [[ -n $ne && $ne == "$nr" ]] ||
	fail "E did not catch up in $(scaled 30)s: $ne of R's $nr batches: $(grep -i 'push' "$TMP/agent.log" | tail -3)"
kill -TERM $AG
wait $AG || fail "the agent failed: $(tail -3 "$TMP/agent.log")"
wait "$PG_BENCH_PID" || fail "pgbench failed: $(tail -3 "$TMP/pgbench.log")"
grep -q 'failing: HTTP 503' "$TMP/agent.log" ||
	fail "the agent saw no 503 while ClickHouse was down: $(grep -i push "$TMP/agent.log" | tail -3)"
# every batch acked by both: E serves what R does (the stacks at once, its
# copy of the totals within a second); waited for all the same
for ((i = 0; i < $(scaled 10) * 5; i++)); do
	folded R "$TMP/R.folded"
	folded E "$TMP/E.folded"
	series R "$TMP/R.series"
	series E "$TMP/E.series"
	cmp -s "$TMP/E.folded" "$TMP/R.folded" && cmp -s "$TMP/E.series" "$TMP/R.series" && break
	sleep 0.2
done
tot=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/R.folded")
((tot > 20)) || fail "the agent pushed only $tot samples of PostgreSQL"
same "stacks pushed through the outage" "$TMP/E.folded" "$TMP/R.folded"
[[ -s $TMP/R.series ]] || fail "the reference has no series of the host"
same "/metrics after the outage" "$TMP/E.series" "$TMP/R.series"
b=$(grep -c 'msg="batch queued"' "$TMP/agent.log")
info "ClickHouse down ~3 s under pgbench: $b batches, $tot samples, the same on E as on R"
for e in E R; do
	kill -TERM "${PID[$e]}"
	wait "${PID[$e]}" || fail "exporter $e did not stop cleanly: $(tail -3 "$TMP/$e.log")"
done
ch_stop s
grep -l 'Sanitizer\|runtime error' "$TMP"/*.log && fail "sanitizer reports"
exit 0
