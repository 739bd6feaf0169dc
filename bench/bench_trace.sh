#!/bin/bash
# Cost of `cgperf-agent trace` per probe hit, measured against the same
# workload without probes in the same run, next to perf where it is fair.
# Figures, not pass/fail; every figure is a median over repetitions, each
# of which runs with and without probes back to back (the order alternating
# for PostgreSQL), so drift hits both sides. The share of the CPUs that
# other processes used meanwhile is printed with each part: on a loaded
# host the wall times and the tps are the first figures to go.
#
#  1. uprobe, micro: build/workloads/callloop N calls an exported noinline
#     function N times and reports the loop's own wall and CPU time
#     (clock_gettime, user + system, so the kernel's uprobe work counts).
#     Plain count, an argument histogram (x=%di --hist x) and %return
#     latency (entry + return: 2 hits per call), against the same N calls
#     without probes. callloop_fn starts with a mov, which the kernel
#     single-steps out of line after the breakpoint (a second trap); so a
#     plain count on callloop_nop as well (callloop -n), whose first
#     instruction is a nop that the kernel emulates, like a USDT site.
#  2. tracepoint: syscalls:sys_enter_write on build/workloads/writer N (its
#     wall and CPU from wait4 in a small wrapper).
#  3. PostgreSQL in its own cgroup under pgbench -S for a fixed time, with
#     and without `trace -G CG -e sdt:postgresql:query__start --latency
#     query__start,query__done`: tps ratio, the cgroup's CPU per query
#     (cpu.stat) and the cost per query derived from the tps.
#  4. perf in the same runs: `perf probe -x callloop` (tracefs uprobes in a
#     group of our own, deleted at exit) + `perf record -e` + `perf script`
#     (the same records turned to text; perf keeps no histogram or latency
#     in-line), and `perf stat -e` (count only: the kernel's floor).
#
# Per hit: "workload" = (with probes - without) / hits, wall and CPU of the
# traced program itself; "tool" = CPU of the tracer's own process per hit,
# net of its fixed cost (the same command with 0 iterations) and of the
# workload's CPU (which wait4 counts in the tracer, its parent); for perf
# record it includes `perf script`. "total" = workload CPU + tool CPU.
#
#   BENCH_TRACE_CALLS=N   callloop calls (default 30000; a single-stepped
#                         uprobe hit costs ~15 us on this 2-vCPU VM, so
#                         2,000,000 would take 30 s a run)
#   BENCH_TRACE_NOPCALLS=N  callloop -n calls (default 200000)
#   BENCH_TRACE_WRITES=N  writer's write(2) calls (default 300000)
#   BENCH_TRACE_REPS=N    repetitions (default 3)
#   BENCH_TRACE_PG_DUR=S  each pgbench run (default 3)
#   BENCH_TRACE_PG_REPS=N pgbench pairs, with and without (default 5)
source "$(dirname "$0")/lib.sh" || exit 1
source "$BENCH_DIR/../tests/lib/pg.sh" || exit 1

CALLS=${BENCH_TRACE_CALLS:-30000}
NOPCALLS=${BENCH_TRACE_NOPCALLS:-200000}
WRITES=${BENCH_TRACE_WRITES:-300000}
REPS=${BENCH_TRACE_REPS:-3}
PG_DUR=${BENCH_TRACE_PG_DUR:-3}
PG_REPS=${BENCH_TRACE_PG_REPS:-5}
LOOP=$BUILD_DIR/workloads/callloop
WRITER=$BUILD_DIR/workloads/writer
NCPU=$(getconf _NPROCESSORS_ONLN)
command -v python3 >/dev/null || skip "python3 not installed"
[[ -x $LOOP && -x $WRITER ]] || skip "workloads not built (make build-tests)"
HAVE_PERF=0
command -v perf >/dev/null && perf --version >/dev/null 2>&1 && HAVE_PERF=1

# perf probes live in tracefs until deleted: a group of our own, removed at
# exit before common.sh/pg.sh clean up.
PGROUP=cgperf_bench_$$
PROBES_MADE=0
_bench_cleanup() {
	((PROBES_MADE)) && perf probe -q -d "$PGROUP:*" >/dev/null 2>&1
	PROBES_MADE=0
}
trap '_bench_cleanup; _pg_cleanup; _cleanup' EXIT

