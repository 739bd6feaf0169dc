#!/bin/bash
# trace --latency's cost per hit for several agents in one session, taking
# turns (the order reversed every round) so that the host's drift hits all
# of them alike: bench_trace.sh's --latency micro part and its PostgreSQL
# part, for a build against an older one (issue 11: no figure worse than
# base). Figures, not pass/fail: medians and ranges per agent.
#
#   bench/bench_trace_ab.sh [AGENT...]  e.g. OLD/build/cgperf-agent build/cgperf-agent
#                                       (none: this build's agent alone)
#
# Micro: tool CPU per hit of `trace --latency u:callloop:callloop_fn` (entry
# and return, 2 hits a call), net of the same command with 0 calls and of
# callloop's own CPU. PostgreSQL: the agent's CPU per query under pgbench -S
# with `trace -G CG -e query__start --latency query__start,query__done`, net
# of its fixed cost (the same command on the idle cluster for 1 s).
#
#   BENCH_AB_CALLS=N    callloop calls (default 100000; at 30000 a run's
#                       one-time costs weigh on the figure)
#   BENCH_AB_REPS=N     rounds (default 7)
#   BENCH_AB_PG_DUR=S   each pgbench run (default 3)
source "$(dirname "$0")/lib.sh" || exit 1
source "$BENCH_DIR/../tests/lib/pg.sh" || exit 1

CALLS=${BENCH_AB_CALLS:-100000}
REPS=${BENCH_AB_REPS:-7}
PG_DUR=${BENCH_AB_PG_DUR:-3}
LOOP=$BUILD_DIR/workloads/callloop
(($#)) || set -- "$AGENT" # alone: its own figures
for a in "$@"; do
	[[ -x $a ]] || skip "$a: not an executable"
done
[[ -x $LOOP ]] || skip "workloads not built (make build-tests)"
trap '_pg_cleanup; _cleanup' EXIT
a=("$@")
ROWS=$TMP/rows # part agent-index value
: >"$ROWS"

# turns REP: the agents' indexes in this round's order
turns() {
	local i
	if ((REP % 2)); then for ((i = 0; i < $#; i++)); do echo "$i"; done
	else for ((i = $# - 1; i >= 0; i--)); do echo "$i"; done; fi
}
# own AGENT N: the agent's CPU minus callloop's, seconds, for N calls
own() {
	cpu_run "$TMP/t" "$1" trace --latency "u:$LOOP:callloop_fn" -- "$LOOP" "$2" -t >/dev/null 2>"$TMP/e" || return 1
	awk -v c="$(sed -n 's/^callloop .* cpu_s \([0-9.]*\)$/\1/p' "$TMP/e")" '{ printf "%.6f", $1 + $2 - c }' "$TMP/t"
}

load0=$(cut -d' ' -f1 /proc/loadavg)
for REP in $(seq 1 "$REPS"); do
	for i in $(turns "$@"); do
		if ! z=$(own "${a[i]}" 0) || ! f=$(own "${a[i]}" "$CALLS"); then
			echo "   micro: ${a[i]} failed: $(tail -n 2 "$TMP/e")"
			continue
		fi
		echo "micro $i $(awk -v z="$z" -v f="$f" -v n="$CALLS" 'BEGIN { printf "%.4f", (f - z) * 1e6 / (2 * n) }')" >>"$ROWS"
	done
done
echo "# micro: load average $load0 before, $(cut -d' ' -f1 /proc/loadavg) after"

if _pg_have; then
	cg=$(cg_make pgab)
	_CG_MADE+=("$cg")
	rel=${cg#"$(cg2_mount)"}
	pg_start "$cg"
	pg_bench_init 1
	S="sdt:postgresql:query__start@$PG_BIN/postgres"
	D="sdt:postgresql:query__done@$PG_BIN/postgres"
	fix=()
	for i in "${!a[@]}"; do
		bench_agent_start "$TMP/fix" "${a[i]}" trace -G "$rel" -e "$S" --latency "$S,$D" --duration 1
		wait "$AWPID"
		fix[i]=$(cpu_of "$TMP/fix.t")
	done
	pg_bench_run -n -S -M simple -c 4 -j 2 -T 1 >/dev/null 2>&1 # warm up the caches
	load0=$(cut -d' ' -f1 /proc/loadavg)
	for REP in $(seq 1 "$REPS"); do
		for i in $(turns "$@"); do
			if ! bench_agent_start "$TMP/a" "${a[i]}" trace -G "$rel" -e "$S" --latency "$S,$D" \
				--duration $((PG_DUR + 60)); then
				echo "   pg: ${a[i]} did not start: $(head -n 2 "$TMP/a.err")"
				continue
			fi
			pg_bench_run -n -S -M simple -c 4 -j 2 -T "$PG_DUR" >"$TMP/pgb" 2>&1
			kill -INT "$APID" 2>/dev/null
			wait "$AWPID"
			tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$TMP/pgb")
			[[ -n $tx ]] || { echo "   pgbench: no figures: $(tail -n 2 "$TMP/pgb")"; continue; }
			echo "pg $i $(awk -v c="$(cpu_of "$TMP/a.t")" -v f="${fix[i]}" -v tx="$tx" \
				'BEGIN { printf "%.4f", (c - f) * 1e6 / tx }')" >>"$ROWS"
		done
	done
	echo "# PostgreSQL: load average $load0 before, $(cut -d' ' -f1 /proc/loadavg) after"
else
	echo "   PostgreSQL binaries or user missing: PostgreSQL part skipped"
fi

python3 - "$ROWS" "$@" <<'EOF'
import sys, statistics as st
agents = sys.argv[2:]
by = {}
for line in open(sys.argv[1]):
    part, i, v = line.split()
    by.setdefault((part, int(i)), []).append(float(v))
what = {"micro": "micro: tool CPU us per hit", "pg": "PostgreSQL: agent CPU us per query"}
for part in ("micro", "pg"):
    print(what[part])
    for i, a in enumerate(agents):
        v = by.get((part, i))
        if v:
            print(f"  {st.median(v):8.4f}  {min(v):.4f}..{max(v):.4f}  n={len(v)}  {a}")
EOF
