#!/bin/bash
# record --off-cpu: time off the CPU by the stack at which threads blocked,
# per cgroup. A workload in a cgroup alternates 1 ms of work with 20 ms
# nanosleeps in nap(): the microseconds folded under nap() match the time
# its naps took (within 10%); --off-cpu-min-us above the nap drops them; a
# thread still asleep when the recording ends is counted up to the end.
# 4. run, selecting a cgroup that appears after it started: its events are
# opened then (per followed cgroup, not host-wide), and its naps reach the
# exporter as off-cpu time; a napper in a cgroup not selected does not.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
W=$BUILD_DIR/workloads
cg_new nap

# 1. naps in a cgroup, recorded with -G over the workload's whole life: the
# workload is record's command (started once the events are open; the
# recording ends with it), moved into the cgroup before its exec. Its binary
# is read first: a cold exec would block in sh, inside the cgroup.
cat "$W/napper" >/dev/null
"$AGENT" record --off-cpu --call-graph dwarf -G "$rel" -o "$TMP/nap.folded" -v -- \
	sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$cg" "$W/napper" 2.5 20 1 \
	>"$TMP/napper.out" 2>"$TMP/err" || fail "record --off-cpu failed: $(cat "$TMP/err")"
cat "$TMP/err"
read -r _ naps _ nap_ms _ slept_ns <"$TMP/napper.out"
grep ';nap;' "$TMP/nap.folded" | head -3
under=$(awk '/;main;nap;/ { s += $NF } END { print s + 0 }' "$TMP/nap.folded")
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/nap.folded")
# The naps' own time, as the workload measured it around nanosleep(): a
# little over naps x 20 ms (the timer's slack, and the wait for a CPU once
# woken, which grows when the host is busy: both are off-CPU time too).
nominal=$((naps * nap_ms * 1000)) slept=$((${slept_ns%.*} / 1000))
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (a - b) * 100 / b }'; }
info "naps $naps x ${nap_ms} ms = $nominal us; the workload measured $slept us ($(pct "$slept" "$nominal"));" \
	"off-CPU under nap(): $under us ($(pct "$under" "$slept") of measured, $(pct "$under" "$nominal") of nominal)," \
	"all stacks $total us"
((naps >= 50)) || fail "only $naps naps"
near "$under" "$slept" 10 || fail "off-CPU under nap() $under us is not within 10% of the $slept us napped"
((under * 10 >= nominal * 9)) || fail "off-CPU under nap() $under us is under 90% of naps x 20 ms"
grep -q 'do_nanosleep_\[k\]' "$TMP/nap.folded" || fail "no kernel frames in the off-CPU stacks"
grep -q "off-CPU: [0-9]* waits" "$TMP/err" || fail "no off-CPU summary"
# The cgroup's own threads only: nothing from the agent or other processes.
awk -F';' '$1 != "napper" { bad = 1 } END { exit bad }' "$TMP/nap.folded" ||
	fail "stacks of other processes: $(awk -F';' '$1 != "napper"' "$TMP/nap.folded" | head -3)"

# 2. A threshold above the nap drops the naps.
"$AGENT" record --off-cpu -g --off-cpu-min-us 100000 -o "$TMP/min.folded" -- "$W/napper" 1 20 1 \
	>/dev/null 2>"$TMP/err" || fail "record --off-cpu-min-us failed: $(cat "$TMP/err")"
cat "$TMP/err"
long=$(awk '/nanosleep/ { s += $NF } END { print s + 0 }' "$TMP/min.folded")
info "with --off-cpu-min-us 100000: $long us in nanosleep"
((long == 0)) || fail "waits under the threshold were counted: $long us"
grep -q "under the threshold" "$TMP/err" || fail "no threshold count"

# 3. A nap that outlasts the recording counts up to its end (a wait that
# began before the recording is not seen: the sleeper starts after it).
# record's command starts the sleeper in the cgroup (its PID to a file) and
# returns 1.5 s later, which ends the recording.
cat >"$TMP/sleeper.sh" <<'SH'
sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" && exec "$3" 0.001 6000 0 >/dev/null' sh "$@" &
sleep 1.5
SH
"$AGENT" record --off-cpu --call-graph dwarf -G "$rel" -o "$TMP/end.folded" -- \
	sh "$TMP/sleeper.sh" "$cg" "$TMP/sleeper.pid" "$W/napper" 2>"$TMP/err" ||
	fail "record failed: $(cat "$TMP/err")"