# Other load on the host distorts these figures (wall times and tps most):
# load_mark prints "busy steal own cg ns" now: the host's busy and steal
# ticks (/proc/stat), this shell's and its reaped children's ticks, the PG
# cgroup's CPU (us, 0 before it exists) and the time; load_note MARK LABEL
# prints what ran outside this benchmark since MARK.
HZ=$(getconf CLK_TCK)
cg=
load_mark() {
	local cgu=0
	[[ -n $cg && -r $cg/cpu.stat ]] && cgu=$(awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat")
	echo "$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat)" \
		"$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$$/stat")" "$cgu" "$(date +%s%N)"
}
load_note() {
	local now
	now=$(load_mark)
	awk -v a="$1" -v b="$now" -v hz="$HZ" -v n="$NCPU" -v what="$2" 'BEGIN {
		split(a, x); split(b, y)
		s = (y[5] - x[5]) / 1e9
		other = ((y[1] - x[1]) - (y[3] - x[3])) / hz - (y[4] - x[4]) / 1e6
		if (other < 0) other = 0
		steal = (y[2] - x[2]) / hz
		loaded = (other / s > 0.25 || steal * 100 / (s * n) > 5)
		printf "# %s: %.0f s; other processes kept %.2f of %d CPUs busy, steal %.1f%%%s\n", what, s,
			other / s, n, steal * 100 / (s * n), loaded ? " (a loaded host: take these figures with care)" : ""
	}'
}

ROWS=$TMP/rows # case tool rep n hits lost wall_s cpu_s tool_cpu_s extra_cpu_s
: >"$ROWS"
BAD=0

# ---- the runs ----
# loop_fig FILE: "wall cpu" of callloop's -t line in FILE
loop_fig() { sed -n 's/^callloop [0-9]* calls wall_s \([0-9.]*\) cpu_s \([0-9.]*\)$/\1 \2/p' "$1" | tail -n1; }
agent_hits() { sed -n 's/^.*trace: \([0-9]*\) hits in .*, \([0-9]*\) lost.*$/\1 \2/p' "$1" | tail -n1; }

# run_loop CASE TOOL REP N: one callloop run of N calls under TOOL
#   CASE: plain | hist | ret | nop     TOOL: none | cgperf | perf-stat | perf-record
run_loop() {
	local c=$1 tool=$2 rep=$3 n=$4 w=("$LOOP" "$4" -t) fig hits lost=0 extra=0 ev=() pev=() rc=0
	case $c in
	plain) ev=(-e "u:$LOOP:callloop_fn"); pev=(-e "$PGROUP:plain") ;;
	hist) ev=(-e "u:$LOOP:callloop_fn x=%di" --hist x); pev=(-e "$PGROUP:arg") ;;
	ret) ev=(--latency "u:$LOOP:callloop_fn"); pev=(-e "$PGROUP:plain" -e "$PGROUP:ret__return") ;;
	nop) ev=(-e "u:$LOOP:callloop_nop"); pev=(-e "$PGROUP:nop"); w+=(-n) ;;
	esac
	case $tool in
	none) cpu_run "$TMP/t" "${w[@]}" 2>"$TMP/err" || rc=$?
		hits=0 ;;
	cgperf) cpu_run "$TMP/t" "$AGENT" trace "${ev[@]}" -- "${w[@]}" >"$TMP/out" 2>"$TMP/err" || rc=$?
		read -r hits lost <<<"$(agent_hits "$TMP/err")" ;;
	perf-stat) cpu_run "$TMP/t" perf stat -x, -o "$TMP/stat" "${pev[@]}" -- "${w[@]}" 2>"$TMP/err" || rc=$?
		hits=$(awk -F, '$1 ~ /^[0-9]+$/ { s += $1 } END { print s + 0 }' "$TMP/stat") ;;
	perf-record)
		# -m 256: the agent's ring size (256 pages per CPU); perf's
		# default loses records at these rates. --no-bpf-event: no
		# side-band thread, whose 1 s poll only adds idle wall time.
		cpu_run "$TMP/t" perf record -q --no-bpf-event -m 256 -o "$TMP/perf.data" "${pev[@]}" -- "${w[@]}" 2>"$TMP/err" || rc=$?
		cpu_run "$TMP/ts" perf script -i "$TMP/perf.data" >"$TMP/script" 2>/dev/null || rc=$?
		extra=$(cpu_of "$TMP/ts")
		hits=$(grep -cE "[[:space:]]$PGROUP:" "$TMP/script") ;;
	esac
	fig=$(loop_fig "$TMP/err")
	if ((rc != 0)) || [[ -z $fig || -z $hits ]]; then
		echo "   callloop $c $tool n=$n: rc $rc, no figures: $(grep -v '^callloop' "$TMP/err" | head -n 3 | tr '\n' ' ')"
		BAD=1
		return 1
	fi
	local want=$n
	[[ $c == ret ]] && want=$((2 * n))
	[[ $tool == perf-record ]] && lost=$((want - hits))
	echo "u-$c $tool $rep $n ${hits:-0} ${lost:-0} $fig $(cpu_of "$TMP/t") $extra" >>"$ROWS"
}

