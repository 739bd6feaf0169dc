#!/bin/bash
# Run every test: C unit tests (cmocka) from $BUILD/tests, then the
# integration scripts tests/integration/*.sh. A script exits 0 (pass),
# 77 (skip, with its reason on the last line of output) or anything else (fail).
# A unit binary whose cmocka cases skip()ped says so: SKIP when every case
# skipped, PASS with the skipped cases named otherwise, and the total counts them.
# Prints one line per test as it ends, a total and the slowest ten; exits
# non-zero if anything failed.
#
#   tests/run.sh [-j N] [--repeat N] [--load] [--timeout S] [PATTERN...]
#     PATTERN     only tests whose name ("unit/test_x", "integration/y")
#                 contains one of the PATTERNs
#     -j N        run N tests at once (default $CGPERF_TEST_JOBS, else 3).
#                 A script declares what it holds on a line of its header,
#                 "# holds: NAME...": two tests that hold a NAME never run
#                 at once; "exclusive" runs alone. Unit tests hold nothing.
#     --repeat N  run each test N times (never two runs of one test at once)
#     --load      keep every CPU busy (one spinning process per CPU) while the
#                 tests run: a busier machine than CI's
#     --timeout S a test still running after S seconds (times the sanitizer
#                 scale) is killed and fails (default 900)
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
export CGPERF_AGENT=${CGPERF_AGENT:-$PWD/$BUILD/cgperf-agent}
export CGPERF_ROOT=$PWD

usage() { sed -n '10,21s/^# \{0,1\}//p' "$0" >&2; exit 2; }
jobs=${CGPERF_TEST_JOBS:-3} repeat=1 load=0 timeout=900 pats=()
while (($#)); do
	case $1 in
	-j) jobs=${2:-}; shift ;;
	-j*) jobs=${1#-j} ;;
	--repeat) repeat=${2:-}; shift ;;
	--load) load=1 ;;
	--timeout) timeout=${2:-}; shift ;;
	-h | --help) usage ;;
	-*) echo "run.sh: unknown option $1" >&2; usage ;;
	*) pats+=("$1") ;;
	esac
	shift
done
for v in "$jobs" "$repeat" "$timeout"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: '$v': want a whole number >= 1" >&2; usage; }
done
# Sanitized binaries run several times slower (tests/lib/common.sh's TIME_SCALE).
if [[ -n ${CGPERF_TIME_SCALE:-} ]]; then
	timeout=$((timeout * CGPERF_TIME_SCALE))
elif grep -q '__asan_init' "$CGPERF_AGENT" 2>/dev/null; then
	timeout=$((timeout * 3))
fi

logdir=$(mktemp -d /tmp/cgperf-test-logs.XXXXXX)
# Where a test may leave files beside its log (screenshots): ui_page.sh.
export CGPERF_TEST_LOGDIR=$logdir
# What tests make once per run: tests/lib/pg.sh's clusters (copied by
# each test), tests/lib/clickhouse.sh's shared servers (stopped here).
CGPERF_TEST_SHARED=$(mktemp -d /tmp/cgperf-shared.XXXXXX)
export CGPERF_TEST_SHARED
pass=0 fail=0 skip=0 cases_skipped=0 failed=() times=()
t0=$(date +%s)

