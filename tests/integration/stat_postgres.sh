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
export LC_ALL=C

DUR=5
command -v perf >/dev/null || skip "perf not installed"
command -v python3 >/dev/null || skip "python3 not installed"

cg=$(cg_make pg)
_CG_MADE+=("$cg") # cg_make ran in a $(...) subshell: register it here too
rel=${cg#"$(cg2_mount)"/}

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

# agent_field FILE CGROUP EVENT UNIT: validate the agent's JSON Lines and print
# "value pcnt_running" for that (cgroup, event).
agent_field() {
	python3 - "$@" <<'EOF'
import json, sys
path, cg, ev, unit = sys.argv[1:5]
found = []
for n, line in enumerate(open(path), 1):
    if not line.strip():
        continue
    try:
        o = json.loads(line)
    except ValueError as e:
        sys.exit(f"agent stdout line {n} is not JSON ({e}): {line.strip()!r}")
    if isinstance(o, dict) and str(o.get("cgroup", "")).lstrip("/") == cg.lstrip("/") and o.get("event") == ev:
        found.append(o)
if len(found) != 1:
    sys.exit(f"expected 1 JSON object for cgroup {cg} event {ev}, got {len(found)}")
o = found[0]
if o.get("supported") is not True or not isinstance(o.get("value"), (int, float)):
    sys.exit(f"event {ev} not counted: {o}")
if o.get("unit") != unit:
    sys.exit(f"unit {o.get('unit')!r} for {ev}, want {unit!r}")
print(o["value"], o.get("pcnt_running"))
EOF
}

# perf_value FILE CGROUP EVENT: value of EVENT for CGROUP from perf's -x, output
# (value,unit,event,cgroup,...); "<not counted>"/"<not supported>" fail.
perf_value() {
	python3 - "$@" <<'EOF'
import sys
path, cg, ev = sys.argv[1:4]
vals = []
for line in open(path):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    f = line.split(",")
    if len(f) < 4 or f[2].split(":")[0] != ev:
        continue
    if f[3].lstrip("/") != cg.lstrip("/"):
        continue
    if f[0].startswith("<"):
        sys.exit(f"perf: {ev} in {cg} is {f[0]}: {line}")
    vals.append(float(f[0]))
if len(vals) != 1:
    sys.exit(f"perf: expected 1 line for {ev} in {cg}, got {len(vals)}")
print(vals[0])
EOF
}

read_usage() {
	local k v
	while read -r k v; do
		[[ $k == usage_usec ]] && { printf -v "$1" %s "$v"; return 0; }
	done <"$cg/cpu.stat"
	printf -v "$1" %s 0
}

perf stat -a -e task-clock,context-switches -G "$rel,$rel" -x, -o "$TMP/perf.csv" \
	-- sleep "$DUR" 2>"$TMP/perf.err" &
perf_pid=$!
bg_track "$perf_pid"
t0=$EPOCHREALTIME
read_usage u0
timeout $((DUR + 30)) "$AGENT" stat -G "$rel" -e task-clock,context-switches --duration "$DUR" --json \
	>"$TMP/agent.json" 2>"$TMP/agent.err"
arc=$?
read_usage u1
t1=$EPOCHREALTIME
wait "$perf_pid"
prc=$?

if ((arc != 0)); then
	sed 's/^/    agent: /' "$TMP/agent.err" "$TMP/agent.json" | tail -n 20 >&2
	fail "agent exited with $arc"
fi
((prc == 0)) || { sed 's/^/    perf: /' "$TMP/perf.err" >&2; fail "perf stat exited with $prc"; }

wait "$PG_BENCH_PID"
brc=$?
tps=$(awk '/^tps/ { print $3; exit }' "$TMP/pgbench.log")
((brc == 0)) || { tail -n 20 "$TMP/pgbench.log" >&2; fail "pgbench exited with $brc"; }

read -r At Apt <<<"$(agent_field "$TMP/agent.json" "$rel" task-clock msec)" &&
	[[ -n ${At:-} ]] || { sed 's/^/    agent: /' "$TMP/agent.json" >&2; fail "bad agent output"; }
read -r Ac Apc <<<"$(agent_field "$TMP/agent.json" "$rel" context-switches "")" &&
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
