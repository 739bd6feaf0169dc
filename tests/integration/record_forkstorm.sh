#!/bin/bash
# record: a fork storm at the default rate. A parent that sleeps and forks
# 200 children a second (each burns ~3 ms of CPU in storm_child ->
# storm_work -> storm_leaf, then exits) is almost never sampled itself, and
# it was started before the recording: its maps come from nowhere but the
# FORK records. At -F 99, by frame pointers and by DWARF, >= 93% of the
# children's samples must have a named leaf (not "[unmapped]+0x..."): ~100%
# on a quiet host; 96.6% seen on a fresh one running two other tests beside,
# where parent and child can both be gone before their files are opened
# ("refused ... vanished"); children not followed at all would be ~0%.
# perf record -G over the same window, for comparison (printed).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/forkstorm.sh"
W=$BUILD_DIR/workloads
DUR=${FORKSTORM_DUR:-5}
export LC_ALL=C

cg_new storm

# perf_share PERF.DATA: the same over perf's leaves ([unknown] = unnamed).
perf_share() {
	timeout 60 perf script -i "$1" -F comm,sym -G 2>/dev/null |
		awk '$1 == "storm-child" { t++; if ($2 != "[unknown]") g++ } END { print g + 0, t + 0 }'
}

run_mode() {
	local mode=$1 agent_cg=$2 perf_cg=$3 pid pp g t pg pt i u0 u1 want
	# A fresh parent each time: never sampled, its maps unknown to the agent.
	# (it outlives the recording however slowly that starts; killed after)
	(cg_enter "$cg" $BASHPID && exec "$W/forkstorm" $((DUR + $(scaled 60)))) &
	pid=$!
	bg_track $pid
	# until the parent is forkstorm and has forked (its children in the cgroup)
	for ((i = 0; i < $(scaled 100); i++)); do
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == forkstorm ]] &&
			(($(wc -l <"$cg/cgroup.procs") > 1)) && break
		sleep 0.1
	done
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == forkstorm ]] || fail "$mode: forkstorm did not start"
	pp=
	if command -v perf >/dev/null; then
		perf record -q -e cpu-clock -G "${rel#/}" -a -F 99 $perf_cg -o "$TMP/perf-$mode.data" -- sleep "$DUR" \
			>/dev/null 2>"$TMP/perf-$mode.err" &
		pp=$!
	fi
	u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
	"$AGENT" record -G "$rel" -F 99 $agent_cg --duration "$DUR" -o "$TMP/$mode.folded" -v \
		2>"$TMP/$mode.err" || fail "record $mode failed: $(cat "$TMP/$mode.err")"
	u1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
	want=$(((u1 - u0) * 99 / 1000000))
	[[ -z $pp ]] || wait $pp 2>/dev/null
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	cat "$TMP/$mode.err"
	read -r g t < <(storm_share "$TMP/$mode.folded")
	pg=- pt=-
	if [[ -s $TMP/perf-$mode.data ]]; then
		read -r pg pt < <(perf_share "$TMP/perf-$mode.data")
	fi
	info "$mode: agent names $g of $t child samples (CPU time worth $want) ($(awk -v g=$g -v t=$t 'BEGIN { printf "%.1f%%", t ? 100 * g / t : 0 }')), perf $pg of $pt ($(awk -v g=$pg -v t=$pt 'BEGIN { printf "%.1f%%", (t > 0) ? 100 * g / t : 0 }'))"
	# Enough samples to judge a share: ~300 on a quiet host, 74 seen on a busy
	# one that left the storm little CPU; so 50, and a third of what the
	# cgroup's CPU time is worth (the children's own samples are ~60% of it,
	# as perf's are: the rest is the forks and exits).
	# perf, sampling the same cgroup in the same window, is the better
	# reference: a loaded host (or a sanitized agent beside it) makes the
	# kernel's cgroup sampling itself miss short-lived children, as it
	# misses them for perf (measured: 97 for the agent, 102 for perf, where
	# the CPU time was worth 305). Within 3 Poisson deviations of 80% of
	# perf's count, then.
	((t >= 50)) || fail "$mode: only $t samples of the children, their CPU time is worth $want"
	if [[ $pt != - ]] && ((pt >= 50)); then
		awk -v t=$t -v p=$pt 'BEGIN { exit !(t + 3 * sqrt(p) >= 0.8 * p) }' ||
			fail "$mode: $t samples of the children, perf has $pt in the same window"
	else
		((t * 3 >= want)) || fail "$mode: only $t samples of the children, their CPU time is worth $want"
	fi
	((g * 100 >= t * 93)) || {
		grep -E '^(storm-child|forkstorm);' "$TMP/$mode.folded" | grep -E '\[unmapped\]|\+0x[0-9a-f]+ [0-9]+$' | head -5
		fail "$mode: $g of $t child samples named (< 93%)"
	}
}

run_mode fp -g -g
run_mode dwarf "--call-graph dwarf" "--call-graph dwarf"
# Frame pointers: the chain of a child is whole, down to main.
grep -q '^storm-child;.*main;storm_child;storm_work;storm_leaf' "$TMP/fp.folded" ||
	fail "fp: no child stack main;storm_child;storm_work;storm_leaf"
grep -q '^storm-child;.*main;storm_child;storm_work;storm_leaf' "$TMP/dwarf.folded" ||
	fail "dwarf: no child stack main;storm_child;storm_work;storm_leaf"
exit 0
