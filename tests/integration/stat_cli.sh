#!/bin/bash
# cgperf-agent stat: bad input exits 2 with a useful message; a command runs in
# its own cgroup, whose tracepoint count is exact and which is removed after;
# events the host cannot count say so while the others still count.
# holds: paranoid
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads

# Unknown event: exit 2, near matches listed.
out=$("$AGENT" stat -e task-clok -G / --duration 1 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "unknown event: rc=$rc, want 2"
grep -q "unknown event 'task-clok'" <<<"$out" || fail "no 'unknown event' message: $out"
grep -qx '    task-clock' <<<"$out" || fail "task-clock not suggested: $out"
out=$("$AGENT" stat -e sched:sched_swich -G / --duration 1 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "unknown tracepoint: rc=$rc"
[[ $(grep -A1 'did you mean' <<<"$out" | tail -n1) == "    sched:sched_switch" ]] ||
	fail "sched:sched_switch not the first suggestion: $out"
out=$("$AGENT" stat -e context-switch -G / --duration 1 2>&1)
grep -qx '    context-switches' <<<"$out" || fail "context-switches not suggested: $out"

# Missing cgroup: exit 2 naming the path, before anything is opened.
out=$("$AGENT" stat -G /no/such/cgroup-$$ --duration 1 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "missing cgroup: rc=$rc, want 2"
grep -q "/no/such/cgroup-$$" <<<"$out" || fail "missing cgroup not named: $out"
grep -q "$(cg2_mount)/no/such" <<<"$out" || fail "full path not shown: $out"

# Bad options.
"$AGENT" stat -I 0 -G / >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "-I 0 accepted"
"$AGENT" stat --duration abc -G / >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "--duration abc accepted"
"$AGENT" stat -a -G / --duration 1 >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "-a with -G accepted"
"$AGENT" stat --for-each-cgroup '(' >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "bad regex accepted"
"$AGENT" stat --bogus >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "unknown option accepted"
"$AGENT" nosuchcmd >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "unknown subcommand accepted"

# No permission: an unprivileged user is told about perf_event_paranoid and
# the capability, and nothing is left behind.
if [[ $(cat /proc/sys/kernel/perf_event_paranoid) -ge 1 ]]; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$AGENT" stat -G / --duration 0.2 2>&1); rc=$?
	[[ $rc -eq 1 ]] || fail "unprivileged stat: rc=$rc, want 1: $out"
	grep -q 'perf_event_paranoid = ' <<<"$out" || fail "no perf_event_paranoid explanation: $out"
	grep -q 'CAP_PERFMON' <<<"$out" || fail "capability not named: $out"
else
	info "perf_event_paranoid < 1 here: an unprivileged user may count; permission check not exercised"
fi

# -- CMD: exact tracepoint count in the command's own cgroup, exit status passed on.
json=$("$AGENT" stat -e syscalls:sys_enter_write,task-clock --json -- "$W/writer" 12345) ||
	fail "stat -- writer failed"
info "$json"
n=$(python3 -c '
import json,sys
for l in sys.stdin:
    o=json.loads(l)
    if o["event"]=="syscalls:sys_enter_write": print(o["value"])' <<<"$json")
[[ $n == 12345 ]] || fail "sys_enter_write count $n, want exactly 12345"
cg=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["cgroup"])' <<<"$json")
[[ $cg == /cgperf-stat-* ]] || fail "command not in a transient cgroup: $cg"
[[ ! -d $(cg2_mount)$cg ]] || fail "transient cgroup $cg left behind"
"$AGENT" stat -e task-clock -- sh -c 'exit 7' >/dev/null 2>&1; rc=$?
[[ $rc -eq 7 ]] || fail "command exit status not passed on: $rc"
"$AGENT" stat -e task-clock -- /nonexistent/cmd >/dev/null 2>&1; rc=$?
[[ $rc -eq 127 ]] || fail "missing command: rc=$rc, want 127"

# Hardware events: counted where a PMU exists, "<not supported>" where not,
# and the software events beside them still count.
cg=$(cg_make hw)
# spinning until killed: however slowly stat starts, its window has the spin
"$W/spin" & sp=$!; bg_track $sp; cg_enter "$cg" $sp
rel=${cg#"$(cg2_mount)"}
u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
out=$("$AGENT" stat -G "$rel" -e task-clock,cycles,instructions --duration 1) || fail "stat with hw events failed"
u1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
kill $sp; wait $sp 2>/dev/null
info "$out"
tc=$(awk '$2 == "msec" && $3 == "task-clock" { gsub(",", "", $1); print $1 }' <<<"$out")
grep -qE 'msec task-clock +# +[0-9.]+ CPUs utilized' <<<"$out" || fail "no CPUs utilized figure: $out"
# The spinning cgroup's CPU time in the window: positive, and no more than the
# cgroup's own accounting over the (longer) bracket around the command.
# (Its accuracy against cpu.stat and perf is stat_accuracy's job.)
awk -v t="${tc:-0}" 'BEGIN { exit !(t > 20) }' || fail "task-clock ${tc:-?} ms for a spinning cgroup: $out"
if perf stat -e instructions true 2>&1 | grep -q 'not supported'; then
	grep -qE '<not supported> +cycles' <<<"$out" || fail "cycles not shown as not supported"
	grep -qE '<not supported> +instructions' <<<"$out" || fail "instructions not shown as not supported"
else
	grep -qE 'insn per cycle' <<<"$out" || fail "IPC missing on a host with a PMU"
fi
exit 0
