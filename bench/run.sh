#!/bin/bash
# Benchmarks: printed figures, not pass/fail. Timings are noisy on a shared
# VM, so every figure that matters is a ratio measured in the same run.
#
#   bench/run.sh [PATTERN]    only benchmarks whose name contains PATTERN
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
for b in bench/bench_*.sh; do
	[[ -n ${1:-} && $(basename "$b" .sh) != *"$1"* ]] && continue
	echo "== $(basename "$b" .sh)"
	bash "$b" || echo "   (benchmark $b failed: rc=$?)"
done