selected() {
	local p
	((${#pats[@]} == 0)) && return 0
	for p in "${pats[@]}"; do [[ $1 == *"$p"* ]] && return 0; done
	return 1
}

# The queue: names in the order they start; what each runs and holds.
declare -A CMD=() HOLDS=()
queue=()
add() { # NAME HOLDS CMD...
	local name=$1 holds=$2 k
	shift 2
	selected "$name" || return 0
	for ((k = 1; k <= repeat; k++)); do
		local id=$name
		((repeat > 1)) && id="$name#$k"
		CMD[$id]=$(printf '%q ' "$@")
		HOLDS[$id]="test:$name $holds"
		queue+=("$id")
	done
}
# Longest first (the last run's times, kept in $BUILD/tests/.times; on a
# first run, tests/durations: times of one run on a 2-core machine), so the
# long tests do not end the run alone; exclusive tests first of all.
declare -A LAST=()
for f in tests/durations "$BUILD/tests/.times"; do
	[[ -r $f ]] && while read -r n s; do [[ $n == \#* ]] || LAST[$n]=$s; done <"$f"
done
for t in "$BUILD"/tests/test_*; do
	[[ -x $t ]] && add "unit/$(basename "$t")" "" "$t"
done
for t in tests/integration/*.sh; do
	[[ -f $t ]] || continue
	h=$(sed -n '1,40{s/^# holds: \([a-z0-9 _-]*\)$/\1/p}' "$t" | head -1)
	add "integration/$(basename "$t" .sh)" "$h" bash "$t"
done
mapfile -t queue < <(for id in "${queue[@]}"; do
	n=${id%#*} x=1
	[[ " ${HOLDS[$id]} " == *" exclusive "* ]] && x=0
	printf '%d %s %s\n' "$x" "$(printf '%09.1f' "${LAST[$n]:-0}")" "$id"
done | sort -k1,1n -k2,2r -k3,3 | cut -d' ' -f3)

# --load: a spinning process per CPU for the whole run.
hogs=()
stop_all() {
	local p
	for p in "${hogs[@]}" "${!RUNNING[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
	# The shared ClickHouse servers (tests/lib/clickhouse.sh's ch_shared).
	for p in "$CGPERF_TEST_SHARED"/ch-*/pid; do
		[[ -s $p ]] || continue
		p=$(cat "$p")
		kill -KILL "$p" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
	done
	rm -rf "$CGPERF_TEST_SHARED"
}
declare -A RUNNING=() START=() BUSY=()
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM
if ((load)); then
	for ((i = 0; i < $(nproc); i++)); do
		setsid bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	echo "# --load: ${#hogs[@]} spinning processes (one per CPU)"
fi

report() { # ID RC SECONDS
	local id=$1 rc=$2 dt=$3 name=${1%#*}
	local log=$logdir/${id//[\/#]/_}.log skipped=""
	times+=("$dt $id")
	# cmocka reports a skip() as "[  SKIPPED ] case" and still exits 0.
	((rc == 0)) && skipped=$(sed -n 's/^\[  SKIPPED \] \(test_[A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u | tr '\n' ' ')
	if ((rc == 0)) && [[ -n $skipped ]]; then
		local ncases
		ncases=$(wc -w <<<"$skipped")
		cases_skipped=$((cases_skipped + ncases))
		if grep -q '^\[  PASSED  \] [1-9]' "$log"; then
			pass=$((pass + 1))
			printf 'PASS  %-44s %6ss  (%d case(s) skipped: %s)\n' "$id" "$dt" "$ncases" "${skipped% }"
		else
			skip=$((skip + 1))
			printf 'SKIP  %-44s %6ss  all cases skipped: %s\n' "$id" "$dt" "${skipped% }"
		fi
	elif ((rc == 0)); then
		pass=$((pass + 1))
		printf 'PASS  %-44s %6ss\n' "$id" "$dt"
	elif ((rc == 77)); then
		skip=$((skip + 1))
		printf 'SKIP  %-44s %6ss  %s\n' "$id" "$dt" "$(tail -n1 "$log")"
	else
		fail=$((fail + 1))
		failed+=("$id")
		local why="rc=$rc"
		((rc == 124 || rc == 137)) && why="killed after ${timeout}s"
		printf 'FAIL  %-44s %6ss  (%s)\n' "$id" "$dt" "$why"
		sed 's/^/      | /' "$log" | tail -n 40
	fi
}

can_start() { # ID: nothing it holds is held; exclusive runs alone
	local r
	((${#RUNNING[@]} >= jobs)) && return 1
	((${BUSY[exclusive]:-0})) && return 1
	for r in ${HOLDS[$1]}; do
		[[ $r == exclusive ]] && { ((${#RUNNING[@]} == 0)) || return 1; continue; }
		((${BUSY[$r]:-0})) && return 1
	done
	return 0
}
start() { # ID
	local id=$1 r log=$logdir/${1//[\/#]/_}.log
	for r in ${HOLDS[$id]}; do BUSY[$r]=1; done
	# In its own session: a timeout or ^C stops the test and what it started.
	eval "setsid timeout -k 10 $timeout ${CMD[$id]}" >"$log" 2>&1 </dev/null &
	RUNNING[$!]=$id
	START[$!]=$(date +%s.%N)
}
finish() { # PID RC
	local id=${RUNNING[$1]} r dt
	dt=$(awk -v a="${START[$1]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	unset "RUNNING[$1]" "START[$1]"
	for r in ${HOLDS[$id]}; do unset "BUSY[$r]"; done
	report "$id" "$2" "$dt"
}

while ((${#queue[@]} || ${#RUNNING[@]})); do
	rest=()
	for id in "${queue[@]}"; do
		if can_start "$id"; then start "$id"; else rest+=("$id"); fi
	done
	queue=("${rest[@]}")
	((${#RUNNING[@]})) || { echo "run.sh: nothing can start: ${queue[*]}" >&2; exit 2; }
	wait -n -p done_pid "${!RUNNING[@]}"
	rc=$?
	[[ -n ${done_pid:-} && -v RUNNING[$done_pid] ]] && finish "$done_pid" "$rc"
done

# Keep this run's times for the next run's order.
{
	for n in "${!LAST[@]}"; do echo "$n ${LAST[$n]}"; done
	for x in "${times[@]}"; do set -- $x; echo "${2%#*} $1"; done
} | awk '{ t[$1] = $2 } END { for (n in t) print n, t[n] }' | sort >"$BUILD/tests/.times.new" 2>/dev/null &&
	mv "$BUILD/tests/.times.new" "$BUILD/tests/.times"

total=$((pass + fail + skip))
echo "----"
if ((${#times[@]})); then
	echo "slowest:"
	printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %7.1fs  %s\n", $1, $2 }'
fi
echo "TOTAL $total: $pass passed, $fail failed, $skip skipped ($cases_skipped unit case(s) skipped) in $(($(date +%s) - t0))s, -j $jobs$( ((load)) && echo ", under load") (logs: $logdir)"
((fail == 0)) || { echo "FAILED: ${failed[*]}"; exit 1; }
