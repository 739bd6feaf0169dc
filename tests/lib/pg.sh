# PostgreSQL helpers for integration tests; source it after common.sh.
#
#   pg_start CGDIR [SCALE]  a private cluster in $TMP/pg (with pgbench's
#                        tables of scale SCALE when given) and its postmaster
#                        started inside cgroup CGDIR (so every backend and
#                        auxiliary process lives there); unix socket only.
#                        Exports PGHOST PGPORT PGUSER PGDATA, sets PG_PID.
#   pg_bench_run ARGS... pgbench ARGS in the foreground (in the caller's
#                        cgroup, never in CGDIR)
#   pg_bench_start LOG ARGS...  the same in the background, output to LOG;
#                        sets PG_BENCH_PID (pgbench's PID, killed at exit)
#   pg_psql ARGS...      psql against that cluster
#
# Everything runs as the `postgres` user through setpriv (no PAM session, so
# nothing moves the processes into another cgroup). The cluster is stopped
# (pg_ctl stop -m immediate, then SIGKILL by PID of whatever is left in CGDIR)
# by an EXIT trap that runs before common.sh's own cleanup.
#
# Override the binaries with PG_BIN=/usr/lib/postgresql/NN/bin.
#
# initdb and pgbench -i take seconds each, and eleven tests need a cluster:
# the clusters are made once per run of tests/run.sh (templates in
# $CGPERF_TEST_SHARED, one per scale, built by the first test that asks,
# under a lock) and each test starts its own postmaster on a copy (cp -a:
# a fraction of a second). Only the data is shared; no test sees another's
# server, writes or cgroup. A test run alone keeps its templates in $TMP.

PG_USER=${PG_USER:-postgres}
if [[ -z ${PG_BIN:-} ]]; then
	PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
fi
PG_PID=
PG_CGDIR=

_pg_have() {
	local b
	[[ -n $PG_BIN ]] || return 1
	for b in initdb postgres pg_ctl pg_isready pgbench psql; do
		[[ -x $PG_BIN/$b ]] || return 1
	done
	id -u "$PG_USER" >/dev/null 2>&1 && command -v setpriv >/dev/null
}

# Run a command as $PG_USER from $TMP (root's cwd may not be readable by it);
# env and setpriv exec, so `env ... &` would give the command's own PID.
_pg_as() {
	env -C "$TMP" setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups -- "$@"
}

# True while PID exists and is not a zombie.
_pg_alive() {
	local st
	[[ -r /proc/$1/stat ]] || return 1
	st=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null)
	[[ -n $st && $st != Z ]]
}

_pg_log_tail() {
	[[ -f $TMP/pg.log ]] && sed 's/^/    pg.log: /' "$TMP/pg.log" | tail -n 20 >&2
}

# _pg_template SCALE: print the directory of a stopped cluster made by
# initdb (and pgbench -i -s SCALE when SCALE > 0), building it if missing.
_pg_template() {
	local scale=$1 root=${CGPERF_TEST_SHARED:-$TMP} base dir src
	base=$root/pg-$(basename "$(dirname "$PG_BIN")")
	dir=$base/s$scale
	mkdir -p "$base" && chmod 711 "$root" "$base" || return 1
	if ((scale > 0)); then
		src=$(_pg_template 0) || return 1
	fi
	(
		flock 9 || exit 1
		[[ -f $dir/.ready ]] && exit 0
		rm -rf "$dir" && mkdir -p "$dir/data" "$dir/sock" || exit 1
		chown "$PG_USER:" "$dir/data" "$dir/sock" && chmod 700 "$dir/data" || exit 1
		if ((scale == 0)); then
			_pg_as "$PG_BIN/initdb" -D "$dir/data" -U "$PG_USER" -A trust --no-sync \
				-E UTF8 --locale=C >"$dir/build.log" 2>&1 || exit 1
		else
			cp -a "$src/data/." "$dir/data/" && _pg_template_fill "$dir" "$scale" || exit 1
		fi
		touch "$dir/.ready"
	) 9>"$dir.lock" || {
		sed 's/^/    template: /' "$dir/build.log" 2>/dev/null | tail -n 20 >&2
		return 1
	}
	echo "$dir"
}

# _pg_template_fill DIR SCALE: start a postmaster on DIR/data (in the
# caller's cgroup), pgbench -i -s SCALE, stop it cleanly (a clean stop
# leaves no postmaster.pid and nothing to recover in the copies).
_pg_template_fill() {
	local dir=$1 scale=$2 port=$((53000 + $$ % 1000)) pid i rc=0
	_pg_as "$PG_BIN/postgres" -D "$dir/data" -k "$dir/sock" -p "$port" \
		-c listen_addresses= -c fsync=off -c synchronous_commit=off \
		-c full_page_writes=off -c logging_collector=off >"$dir/build.log" 2>&1 &
	pid=$!
	bg_track "$pid"
	for ((i = 0; i < 300; i++)); do
		_pg_alive "$pid" || return 1
		"$PG_BIN/pg_isready" -q -h "$dir/sock" -p "$port" -U "$PG_USER" 2>/dev/null && break
		sleep 0.1
	done
	((i < 300)) &&
		PGHOST=$dir/sock PGPORT=$port PGDATABASE=postgres _pg_as "$PG_BIN/pgbench" -i -q \
			-s "$scale" -U "$PG_USER" >>"$dir/build.log" 2>&1 || rc=1
	_pg_as "$PG_BIN/pg_ctl" stop -D "$dir/data" -m fast -w -t 60 >>"$dir/build.log" 2>&1 || rc=1
	wait "$pid" 2>/dev/null
	return $rc
}