# run_write TOOL REP N: writer N under TOOL; the inner cpu_run gives the
# writer's own figures, the outer one the tool's (with the writer inside).
run_write() {
	local tool=$1 rep=$2 n=$3 w hits lost=0 extra=0 rc=0 ev=syscalls:sys_enter_write
	w=(python3 "$BENCH_DIR/cpu_run.py" "$TMP/wt" "$WRITER" "$n")
	rm -f "$TMP/wt"
	case $tool in
	none) "${w[@]}" || rc=$?; cp "$TMP/wt" "$TMP/t" 2>/dev/null; hits=0 ;;
	cgperf) cpu_run "$TMP/t" "$AGENT" trace -e $ev -- "${w[@]}" >"$TMP/out" 2>"$TMP/err" || rc=$?
		read -r hits lost <<<"$(agent_hits "$TMP/err")" ;;
	perf-stat) cpu_run "$TMP/t" perf stat -x, -o "$TMP/stat" -e $ev -- "${w[@]}" 2>"$TMP/err" || rc=$?
		hits=$(awk -F, '$1 ~ /^[0-9]+$/ { s += $1 } END { print s + 0 }' "$TMP/stat") ;;
	perf-record)
		cpu_run "$TMP/t" perf record -q --no-bpf-event -m 256 -o "$TMP/perf.data" -e $ev -- "${w[@]}" 2>"$TMP/err" || rc=$?
		cpu_run "$TMP/ts" perf script -i "$TMP/perf.data" >"$TMP/script" 2>/dev/null || rc=$?
		extra=$(cpu_of "$TMP/ts")
		hits=$(grep -cE "[[:space:]]$ev:" "$TMP/script")
		lost=$((n - hits)); ((lost < 0)) && lost=0 ;;
	esac
	if ((rc != 0)) || [[ ! -s $TMP/wt || -z $hits ]]; then
		echo "   writer $tool n=$n: rc $rc, no figures: $(head -n 3 "$TMP/err" 2>/dev/null | tr '\n' ' ')"
		BAD=1
		return 1
	fi
	echo "tp-write $tool $rep $n ${hits:-0} ${lost:-0} $(awk '{ print $4, $1 + $2 }' "$TMP/wt") $(cpu_of "$TMP/t") $extra" >>"$ROWS"
}

