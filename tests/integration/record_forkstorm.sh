#!/bin/bash
# record: a fork storm at the default rate. A parent that sleeps and forks
# 200 children a second (each burns ~3 ms of CPU in storm_child ->
# storm_work -> storm_leaf, then exits) is almost never sampled itself, and
# it was started before the recording: its maps come from nowhere but the
# FORK records. At -F 99, by frame pointers and by DWARF, >= 97% of the
# children's samples must have a named leaf (not "[unmapped]+0x...").
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
	local mode=$1 agent_cg=$2 perf_cg=$3 pid g t pg pt
	# A fresh parent each time: never sampled, its maps unknown to the agent.
	(cg_enter "$cg" $BASHPID && exec "$W/forkstorm" $((DUR + 3))) &
	pid=$!
	bg_track $pid
	sleep 1
	if command -v perf >/dev/null; then
		perf record -q -e cpu-clock -G "${rel#/}" -a -F 99 $perf_cg -o "$TMP/perf-$mode.data" -- sleep "$DUR" \
			>/dev/null 2>"$TMP/perf-$mode.err" &
	fi
	"$AGENT" record -G "$rel" -F 99 $agent_cg --duration "$DUR" -o "$TMP/$mode.folded" -v \
		2>"$TMP/$mode.err" || fail "record $mode failed: $(cat "$TMP/$mode.err")"
	wait %% 2>/dev/null
	cat "$TMP/$mode.err"
	read -r g t < <(storm_share "$TMP/$mode.folded")
	pg=- pt=-
	if [[ -s $TMP/perf-$mode.data ]]; then
		read -r pg pt < <(perf_share "$TMP/perf-$mode.data")
	fi
	info "$mode: agent names $g of $t child samples ($(awk -v g=$g -v t=$t 'BEGIN { printf "%.1f%%", t ? 100 * g / t : 0 }')), perf $pg of $pt ($(awk -v g=$pg -v t=$pt 'BEGIN { printf "%.1f%%", (t > 0) ? 100 * g / t : 0 }'))"
	wait $pid 2>/dev/null
	((t >= 100)) || fail "$mode: only $t samples of the children"
	((g * 100 >= t * 97)) || {
		grep -E '^(storm-child|forkstorm);' "$TMP/$mode.folded" | grep -E '\[unmapped\]|\+0x[0-9a-f]+ [0-9]+$' | head -5
		fail "$mode: $g of $t child samples named (< 97%)"
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