pg_start() {
	local cg=$1 i
	_pg_have || skip "PostgreSQL server binaries (${PG_BIN:-/usr/lib/postgresql/*/bin}) or user $PG_USER or setpriv missing"
	[[ -w $cg/cgroup.procs ]] || fail "pg_start: $cg is not a writable cgroup"
	[[ -z $PG_PID ]] || fail "pg_start: a cluster is already running"
	PG_CGDIR=$cg

	export PGDATA=$TMP/pg
	export PGHOST=$TMP/pg-sock
	export PGPORT=$((54000 + $$ % 1000))
	export PGUSER=$PG_USER
	export PGDATABASE=postgres
	chmod 711 "$TMP"                      # let postgres traverse our private dir
	mkdir -p "$PGDATA" "$PGHOST"
	chown "$PG_USER:" "$PGDATA" "$PGHOST"
	chmod 700 "$PGDATA"

	local tpl
	tpl=$(_pg_template "${2:-0}") || fail "no PostgreSQL template of scale ${2:-0}"
	cp -a "$tpl/data/." "$PGDATA/" || fail "copying the template $tpl"

	# A root shell moves itself into the cgroup, then becomes the postmaster
	# (exec chain: sh -> setpriv -> postgres, one PID), so every child forked
	# by the postmaster starts in $cg.
	sh -c 'echo $$ >"$1/cgroup.procs" || exit 111
		cd "$2" && exec setpriv --reuid="$3" --regid="$3" --init-groups -- \
			"$4/postgres" -D "$2" -k "$5" -p "$6" \
			-c listen_addresses= -c fsync=off -c synchronous_commit=off \
			-c full_page_writes=off -c logging_collector=off -c max_connections=50' \
		sh "$cg" "$PGDATA" "$PG_USER" "$PG_BIN" "$PGHOST" "$PGPORT" \
		>"$TMP/pg.log" 2>&1 &
	PG_PID=$!

	for ((i = 0; i < 300; i++)); do
		_pg_alive "$PG_PID" || { _pg_log_tail; PG_PID=; fail "postmaster exited during startup"; }
		"$PG_BIN/pg_isready" -q -h "$PGHOST" -p "$PGPORT" -U "$PG_USER" 2>/dev/null && break
		sleep 0.1
	done
	((i < 300)) || { _pg_log_tail; fail "postmaster not ready after 30 s"; }

	local pidfile
	pidfile=$(head -n1 "$PGDATA/postmaster.pid" 2>/dev/null)
	[[ $pidfile == "$PG_PID" ]] || fail "postmaster.pid says '$pidfile', started PID $PG_PID"
	grep -qx "$PG_PID" "$cg/cgroup.procs" || fail "postmaster $PG_PID is not in $cg"
	info "postgres ($PG_BIN) up: pid $PG_PID, socket $PGHOST port $PGPORT, cgroup ${cg#"$(cg2_mount)"}"
}

pg_psql() {
	_pg_as "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"
}

pg_bench_run() {
	_pg_as "$PG_BIN/pgbench" "$@"
}

# pg_bench_start LOGFILE ARGS...: pgbench ARGS in the background, output to
# LOGFILE; sets PG_BENCH_PID (pgbench's own PID, killed at exit if still running).
pg_bench_start() {
	local log=$1; shift
	env -C "$TMP" setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups -- \
		"$PG_BIN/pgbench" "$@" >"$log" 2>&1 &
	PG_BENCH_PID=$!
	bg_track "$PG_BENCH_PID"
}

# Stop the cluster: immediate shutdown, then SIGKILL (by PID) the postmaster
# and anything still listed in its cgroup, then reap the postmaster.
_pg_cleanup() {
	local p i
	[[ -n $PG_PID ]] || return 0
	if _pg_alive "$PG_PID"; then
		# pg_ctl refuses to run as root.
		_pg_as timeout 15 "$PG_BIN/pg_ctl" stop -D "$PGDATA" -m immediate -w -t 10 >/dev/null 2>&1
	fi
	for ((i = 0; i < 50; i++)); do
		_pg_alive "$PG_PID" || break
		sleep 0.1
	done
	_pg_alive "$PG_PID" && kill -KILL "$PG_PID" 2>/dev/null
	if [[ -n $PG_CGDIR && -r $PG_CGDIR/cgroup.procs ]]; then
		for ((i = 0; i < 20; i++)); do
			[[ -s $PG_CGDIR/cgroup.procs ]] || break
			# Only the cluster's processes were ever put in this cgroup.
			while read -r p; do
				[[ -n $p ]] && [[ $(stat -c %U "/proc/$p" 2>/dev/null) == "$PG_USER" ]] &&
					kill -KILL "$p" 2>/dev/null
			done <"$PG_CGDIR/cgroup.procs"
			sleep 0.1
		done
	fi
	wait "$PG_PID" 2>/dev/null
	# Exited tasks keep the cgroup "populated" for a moment; rmdir would fail.
	if [[ -n $PG_CGDIR && -r $PG_CGDIR/cgroup.events ]]; then
		for ((i = 0; i < 50; i++)); do
			grep -qx 'populated 0' "$PG_CGDIR/cgroup.events" && break
			sleep 0.1
		done
	fi
	PG_PID=
}

trap '_pg_cleanup; _cleanup' EXIT
