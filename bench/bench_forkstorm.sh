#!/bin/bash
# A fork storm at the default rate: tests/workloads/forkstorm (a sleeping
# parent forking 200 children a second, each burning ~3 ms of CPU, then
# exiting), started before the recording, sampled at -F 99 by
# `cgperf-agent record -G` and by `perf record -G` (+ `perf script`), one
# after the other over the same window length, with frame pointers and with
# DWARF. Prints, per tool and mode: the share of the children's samples
# whose leaf is named (not [unmapped] / [unknown]), and the tool's CPU time
# (user + system, from wait4's rusage; perf's includes `perf script`).
# Figures, not pass/fail; the machine is shared, so CPU figures are noisy.
#
#   BENCH_FORKSTORM_DUR=S   window of each run (default 10)
source "$(dirname "$0")/lib.sh" || exit 1
source "$BENCH_DIR/../tests/lib/forkstorm.sh" || exit 1
W=$BUILD_DIR/workloads
DUR=${BENCH_FORKSTORM_DUR:-10}
[[ -x $W/forkstorm ]] || skip "$W/forkstorm not built (make build-tests)"
HAVE_PERF=1
command -v perf >/dev/null || HAVE_PERF=0

cg_new storm

cpu_of() { awk '{ printf "%.3f", $1 + $2 }' "$1"; }

storm() { # a fresh parent, never sampled before
	(cg_enter "$cg" $BASHPID && exec "$W/forkstorm" $((DUR + 3))) &
	STORM=$!
	bg_track $STORM
	sleep 1
}

printf '%-6s %-6s %10s %8s %10s\n' tool mode named% samples cpu_s
for mode in fp dwarf; do
	if [[ $mode == fp ]]; then cgopt=-g; else cgopt="--call-graph dwarf"; fi
	storm
	cpu_run "$TMP/a.t" "$AGENT" record -G "$rel" -F 99 $cgopt --duration "$DUR" -o "$TMP/a.folded" 2>/dev/null
	wait $STORM 2>/dev/null
	read -r g t < <(storm_share "$TMP/a.folded")
	printf '%-6s %-6s %10s %8s %10s\n' agent $mode "$(awk -v g=$g -v t=$t 'BEGIN { printf "%.1f", t ? 100 * g / t : 0 }')" "$t" "$(cpu_of "$TMP/a.t")"
	((HAVE_PERF)) || continue
	storm
	cpu_run "$TMP/p.t" perf record -q -e cpu-clock -G "${rel#/}" -a -F 99 $cgopt -o "$TMP/perf.data" -- sleep "$DUR" >/dev/null 2>&1
	cpu_run "$TMP/ps.t" sh -c "timeout 60 perf script -i '$TMP/perf.data' -F comm,sym -G >'$TMP/perf.txt' 2>/dev/null"
	wait $STORM 2>/dev/null
	read -r g t < <(awk '$1 == "storm-child" { t++; if ($2 != "[unknown]") g++ } END { print g + 0, t + 0 }' "$TMP/perf.txt")
	printf '%-6s %-6s %10s %8s %10s\n' perf $mode "$(awk -v g=$g -v t=$t 'BEGIN { printf "%.1f", t ? 100 * g / t : 0 }')" "$t" \
		"$(awk -v a="$(cpu_of "$TMP/p.t")" -v b="$(cpu_of "$TMP/ps.t")" 'BEGIN { printf "%.3f", a + b }')"
done
exit 0
