# Shared helpers for integration tests; source it first.
#   fail MSG      print and exit 1        skip MSG   print and exit 77
#   cg2_mount     the cgroup2 mount point (from /proc/self/mountinfo)
#   cg_make NAME  create $(cg2_mount)/cgperf-test-$$-NAME, removed at exit
#   cg_new NAME   the same in $cg, its path below the mount in $rel
#   need CMD...   skip unless every CMD is installed
#   cg_enter DIR PID   move PID into DIR
#   bg_track PID  kill PID (and its process group) at exit
#   cg_spawn DIR CMD ARGS...  run CMD in the background inside cgroup DIR
#                 (it moves itself there before exec), tracked; PID in $SPAWNED
#   agent_run LOG ARGS...  cgperf-agent run ARGS in the background, stderr to
#                 LOG, tracked; PID in $ag
#   agent_started LOG  wait until that agent logged msg=started, else fail
#   agent_yaml NAME INCLUDE [LINE...]  $TMP/agent.yaml for `run`: host NAME
#                 (agent id in $TMP/agent-id), cgroups.include [INCLUDE],
#                 task-clock counters, sampling off, a push every 1 s to $ex
#                 (none when unset; spool $TMP/spool); each LINE ("KEY: ...")
#                 replaces the line of its KEY, or is added
#   near A B PCT  true when A and B differ by at most PCT percent of B
#   free_port     a TCP port on 127.0.0.1 that nothing listens on now
#   wait_http URL SECONDS [LOG]   wait until URL answers 2xx, else fail
#                 (with the tail of LOG)
#   SANITIZED     1 when the binaries under test are built with SAN=1
#                 (ASan+UBSan: several times slower), else 0
#   TIME_SCALE    what time bounds and timeouts of a test are multiplied by:
#                 3 for a sanitized build, 1 otherwise; CGPERF_TIME_SCALE
#                 overrides it. A bound scaled so is said in the output.
#   scaled N      N * TIME_SCALE (integers)
set -u
AGENT=${CGPERF_AGENT:-${CGPERF_ROOT:-$PWD}/${BUILD:-build}/cgperf-agent}
ROOT=${CGPERF_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD_DIR=$ROOT/${BUILD:-build}
TMP=$(mktemp -d /tmp/cgperf-it.XXXXXX)
_CG_MADE=()
_PIDS=()

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
info() { echo "# $*"; }

cg2_mount() {
	awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo
}

cg_make() {
	local d
	d="$(cg2_mount)/cgperf-test-$$-$1"
	mkdir -p "$d" || fail "cannot create cgroup $d"
	_CG_MADE+=("$d")
	echo "$d"
}

# cg_new NAME: a test cgroup (cg_make) in $cg, and its path below the
# cgroup2 mount in $rel ("/cgperf-test-PID-NAME"). Made in this shell, so
# the exit trap removes it by path as well as by prefix.
cg_new() {
	cg=$(cg_make "$1")
	_CG_MADE+=("$cg")
	rel=${cg#"$(cg2_mount)"}
}

# need CMD...: skip the test (with the reason) unless every CMD is installed.
need() {
	local c
	for c; do
		command -v "$c" >/dev/null || skip "$c not installed"
	done
}

cg_enter() { echo "$2" >"$1/cgroup.procs"; }

bg_track() { _PIDS+=("$1"); }
cg_spawn() {
	# shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
	sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$@" &
	SPAWNED=$!
	bg_track $SPAWNED
}
agent_run() {
	local log=$1
	shift
	"$AGENT" run "$@" 2>"$log" &
	ag=$!
	bg_track $ag
}
# agent_started LOG: wait (10 s, scaled) until the agent started by agent_run
# ($ag) logs msg=started in LOG; fail if it exits or does not.
agent_started() {
	local i
	for ((i = 0; i < $(scaled 10) * 10; i++)); do
		grep -q 'msg=started' "$1" && return 0
		kill -0 "$ag" 2>/dev/null || fail "the agent exited: $(tail -5 "$1")"
		sleep 0.1
	done
	fail "the agent not started after $(scaled 10)s: $(tail -5 "$1")"
}
agent_yaml() {
	local name=$1 inc=$2 line
	shift 2
	local -A given=()
	for line in "$@"; do given[${line%%:*}]=1; done
	{
		for line in "host: {name: \"$name\", agent_id_file: $TMP/agent-id}" \
			"cgroups: {include: [\"$inc\"]}" "counters: {events: [task-clock]}" \
			"sampling: {enabled: false}" \
			"push: {interval: 1s, collectors: [${ex:+\"$ex/api/v1/push\"}], spool: {dir: $TMP/spool}}"; do
			[[ -v given[${line%%:*}] ]] || echo "$line"
		done
		printf '%s\n' "$@"
	} >"$TMP/agent.yaml"
}

# Remove a cgroup tree bottom-up after moving any process left in it to the root.
_cg_remove() {
	local d=$1 root
	root=$(cg2_mount)
	[[ -d $d ]] || return 0
	# NUL-separated: test cgroups may have odd names
	find "$d" -depth -type d -print0 | while IFS= read -r -d '' sub; do
		while read -r p; do
			[[ -n $p ]] && echo "$p" >"$root/cgroup.procs" 2>/dev/null
		done <"$sub/cgroup.procs"
		rmdir "$sub" 2>/dev/null
	done
}

# _mine PID: alive and in this test's session. tests/run.sh starts each test
# in a session of its own, and PIDs are reused (pid_max can be 32768): a
# tracked process gone long ago may now be another test, even its session
# leader, whose group a "kill -- -PID" would end.
_SID=$(ps -o sid= -p $$ | tr -d ' ')
_mine() {
	local s
	s=$(ps -o sid= -p "$1" 2>/dev/null) || return 1
	[[ ${s// /} == "$_SID" ]]
}

_cleanup() {
	local p i
	for p in "${_PIDS[@]}"; do
		_mine "$p" || continue
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}"; do
		for i in 1 2 3 4 5 6 7 8 9 10; do
			_mine "$p" || break
			sleep 0.2
		done
		_mine "$p" || continue
		kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
	done
	# cg_make usually runs in a $(...) subshell, so _CG_MADE may not know
	# every cgroup: remove all of this test's by their name prefix.
	for ((i = ${#_CG_MADE[@]} - 1; i >= 0; i--)); do
		_cg_remove "${_CG_MADE[i]}"
	done
	for p in "$(cg2_mount)"/cgperf-test-$$-*; do
		[[ -d $p ]] && _cg_remove "$p"
	done
	_ports_release
	[[ -n ${KEEP_TMP:-} ]] || rm -rf "$TMP"
}
trap _cleanup EXIT

near() {
	awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != 0 && d * 100 <= p * (b < 0 ? -b : b)) }'
}

# Below the ephemeral range (net.ipv4.ip_local_port_range): a port the kernel
# hands out for bind(0) is also what the next outgoing connection may take as
# its local port before the server under test binds it ("in use?").
# A port is free now but bound later: two picks (of this test, or of a test
# running beside it) could fall on the same one before either binds it. Each
# pick is reserved by a file in $_PORT_DIR naming this test's PID; a file
# whose test is gone is taken over, and this test's go at its exit.
_PORT_DIR=/tmp/cgperf-ports
free_port() {
	mkdir -p "$_PORT_DIR"
	OWNER=$$ PORT_DIR=$_PORT_DIR python3 - <<'PY'
import os, random, socket
owner, pdir = os.environ["OWNER"], os.environ["PORT_DIR"]
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
top = max(lo - 1, 10001)

def reserve(p):
    path = os.path.join(pdir, str(p))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                holder = open(path).read().strip()
            except OSError:
                holder = ""
            if holder.isdigit() and os.path.exists("/proc/" + holder):
                return False
            try:
                os.unlink(path)
            except OSError:
                pass
            continue
        os.write(fd, owner.encode())
        os.close(fd)
        return True
    return False

for _ in range(400):
    p = random.randint(10000, top)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if not reserve(p):
        continue
    print(p)
    break
else:
    raise SystemExit("no free port below the ephemeral range")
PY
}
_ports_release() {
	local f
	for f in "$_PORT_DIR"/*; do
		[[ -f $f && $(cat "$f" 2>/dev/null) == "$$" ]] && rm -f "$f"
	done
	return 0
}

wait_http() {
	local url=$1 secs=$2 log=${3:-} i
	for ((i = 0; i < secs * 10; i++)); do
		curl -sf -o /dev/null "$url" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$url not answering after ${secs}s${log:+: $(tail -n 20 "$log")}"
}

pct_diff() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) { print "inf"; exit } d = (a - b) * 100 / b; printf "%+.2f", d }'
}

[[ -x $AGENT ]] || fail "agent binary $AGENT not built"
# The ASan runtime's entry point is in every sanitized binary.
SANITIZED=0
grep -q __asan_init "$AGENT" 2>/dev/null && SANITIZED=1
TIME_SCALE=${CGPERF_TIME_SCALE:-$((SANITIZED ? 3 : 1))}
[[ $TIME_SCALE =~ ^[1-9][0-9]*$ ]] || fail "CGPERF_TIME_SCALE='$TIME_SCALE': want a whole number >= 1"
scaled() { echo $(($1 * TIME_SCALE)); }
[[ $(id -u) -eq 0 ]] || skip "integration tests need root (perf_event_open on cgroups, cgroup creation)"
[[ -n $(cg2_mount) ]] || skip "no cgroup2 mount on this host"