# ---- 1, 2, 4: micro uprobe and tracepoint, with perf ----
TOOLS=(cgperf)
if ((HAVE_PERF)); then
	if perf probe -q -x "$LOOP" -a "$PGROUP:plain=callloop_fn" >"$TMP/probe.err" 2>&1 &&
		perf probe -q -x "$LOOP" -a "$PGROUP:arg=callloop_fn x=%di" >>"$TMP/probe.err" 2>&1 &&
		perf probe -q -x "$LOOP" -a "$PGROUP:ret=callloop_fn%return" >>"$TMP/probe.err" 2>&1 &&
		perf probe -q -x "$LOOP" -a "$PGROUP:nop=callloop_nop" >>"$TMP/probe.err" 2>&1; then
		TOOLS+=(perf-stat perf-record)
		# perf's probes must sit where the agent's do: at the symbols.
		for fn in callloop_fn callloop_nop; do
			sym=$(nm "$LOOP" | awk -v f="$fn" '$3 == f { print $1 }')
			ev=$([[ $fn == callloop_fn ]] && echo plain || echo nop)
			at=$(sed -n "s|^p:$PGROUP/$ev [^:]*:0x0*\([0-9a-f]*\).*|\1|p" /sys/kernel/tracing/uprobe_events 2>/dev/null)
			[[ -z $at || $sym == *"$at" ]] ||
				echo "   note: perf's probe $ev at 0x$at, $fn at 0x$sym: not the same instruction"
		done
	else
		echo "   perf probe failed, no perf rows: $(head -n 3 "$TMP/probe.err" | tr '\n' ' ')"
	fi
	PROBES_MADE=1
fi
mark=$(load_mark)
for rep in $(seq 1 "$REPS"); do
	for c in plain hist ret nop; do
		n=$CALLS
		[[ $c == nop ]] && n=$NOPCALLS
		# Fixed costs first (0 calls), then the baseline and the tools; the
		# baseline again at the end so it brackets them.
		for tool in "${TOOLS[@]}"; do
			[[ $tool == perf-stat && $c != plain && $c != nop ]] && continue
			run_loop "$c" "$tool" "$rep" 0
		done
		run_loop "$c" none "$rep" "$n"
		for tool in "${TOOLS[@]}"; do
			[[ $tool == perf-stat && $c != plain && $c != nop ]] && continue
			run_loop "$c" "$tool" "$rep" "$n"
		done
		run_loop "$c" none "$rep" "$n"
	done
	for tool in "${TOOLS[@]}"; do
		run_write "$tool" "$rep" 0
	done
	run_write none "$rep" "$WRITES"
	for tool in "${TOOLS[@]}"; do
		run_write "$tool" "$rep" "$WRITES"
	done
	run_write none "$rep" "$WRITES"
done
_bench_cleanup
load_note "$mark" "micro: callloop $CALLS calls (-n: $NOPCALLS), writer $WRITES writes, $REPS repetitions"

python3 - "$ROWS" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = lambda xs: st.median(xs) if xs else None
def f(x, fmt):
    return "n/a" if x is None else format(x, fmt)
# index: (case, tool, rep, n) -> list of rows
by = {}
for r in rows:
    by.setdefault((r[0], r[1], int(r[2]), int(r[3])), []).append(
        dict(hits=int(r[4]), lost=int(r[5]), wall=float(r[6]), cpu=float(r[7]),
             tool=float(r[8]), extra=float(r[9])))
cases = []
for r in rows:
    if r[0] not in cases:
        cases.append(r[0])
tools = ["cgperf", "perf-stat", "perf-record"]
label = {"cgperf": "cgperf trace", "perf-stat": "perf stat", "perf-record": "perf rec+script"}
what = {"u-plain": "u:callloop_fn (mov)", "u-hist": "  x=%di --hist x", "u-ret": "  --latency (%return)",
        "u-nop": "u:callloop_nop (nop)", "tp-write": "sys_enter_write"}
print("per hit, medians of the repetitions; us = microseconds")
print(f"{'probe':<22}{'tool':<16}{'hits':>8}{'lost':>6}{'base us':>9}{'wall us':>9}{'cpu us':>9}"
      f"{'tool us':>9}{'total us':>10}{'range':>16}{'cgperf/this':>12}")
