#!/bin/bash
# stat_postgres: a private PostgreSQL cluster runs inside a cgroup (postmaster
# and every backend), loaded by pgbench from outside it.
# `cgperf-agent stat -G CG -e task-clock,context-switches` over 5 s and
# `perf stat -a -G CG,CG -e task-clock,context-switches` around it (the agent
# is perf's workload) must agree on both events: the agent no more than perf,
# no less than perf minus what the load does in the time perf's window adds
# (at least 5%). Asserts the load really ran in the cgroup during the window
# (enough backends, task-clock and switches well above idle) so the comparison
# is not between two near-zero numbers. cpu.stat usage over a bracket around
# perf and the agent is printed for reference only.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
source "$(dirname "$0")/../lib/perfstat.sh"
export LC_ALL=C

DUR=5
need perf python3
cg_new pg
rel=${rel#/}

pg_start "$cg" 5

# Select-only at a fixed rate (-R, Poisson-scheduled transactions): every
# query round-trip costs backend CPU and context switches, and the work done
# in any window is set by the schedule, not by how much CPU is left over. An
# unthrottled run saturates both vCPUs, so its rate dips whenever perf or the
# agent start up, or a concurrent build runs, and the two tools (whose windows
# start tens of ms apart) see different rates. ~8000 tps is ~0.4 CPU here.
# pgbench itself stays in our (the test's) cgroup.
# -T: the window and both tools' start-up with a wide margin, so the load
# lasts through perf's window on a slow host too.
pg_bench_start "$TMP/pgbench.log" -S -c 4 -j 2 -T $((DUR + $(scaled 10))) -R 8000
# until the 4 clients are connected: 4 backends ("postgres: ... [local] ...")
backends() {
	local p n=0
	for p in $(cat "$cg/cgroup.procs"); do
		[[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *"[local]"* ]] && n=$((n + 1))
	done
	echo $n
}
for ((i = 0; i < $(scaled 100); i++)); do
	(($(backends) >= 4)) && break
	kill -0 "$PG_BENCH_PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
(($(backends) >= 4)) || fail "pgbench's 4 backends not in $cg after $(scaled 10) s: $(backends)"
grep -qx "$PG_BENCH_PID" "$cg/cgroup.procs" && fail "pgbench $PG_BENCH_PID runs inside $cg"
nprocs=$(wc -l <"$cg/cgroup.procs")
((nprocs >= 5)) || fail "only $nprocs processes in $cg (want postmaster + 4 backends)"

stat_nested task-clock,context-switches

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
info "cpu.stat usage    $U ms over a $T ms bracket around perf (reference only)"

fails=()
awk -v v="$Pt" -v d="$DUR" 'BEGIN { exit !(v >= d * 100) }' ||
	fails+=("load too light to compare: perf task-clock $Pt ms in ${DUR}s")
awk -v v="$Pc" -v d="$DUR" 'BEGIN { exit !(v >= d * 1000) }' ||
	fails+=("load too light to compare: perf context-switches $Pc in ${DUR}s")
# perf's window holds the agent's: the agent's count is at most perf's
# (0.5% for the reads' timing), and at least perf's minus what the cgroup
# does in the rest of perf's window, under T - DUR: counted at twice perf's
# mean rate (the load is paced; its bursts) and never less than 5% (the
# bound before, when both were side by side for DUR).
lim=$(awk -v t="$T" -v d="$DUR" 'BEGIN { l = 200 * (t - d * 1000) / t; printf "%.1f", (l > 5 ? l : 5) }')
within() { # AGENT PERF
	awk -v a="$1" -v p="$2" -v l="$lim" 'BEGIN { exit !(a <= p * 1.005 && a >= p * (1 - l / 100)) }'
}
within "$At" "$Pt" || fails+=("task-clock: agent $At ms vs perf $Pt ms: $(pct_diff "$At" "$Pt")% (want 0 to -$lim%)")
within "$Ac" "$Pc" || fails+=("context-switches: agent $Ac vs perf $Pc: $(pct_diff "$Ac" "$Pc")% (want 0 to -$lim%)")

((${#fails[@]} == 0)) || { printf 'FAIL: %s\n' "${fails[@]}" >&2; exit 1; }
info "ok"