[[ -s $TMP/sleeper.pid ]] && kill "$(cat "$TMP/sleeper.pid")"
len=$(sed -n 's/.* samples in \([0-9.]*\) s,.*/\1/p' "$TMP/err")
[[ -n $len ]] || fail "no recording length on stderr: $(cat "$TMP/err")"
asleep=$(awk '/;nap;/ { s += $NF } END { print s + 0 }' "$TMP/end.folded")
info "asleep from just after the start of a $len s recording to its end: $asleep us under nap()"
grep -q "1 still asleep at the end" "$TMP/err" || fail "the sleeper is not reported asleep: $(cat "$TMP/err")"
# 1.5 s less the sleeper's fork and exec (well under 0.6 s), and never more
# than the recording (its length has two decimals)
((asleep >= 900000)) && awk -v a="$asleep" -v l="$len" 'BEGIN { exit !(a <= l * 1e6 + 10000) }' ||
	fail "sleeper counted $asleep us, want about 1.5 s and at most the recording's $len s"

# 4. run: a cgroup followed once it appears.
exporter_up
cat >"$TMP/agent.yaml" <<YAML
host: {name: offcpu-late, agent_id_file: $TMP/agent-id}
cgroups: {include: ["/cgperf-test-$$-late*"]}
counters: {enabled: false}
sampling: {enabled: false, call_graph: dwarf, off_cpu: true}
push: {interval: 1s, collectors: ["$ex/api/v1/push"], spool: {dir: $TMP/spool}}
YAML
# No --duration: the agent runs until the naps are done (SIGTERM: its last
# batch carries the last of them).
agent_run "$TMP/run.log" --config "$TMP/agent.yaml"
agent_started "$TMP/run.log"
perf_fds() { ls -l "/proc/$ag/fd" 2>/dev/null | grep -c 'perf_event'; }
fds=$(perf_fds)
late=$(cg_make late)
other=$(cg_make other)
# followed once the agent has opened off-CPU events on it
for ((i = 0; i < $(scaled 10) * 100; i++)); do
	(($(perf_fds) > fds)) && break
	sleep 0.01
done
(($(perf_fds) > fds)) || fail "no events opened on the late cgroup in $(scaled 10)s: $(perf_fds) perf fds, $fds before"
cg_spawn "$other" "$W/napper" 1.5 20 1 >/dev/null
cg_spawn "$late" "$W/napper" 1.5 20 1 >"$TMP/late.out"
wait $SPAWNED || fail "napper failed"
kill -TERM $ag
wait $ag || fail "run failed: $(tail -5 "$TMP/run.log")"
grep -q 'events opened.*per followed cgroup' "$TMP/run.log" ||
	fail "off-CPU events not per cgroup: $(grep off_cpu "$TMP/run.log")"
read -r _ naps _ _ _ slept_ns <"$TMP/late.out"
slept=$((${slept_ns%.*} / 1000))
# every batch was acked (stored) before the agent exited; polled all the same
for ((i = 0; i < $(scaled 5) * 5; i++)); do
	curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=/cgperf-test-$$-late" >"$TMP/late.folded" &&
		under=$(awk '/;nap;/ { s += $NF } END { print s + 0 }' "$TMP/late.folded") &&
		near "$under" "$slept" 10 && break
	sleep 0.2
done
curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=/cgperf-test-$$-late" >"$TMP/late.folded" ||
	fail "no off-cpu stacks for the late cgroup"
curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=/cgperf-test-$$-other" >"$TMP/other.folded" || true
under=$(awk '/;nap;/ { s += $NF } END { print s + 0 }' "$TMP/late.folded")
info "run, cgroup made after the start: $naps naps, $slept us napped, $under us under nap() at the exporter"
near "$under" "$slept" 10 || fail "late cgroup: $under us under nap(), napped $slept us"
! grep -q ';nap;' "$TMP/other.folded" || fail "a cgroup not selected has off-CPU stacks"
exit 0
