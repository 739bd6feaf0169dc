#!/bin/bash
# stat_postgres: a private PostgreSQL cluster runs inside a cgroup (postmaster
# and every backend), loaded by pgbench from outside it. Over the same 5 s,
# `cgperf-agent stat -G CG -e task-clock,context-switches` and
# `perf stat -a -G CG,CG -e task-clock,context-switches` must agree within 5%
# on both events. Asserts the load really ran in the cgroup during the window
# (enough backends, task-clock and switches well above idle) so the comparison
# is not between two near-zero numbers. cpu.stat usage over a bracket around
# the agent is printed for reference only.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
source "$(dirname "$0")/../lib/perfstat.sh"
export LC_ALL=C

DUR=5
need perf python3
cg_new pg
rel=${rel#/}

pg_start "$cg"
pg_bench_init 5

# Select-only at a fixed rate (-R, Poisson-scheduled transactions): every
# query round-trip costs backend CPU and context switches, and the work done
# in any window is set by the schedule, not by how much CPU is left over. An
# unthrottled run saturates both vCPUs, so its rate dips whenever perf or the
# agent start up, or a concurrent build runs, and the two tools (whose windows
# start tens of ms apart) see different rates. ~8000 tps is ~0.4 CPU here.
# pgbench itself stays in our (the test's) cgroup.
pg_bench_start "$TMP/pgbench.log" -S -c 4 -j 2 -T 10 -R 8000
sleep 2
kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
grep -qx "$PG_BENCH_PID" "$cg/cgroup.procs" && fail "pgbench $PG_BENCH_PID runs inside $cg"
nprocs=$(wc -l <"$cg/cgroup.procs")
((nprocs >= 5)) || fail "only $nprocs processes in $cg (want postmaster + 4 backends)"

stat_both task-clock,context-switches

wait "$PG_BENCH_PID"
brc=$?
tps=$(awk '/^tps/ { print $3; exit }' "$TMP/pgbench.log")
((brc == 0)) || { tail -n 20 "$TMP/pgbench.log" >&2; fail "pgbench exited with $brc"; }

read -r At _ _ _ Apt _ <<<"$(agent_field "$TMP/agent.json" "$rel" task-clock msec)" &&
	[[ -n ${At:-} ]] || { sed 's/^/    agent: /' "$TMP/agent.json" >&2; fail "bad agent output"; }
read -r Ac _ _ _ Apc _ <<<"$(agent_field "$TMP/agent.json" "$rel" context-switches "")" &&
	[[ -n ${Ac:-} ]] || { sed 's/^/    agent: /' "$TMP/agent.json" >&2; fail "bad agent output"; }
Pt=$(perf_value "$TMP/perf.csv" "$rel" task-clock) &&
	Pc=$(perf_value "$TMP/perf.csv" "$rel" context-switches) ||
	{ sed 's/^/    perf: /' "$TMP/perf.csv" >&2; fail "bad perf output"; }

U=$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
info "cgroup /$rel: $nprocs processes, pgbench -S -c 4 -j 2 -R 8000: tps $tps"
info "task-clock        agent $At ms (${Apt}% running)   perf $Pt ms   $(pct_diff "$At" "$Pt")%"
info "context-switches  agent $Ac (${Apc}% running)   perf $Pc   $(pct_diff "$Ac" "$Pc")%"
info "cpu.stat usage    $U ms over a $T ms bracket around the agent (reference only)"

fails=()
awk -v v="$Pt" -v d="$DUR" 'BEGIN { exit !(v >= d * 100) }' ||
	fails+=("load too light to compare: perf task-clock $Pt ms in ${DUR}s")
awk -v v="$Pc" -v d="$DUR" 'BEGIN { exit !(v >= d * 1000) }' ||
	fails+=("load too light to compare: perf context-switches $Pc in ${DUR}s")
near "$At" "$Pt" 5 || fails+=("task-clock: agent $At ms vs perf $Pt ms: $(pct_diff "$At" "$Pt")% (limit 5%)")
near "$Ac" "$Pc" 5 || fails+=("context-switches: agent $Ac vs perf $Pc: $(pct_diff "$Ac" "$Pc")% (limit 5%)")

((${#fails[@]} == 0)) || { printf 'FAIL: %s\n' "${fails[@]}" >&2; exit 1; }
info "ok"
