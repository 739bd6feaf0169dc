# Shared by the benches; source it first: it sources tests/lib/common.sh.
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/../tests/lib/common.sh" || exit 1
# Figures are printed and parsed (awk, python) with a decimal point.
export LC_ALL=C

# cpu_run OUT CMD...: run CMD, write "user_s sys_s maxrss_kb wall_s" (its
# rusage and wall time, bench/cpu_run.py) to OUT; returns CMD's exit status.
cpu_run() { python3 "$BENCH_DIR/cpu_run.py" "$@"; }
# cpu_of OUT: user + system seconds of a cpu_run OUT file.
cpu_of() { awk '{ printf "%.6f", $1 + $2 }' "$1"; }

# bench_agent_start OUTPREFIX CMD...: CMD (an agent) in the background under
# cpu_run (figures in OUTPREFIX.t, output in .out and .err); returns once its
# perf events are open, 1 if it ended first. Sets APID (the agent) and AWPID
# (cpu_run's wrapper, to wait for).
bench_agent_start() {
	local out=$1 i
	shift
	rm -f "$out.pid"
	PIDFILE=$out.pid cpu_run "$out.t" "$@" >"$out.out" 2>"$out.err" &
	AWPID=$!
	bg_track "$AWPID"
	APID=
	for ((i = 0; i < 100; i++)); do
		[[ -z $APID && -s $out.pid ]] && APID=$(cat "$out.pid")
		if [[ -n $APID ]] && ls -l "/proc/$APID/fd" 2>/dev/null | grep -q 'perf_event'; then
			sleep 0.3 # let it enable the events
			return 0
		fi
		kill -0 "$AWPID" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

# bench_pg_collector NAME: a PostgreSQL in a new cgroup NAME with pgbench's
# tables (scale 2), and a fake collector; sets cg, rel (the cgroup's path
# under the mount) and port (the collector's). Needs tests/lib/pg.sh.
bench_pg_collector() {
	cg=$(cg_make "$1")
	rel=${cg#"$(cg2_mount)"}
	pg_start "$cg"
	pg_bench_init 2
	port=$(free_port)
	mkdir -p "$TMP/fc"
	python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc" --port "$port" >"$TMP/fc.log" 2>&1 &
	bg_track $!
	sleep 0.5
}