for c in cases:
    reps = sorted({k[2] for k in by if k[0] == c})
    n = max(k[3] for k in by if k[0] == c)
    base = {rep: by.get((c, "none", rep, n), []) for rep in reps}
    bcall = med([b["cpu"] / n for rep in reps for b in base[rep]])
    res = {}
    for t in tools:
        per = []
        for rep in reps:
            on, zero, b = by.get((c, t, rep, n)), by.get((c, t, rep, 0)), base[rep]
            if not on or not zero or not b:
                continue
            on, zero = on[0], zero[0]
            fires = n * (2 if c == "u-ret" else 1)
            bw, bc = med([x["wall"] for x in b]), med([x["cpu"] for x in b])
            wall = (on["wall"] - bw) / fires * 1e6
            cpu = (on["cpu"] - bc) / fires * 1e6
            own = (on["tool"] - on["cpu"]) - (zero["tool"] - zero["cpu"]) + on["extra"] - zero["extra"]
            tool = own / fires * 1e6
            per.append(dict(hits=on["hits"], lost=on["lost"], wall=wall, cpu=cpu, tool=tool, total=cpu + tool))
        if not per:
            continue
        m = {k: med([p[k] for p in per]) for k in per[0]}
        lo, hi = min(p["total"] for p in per), max(p["total"] for p in per)
        res[t] = m
        ratio = res["cgperf"]["total"] / m["total"] if "cgperf" in res and m["total"] > 0 and t != "cgperf" else None
        print(f"{what.get(c, c) if t == 'cgperf' else '':<22}{label[t]:<16}{int(m['hits']):>8}{int(m['lost']):>6}"
              f"{bcall * 1e6:>9.4f}{m['wall']:>9.2f}{m['cpu']:>9.2f}{m['tool']:>9.3f}{m['total']:>10.2f}"
              f"{f'{lo:.2f}..{hi:.2f}':>16}{'' if t == 'cgperf' else f(ratio, '12.2f')}")
print("base us: the workload's own CPU per call without probes. wall/cpu us: the workload's extra\n"
      "time per hit. tool us: the tracer's own CPU per hit (perf rec+script: both). total = cpu + tool;\n"
      "range = min..max of total over the repetitions; cgperf/this = cgperf total / this row's total.\n"
      "--latency: entry + return, 2 hits per call. perf stat only counts (no records): the floor.\n"
      "lost: probe firings - records; below 0 when perf.data held more records than firings (perf 6.1\n"
      "sometimes writes runs of samples twice, identical to the ns).")
EOF

# ---- 3. PostgreSQL ----
if ! _pg_have; then
	echo "   PostgreSQL binaries or user missing: PostgreSQL part skipped"
	exit 0
