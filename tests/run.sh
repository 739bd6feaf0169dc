#!/bin/bash
# Run every test: C unit tests (cmocka) from $BUILD/tests, then the
# integration scripts tests/integration/*.sh. A script exits 0 (pass),
# 77 (skip, with its reason on the last line of output) or anything else (fail).
# A unit binary whose cmocka cases skip()ped says so: SKIP when every case
# skipped, PASS with the skipped cases named otherwise, and the total counts them.
# Prints one line per test and a total; exits non-zero if anything failed.
#
#   tests/run.sh [PATTERN]     only tests whose name contains PATTERN
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
export CGPERF_AGENT=${CGPERF_AGENT:-$PWD/$BUILD/cgperf-agent}
export CGPERF_ROOT=$PWD
pat=${1:-}
logdir=$(mktemp -d /tmp/cgperf-test-logs.XXXXXX)
pass=0 fail=0 skip=0 cases_skipped=0 failed=()
t0=$(date +%s)

run_one() {
	local name=$1; shift
	[[ -n $pat && $name != *"$pat"* ]] && return
	local log=$logdir/${name//\//_}.log s=$(date +%s.%N) rc
	"$@" >"$log" 2>&1
	rc=$?
	local dt=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	# cmocka reports a skip() as "[  SKIPPED ] case" and still exits 0.
	local skipped=""
	((rc == 0)) && skipped=$(sed -n 's/^\[  SKIPPED \] \(test_[A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u | tr '\n' ' ')
	if ((rc == 0)) && [[ -n $skipped ]]; then
		local ncases=$(wc -w <<<"$skipped")
		cases_skipped=$((cases_skipped + ncases))
		if grep -q '^\[  PASSED  \] [1-9]' "$log"; then
			pass=$((pass + 1))
			printf 'PASS  %-44s %6ss  (%d case(s) skipped: %s)\n' "$name" "$dt" "$ncases" "${skipped% }"
		else
			skip=$((skip + 1)); printf 'SKIP  %-44s %6ss  all cases skipped: %s\n' "$name" "$dt" "${skipped% }"
		fi
	elif ((rc == 0)); then
		pass=$((pass + 1)); printf 'PASS  %-44s %6ss\n' "$name" "$dt"
	elif ((rc == 77)); then
		skip=$((skip + 1)); printf 'SKIP  %-44s %6ss  %s\n' "$name" "$dt" "$(tail -n1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL  %-44s %6ss  (rc=%d)\n' "$name" "$dt" "$rc"
		sed 's/^/      | /' "$log" | tail -n 40
	fi
}

for t in "$BUILD"/tests/test_*; do
	[[ -x $t ]] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in tests/integration/*.sh; do
	[[ -f $t ]] || continue
	run_one "integration/$(basename "$t" .sh)" bash "$t"
done

total=$((pass + fail + skip))
echo "----"
echo "TOTAL $total: $pass passed, $fail failed, $skip skipped ($cases_skipped unit case(s) skipped) in $(($(date +%s) - t0))s (logs: $logdir)"
((fail == 0)) || { echo "FAILED: ${failed[*]}"; exit 1; }