fi
cg=$(cg_make pg)
_CG_MADE+=("$cg")
rel=${cg#"$(cg2_mount)"}
pg_start "$cg"
pg_bench_init 1
PGBIN=$PG_BIN/postgres
SDT_S="sdt:postgresql:query__start@$PGBIN"
SDT_D="sdt:postgresql:query__done@$PGBIN"
PG_ARGS=(-n -S -M simple -c 4 -j 2 -T "$PG_DUR")
cg_usage() { awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat"; }

# agent_start OUTPREFIX DURATION: the agent on the cgroup in the background
# (bench_agent_start in lib.sh).
agent_start() {
	bench_agent_start "$1" "$AGENT" trace -G "$rel" -e "$SDT_S" --latency "$SDT_S,$SDT_D" --duration "$2"
}
agent_stop() {
	[[ -n $APID ]] && kill -INT "$APID" 2>/dev/null
	wait "$AWPID"
}

# The agent's fixed cost: the same command on the idle cluster for 1 s.
if agent_start "$TMP/pgfix" 1; then
	wait "$AWPID"
	PG_FIX=$(cpu_of "$TMP/pgfix.t")
else
	PG_FIX=0
	echo "   agent on the idle cluster did not start: $(head -n 3 "$TMP/pgfix.err" | tr '\n' ' ')"
fi
pg_bench_run "${PG_ARGS[@]}" -T 1 >/dev/null 2>&1 # warm up the caches
mark=$(load_mark)
PGROWS=$TMP/pgrows # rep mode tps tx usage_us hits agent_cpu
: >"$PGROWS"
for rep in $(seq 1 "$PG_REPS"); do
	if ((rep % 2)); then modes="off on"; else modes="on off"; fi
	for mode in $modes; do
		if [[ $mode == on ]] && ! agent_start "$TMP/pga" $((PG_DUR + 60)); then
			echo "   agent did not start: $(head -n 3 "$TMP/pga.err" | tr '\n' ' ')"
			agent_stop
			BAD=1
			continue
		fi
		u0=$(cg_usage)
		pg_bench_run "${PG_ARGS[@]}" >"$TMP/pgbench.log" 2>&1
		u1=$(cg_usage)
		hits=0 acpu=0
		if [[ $mode == on ]]; then
			agent_stop
			read -r hits _ <<<"$(agent_hits "$TMP/pga.err")"
			acpu=$(cpu_of "$TMP/pga.t")
		fi
		tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$TMP/pgbench.log")
		tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$TMP/pgbench.log")
		if [[ -z $tps || -z $tx || -z $hits ]]; then
			echo "   pgbench $mode: no figures: $(tail -n 3 "$TMP/pgbench.log" | tr '\n' ' ')"
			BAD=1
			continue
		fi
		echo "$rep $mode $tps $tx $((u1 - u0)) $hits $acpu" >>"$PGROWS"
	done
done
load_note "$mark" "PostgreSQL: pgbench ${PG_ARGS[*]}, $PG_REPS times with and without the agent"
info "agent: trace -G CG -e query__start --latency query__start,query__done; last run: $(tail -n1 "$TMP/pga.err" 2>/dev/null)"
python3 - "$PGROWS" "$PG_FIX" "$NCPU" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
fix, ncpu = float(sys.argv[2]), int(sys.argv[3])
reps = sorted({int(r[0]) for r in rows})
get = lambda rep, mode: next((r for r in rows if int(r[0]) == rep and r[1] == mode), None)
per = []
for rep in reps:
    off, on = get(rep, "off"), get(rep, "on")
    if not off or not on:
        continue
    tps0, tps1 = float(off[2]), float(on[2])
    tx0, tx1 = int(off[3]), int(on[3])
    u0, u1 = int(off[4]) / tx0, int(on[4]) / tx1    # cgroup CPU us per query
    hits, acpu = int(on[5]), float(on[6])
    hpq = hits / tx1 if tx1 else 0
    per.append(dict(tps0=tps0, tps1=tps1, ratio=tps1 / tps0,
                    wallq=ncpu * (1 / tps1 - 1 / tps0) * 1e6,
                    cpu0=u0, cpu1=u1, cpuq=u1 - u0, hpq=hpq,
                    agentq=(acpu - fix) * 1e6 / tx1 if tx1 else 0))
if not per:
    print("no PostgreSQL figures")
    sys.exit(0)
m = {k: st.median([p[k] for p in per]) for k in per[0]}
def rng(k, fmt=".3f"):
    return f"{min(p[k] for p in per):{fmt}}..{max(p[k] for p in per):{fmt}}"
print(f"{'':<40}{'median':>12}{'range':>22}")
print(f"{'tps without probes':<40}{m['tps0']:>12.0f}{rng('tps0', '.0f'):>22}")
print(f"{'tps with trace':<40}{m['tps1']:>12.0f}{rng('tps1', '.0f'):>22}")
print(f"{'tps ratio with/without':<40}{m['ratio']:>12.3f}{rng('ratio'):>22}")
print(f"{'probe hits per query':<40}{m['hpq']:>12.2f}")
print(f"{'cost/query from tps, us (ncpu*d(1/tps))':<40}{m['wallq']:>12.2f}{rng('wallq'):>22}")
print(f"{'postgres CPU/query without, us':<40}{m['cpu0']:>12.2f}{rng('cpu0'):>22}")
print(f"{'postgres CPU/query with, us':<40}{m['cpu1']:>12.2f}{rng('cpu1'):>22}")
print(f"{'postgres extra CPU/query, us':<40}{m['cpuq']:>12.2f}{rng('cpuq'):>22}")
print(f"{'  per hit, us':<40}{m['cpuq'] / m['hpq'] if m['hpq'] else 0:>12.2f}")
print(f"{'agent CPU/query, us (net of fixed)':<40}{m['agentq']:>12.3f}{rng('agentq'):>22}")
print(f"agent fixed cost (idle cluster, 1 s): {fix * 1e3:.0f} ms")
EOF
exit $BAD
