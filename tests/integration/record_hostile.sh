#!/bin/bash
# record and run against a hostile container: a JIT process in its own mount
# and pid namespace (a private tmpfs on its /tmp) whose /tmp/perf-1.map is
# in turn what a container could plant there (docs/security.md):
#
#   valid    the map the JIT wrote: its frames are named (jit_spin_loop)
#   fifo     a FIFO: nothing may wait for a writer (once, record and run
#            hung here and ignored SIGTERM)
#   hostlink a link to a host file, outside the container, that parses as a
#            map of the JIT's code with a secret name: the secret must never
#            reach any output (it did, by the host's resolution of the link)
#   environ  a link to /proc/self/environ, which is the agent's own
#            environment: it carries a map line with another secret
#   maps     a link to /proc/self/maps
#   sparse   a 2 GB sparse file: the read is capped, memory stays bounded
#
# Each case runs `record` under timeout(1) and /usr/bin/time: it must end on
# its own (not killed) within the duration plus a margin, leave no secret in
# stdout, stderr or the folded file, and stay under an RSS bound. `run` then
# sees the FIFO and the host link (it must stop on SIGTERM, and no secret in
# its log, spool or pushed batches).
# Alone: the FUSE binary is opened through a helper the agent waits 200 ms
# for, which a sanitized build on a 2-core machine busy with two other tests
# missed (frames unnamed, the file refused as stalled).
# holds: exclusive
source "$(dirname "$0")/../lib/common.sh"

# stallfs_up OUT ARGS...: tests/tools/stallfs ARGS in the mount namespace of
# $jp (copied to its /tmp), output in OUT; its PID in SF_PID once it mounted.
stallfs_up() {
	local out=$1 i
	shift
	nsenter -t "$jp" -m -- /tmp/stallfs "$@" >"$out" 2>&1 &
	SF_PID=$!
	bg_track $SF_PID
	for ((i = 0; i < $(scaled 50); i++)); do
		grep -qs ready "$out" && return 0
		kill -0 $SF_PID 2>/dev/null || break
		sleep 0.1
	done
	fail "stallfs $1 did not mount: $(cat "$out")"
}

# helper_gone CASE: the read helper $helper (if any) exits within 5 s
# (scaled) of its daemon.
helper_gone() {
	local i
	for ((i = 0; i < $(scaled 50); i++)); do
		[[ -z $helper ]] || ! kill -0 $helper 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$1: helper $helper still there $(scaled 5) s after its daemon ended"
}

W=$BUILD_DIR/workloads
[[ -x $W/jit ]] || fail "workload $W/jit not built"
command -v unshare >/dev/null || skip "unshare (util-linux) missing"
[[ -x /usr/bin/time ]] || skip "/usr/bin/time (package time) missing"
DUR=1.5
LIMIT=$(scaled 12) # seconds: the duration plus a wide margin on a busy 2-core VM
RSS_MAX_KB=131072 # 128 MiB; a normal record here stays far below
# ~300 samples expected (1.5 s at 199 Hz of a spinning JIT); a record stuck
# on a map has a handful, a loaded 2-core host still gives ~90
MIN_SAMPLES=40
SECRET=HOSTSECRET$$x$RANDOM
ENVSECRET=ENVSECRET$$x$RANDOM

cg_new jit
# The "container": its own mount and pid namespaces, private propagation,
# its own /tmp. $TMP (on the host's /tmp) is hidden from it, and so is the
# tree when it was cloned under /tmp: the JIT is held open on fd 9 across
# the mount and copied into the container's /tmp from there.
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec unshare --mount --pid --fork --kill-child --propagation private \
	sh -c 'exec 9<\"\$0\"; mount -t tmpfs -o size=4m tmpfs /tmp && cp /proc/self/fd/9 /tmp/jit && chmod 755 /tmp/jit && exec 9<&- && exec /tmp/jit 60' '$W/jit'" >"$TMP/ns.out" 2>&1 &
outer=$!; bg_track $outer
jp=
for ((i = 0; i < $(scaled 50); i++)); do
	for p in $(cat "$cg/cgroup.procs"); do
		[[ $(awk '/^NSpid:/ { print NF, $NF }' /proc/$p/status 2>/dev/null) == "3 1" ]] &&
			[[ $(cat /proc/$p/comm 2>/dev/null) == jit ]] && jp=$p
	done
	[[ -n $jp && -s /proc/$jp/root/tmp/perf-1.map ]] && break
	sleep 0.1
done
[[ -n $jp ]] || fail "no JIT process with pid 1 in its own namespace in $cg: $(cat "$TMP/ns.out")"
bg_track $jp
map=/proc/$jp/root/tmp/perf-1.map
[[ -s $map ]] || fail "the JIT wrote no /tmp/perf-1.map in its namespace"
[[ ! -e /tmp/perf-1.map ]] || info "note: a /tmp/perf-1.map exists on the host (not the test's)"
read -r addr size _ <"$map"
info "JIT host pid $jp (pid 1 inside), code at 0x$addr+0x$size"
cp "$map" "$TMP/valid.map"
# A host file the container must not be able to show us: it names the JIT's
# own code, so a followed link would put the secret into the profile.
printf '%s %s %s_function\n' "$addr" "$size" "$SECRET" >"$TMP/secret.map"
[[ ! -e /proc/$jp/root$TMP/secret.map ]] || fail "host file visible inside the namespace"

# plant KIND: put KIND at the JIT's /tmp/perf-1.map (from the host side).
plant() {
	rm -f "$map"
	case $1 in
	valid) cp "$TMP/valid.map" "$map" ;;
	fifo) mkfifo "$map" ;;
	hostlink) ln -s "$TMP/secret.map" "$map" ;;
	environ) ln -s /proc/self/environ "$map" ;;
	maps) ln -s /proc/self/maps "$map" ;;
	sparse) truncate -s 2G "$map" ;;
	binfs*) cp "$TMP/valid.map" "$map" ;;
	esac
}

# record KIND: record the cgroup with KIND planted; checks time, exit,
# secrets, RSS; leaves the folded stacks in $TMP/KIND.folded.
record() {
	local kind=$1 rc rss cpu t0 t1
	plant "$kind"
	t0=$(date +%s.%N)
	# The agent's environment carries lines that parse as a map of the
	# JIT's code, for the link to /proc/self/environ (twice: a reader that
	# skips the NUL-cut first line as over-long eats the next one).
	env "CGPERF_TEST_ENV=x
$addr $size ${ENVSECRET}_function
$addr $size ${ENVSECRET}_function
" /usr/bin/time -v -o "$TMP/$kind.time" timeout -s KILL $LIMIT \
		"$AGENT" record -v -g -G "$rel" -F 199 --duration $DUR -o "$TMP/$kind.folded" \
		>"$TMP/$kind.out" 2>"$TMP/$kind.err"
	rc=$?
	t1=$(date +%s.%N)
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/$kind.time")
	cpu=$(awk -F': ' '/(User|System) time/ { s += $2 } END { printf "%.2f", s }' "$TMP/$kind.time")
	info "$kind: rc $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s, agent CPU $cpu s, max RSS ${rss:-?} KiB, $(awk '{ s += $NF } END { print s + 0 }' "$TMP/$kind.folded" 2>/dev/null) samples"
	[[ $rc != 137 ]] && ! grep -q 'Command terminated by signal' "$TMP/$kind.time" ||
		fail "$kind: record did not finish within $LIMIT s (killed)"
	((rc == 0)) || fail "$kind: record failed (rc $rc): $(cat "$TMP/$kind.err")"
	[[ -n $rss ]] && ((rss < RSS_MAX_KB)) || fail "$kind: max RSS ${rss:-?} KiB over $RSS_MAX_KB KiB"
	! grep -aq -e "$SECRET" -e "$ENVSECRET" "$TMP/$kind.out" "$TMP/$kind.err" "$TMP/$kind.folded" ||
		fail "$kind: a secret reached the output: $(grep -ah -e "$SECRET" -e "$ENVSECRET" "$TMP/$kind".{out,err,folded} | head -3)"
}

record valid
named=$(awk '/jit_spin_loop/ { s += $NF } END { print s + 0 }' "$TMP/valid.folded")
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/valid.folded")
((total >= MIN_SAMPLES && named * 100 >= total * 90)) ||
	fail "valid map: JIT frames not named: $named of $total: $(head -3 "$TMP/valid.folded")"
for kind in fifo hostlink environ maps sparse; do
	record $kind
	total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/$kind.folded")
	((total >= MIN_SAMPLES)) || fail "$kind: only $total samples"
	! grep -q jit_spin_loop "$TMP/$kind.folded" || fail "$kind: a JIT name from a refused map"
	info "$kind: $(grep -a 'refused' "$TMP/$kind.err" | tr '\n' '|')"
done
# Refusals are counted and named (-v): one notice per (pid, path), the
# figures line by reason. The FIFO is never opened (special); the link to
# the host file leads nowhere inside the container (link); the links into
# /proc/self reach the container's own procfs (pseudofs); the sparse file is
# read with a cap, not refused.
expect_refusal() { # KIND REASON
	local notice="cgperf-agent record: refused pid $jp /tmp/perf-1.map: $2"
	[[ $(grep -acF -- "$notice" "$TMP/$1.err") == 1 ]] ||
		fail "$1: not exactly one notice '$notice': $(grep -a refused "$TMP/$1.err")"
	grep -aq "container files refused [0-9]* (.*$2 [1-9]" "$TMP/$1.err" ||
		fail "$1: no $2 refusal in the figures: $(grep -a 'container files' "$TMP/$1.err")"
}
expect_refusal fifo special
expect_refusal hostlink link
expect_refusal environ pseudofs
expect_refusal maps pseudofs
for kind in valid sparse; do
	grep -aq 'container files refused 0$' "$TMP/$kind.err" ||
		fail "$kind: refusals counted for an acceptable map: $(grep -a refused "$TMP/$kind.err")"
done

# ---- FUSE: a perf map whose read waits for its daemon -----------------------
# A FUSE daemon in the container answers the map's READ only after
# $STALL s. The perf map is read by a helper process for a loader thread
# (agent/symbols/jitload.h): record's sampling, output and exit must not wait for
# it (a thread of its own stuck there would hold its exit: the kernel's
# FUSE wait cannot be interrupted once the daemon has the request); the JIT
# frames stay unnamed; the helper goes once the daemon does.
if [[ ! -c /dev/fuse ]] || ! command -v nsenter >/dev/null; then
	info "FUSE case skipped: no /dev/fuse or nsenter"
else
	STALL=20
	nsenter -t "$jp" -m -- mkdir -p /tmp/stall || fail "cannot make /tmp/stall in the namespace"
	# The daemon runs from the container's /tmp: the tree may be under a /tmp it hides.
	cp "$BUILD_DIR/tools/stallfs" "/proc/$jp/root/tmp/stallfs" || fail "cannot copy stallfs into the namespace"
	stallfs_up "$TMP/stallfs.out" /tmp/stall read $STALL "$(cat "$TMP/valid.map")"
	SF=$SF_PID
	rm -f "$map"
	ln -s /tmp/stall/map "$map"
	t0=$(date +%s.%N)
	"$AGENT" record -v -g -G "$rel" -F 199 --duration $DUR -o "$TMP/fuse.folded" \
		>"$TMP/fuse.out" 2>"$TMP/fuse.err" &
	AGP=$!; bg_track $AGP
	for i in $(seq $((LIMIT * 10))); do
		grep -q ' samples in ' "$TMP/fuse.err" && break
		sleep 0.1
	done
	t1=$(date +%s.%N)
	grep -q ' samples in ' "$TMP/fuse.err" ||
		fail "fuse: no output within $LIMIT s while the map's read stalls: $(cat "$TMP/fuse.err")"
	out_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	for ((i = 0; i < $(scaled 50); i++)); do
		kill -0 $AGP 2>/dev/null || break
		sleep 0.1
	done
	kill -0 $AGP 2>/dev/null && fail "fuse: record still running $(scaled 5) s after its output, its map's read stalled"
	wait $AGP || fail "fuse: record failed: $(cat "$TMP/fuse.err")"
	exit_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	helper=$(pgrep -f -- "__read-perf-map /proc/$jp/root" || true)
	[[ -n $helper ]] || info "note: no helper left waiting (the read ended early?)"
	kill $SF
	helper_gone fuse
	total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/fuse.folded")
	info "fuse: output after $out_s s, exit after $exit_s s (duration $DUR s, daemon stalls $STALL s), $total samples, $(grep -c 'perf-1.map+' "$TMP/fuse.folded") unnamed JIT stacks"
	((total >= MIN_SAMPLES)) || fail "fuse: only $total samples: sampling waited for the map"
	grep -q 'perf-1.map+0x' "$TMP/fuse.folded" || fail "fuse: JIT frames not kept by address: $(head -3 "$TMP/fuse.folded")"
	! grep -q jit_spin_loop "$TMP/fuse.folded" || fail "fuse: a name from a map still stalled"
	rm -f "$map"

	# ---- FUSE: a binary whose daemon hangs after it was exec'd ------------
	# A second FUSE mount in the container serves a copy of the spin
	# workload, exec'd from there (comm "map"); the daemon then hangs every
	# LOOKUP, GETATTR, OPEN and READ of it (armed by SIGUSR1). The binary is
	# opened for its symbols when its first sample is drained: files under a
	# FUSE mount point go to a helper process (agent/symbols/slowopen.h),
	# waited for at most 200 ms. Before the hang its frames are named
	# through the helper's memfd; during it, record ends and exits on time,
	# the frames stay unnamed and the file is refused as "stalled".
	nsenter -t "$jp" -m -- mkdir -p /tmp/binfs || fail "cannot make /tmp/binfs in the namespace"
	cp "$W/spin" "/proc/$jp/root/tmp/spin" || fail "cannot copy the spin workload into the namespace"
	stallfs_up "$TMP/binfs.out" /tmp/binfs +all $STALL @/tmp/spin
	BF=$SF_PID
	sh -c "echo \$\$ > '$cg/cgroup.procs'; exec nsenter -t $jp -m -- /tmp/binfs/map 120" \
		>"$TMP/binfs-spin.out" 2>&1 &
	BW=$!; bg_track $BW
	for ((i = 0; i < $(scaled 50); i++)); do
		[[ $(cat /proc/$BW/comm 2>/dev/null) == map ]] && break
		sleep 0.1
	done
	[[ $(cat /proc/$BW/comm 2>/dev/null) == map ]] ||
		fail "the workload did not start from the FUSE mount: $(cat "$TMP/binfs-spin.out")"
	grep -q ' /tmp/binfs/map$' /proc/$BW/maps || fail "the workload's binary is not mapped from /tmp/binfs"
	record binfs
	grep -q '^map;main ' "$TMP/binfs.folded" ||
		fail "binfs: the FUSE binary's frames not named through the helper: $(grep '^map' "$TMP/binfs.folded" | head -3)"
	grep -aq 'container files refused 0$' "$TMP/binfs.err" ||
		fail "binfs: refusals for a FUSE binary that answers: $(grep -a refused "$TMP/binfs.err")"
	kill -USR1 $BF
	record binfs-stall
	total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/binfs-stall.folded")
	bsamples=$(awk '/^map;/ { s += $NF } END { print s + 0 }' "$TMP/binfs-stall.folded")
	info "binfs-stall: $bsamples samples of the FUSE binary, $(grep -a 'container files' "$TMP/binfs-stall.err")"
	((total >= MIN_SAMPLES && bsamples > 0)) || fail "binfs-stall: only $total samples ($bsamples of the FUSE binary)"
	grep -q '^map;map+0x' "$TMP/binfs-stall.folded" ||
		fail "binfs-stall: the FUSE binary's frames not kept unnamed: $(grep '^map' "$TMP/binfs-stall.folded" | head -3)"
	grep -aqF "refused pid $BW /tmp/binfs/map: stalled" "$TMP/binfs-stall.err" ||
		fail "binfs-stall: no stalled notice: $(grep -a refused "$TMP/binfs-stall.err")"
	grep -aq "container files refused [0-9]* (.*stalled [1-9]" "$TMP/binfs-stall.err" ||
		fail "binfs-stall: no stalled refusal in the figures: $(grep -a 'container files' "$TMP/binfs-stall.err")"
	helper=$(pgrep -f -- "__read-file --max [0-9]* $BW /tmp/binfs/map" || true)
	[[ -n $helper ]] || info "note: no helper left waiting (the daemon answered early?)"
	kill $BW
	kill $BF
	helper_gone binfs
fi

# ---- run: continuous mode sees the FIFO, then the host link -----------------
mkdir -p "$TMP/fc"
python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc" --port 0 --port-file "$TMP/port" \
	>"$TMP/fc.log" 2>&1 &
FC=$!; bg_track $FC
for ((i = 0; i < $(scaled 50); i++)); do
	[[ -s $TMP/port ]] && break
	sleep 0.1
done
[[ -s $TMP/port ]] || fail "collector did not start: $(cat "$TMP/fc.log")"
for kind in fifo hostlink; do
	plant $kind
	mport=$(free_port)
	cat >"$TMP/run-$kind.yaml" <<YAML
host: {name: test-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {events: [task-clock]}
sampling: {frequency: 199, call_graph: fp}
push: {interval: 1s, collectors: ["http://127.0.0.1:$(cat "$TMP/port")/api/v1/push"], timeout: 5s, spool: {dir: $TMP/spool-$kind}}
log: {level: debug}
metrics: {listen: "127.0.0.1:$mport"}
YAML
	"$AGENT" run --config "$TMP/run-$kind.yaml" 2>"$TMP/run-$kind.log" &
	AG=$!; bg_track $AG
	for ((i = 0; i < $(scaled 100); i++)); do
		grep -q 'msg=started' "$TMP/run-$kind.log" && break
		kill -0 $AG 2>/dev/null || fail "run ($kind): agent exited: $(cat "$TMP/run-$kind.log")"
		sleep 0.1
	done
	reason=$([[ $kind == fifo ]] && echo special || echo link)
	# two intervals of samples of the JIT, and the refusal on /metrics (the
	# map is opened when the JIT's first samples are named, at a batch)
	for ((i = 0; i < $(scaled 150); i++)); do
		curl -sf "http://127.0.0.1:$mport/metrics" >"$TMP/metrics-$kind" ||
			fail "run ($kind): no /metrics"
		(($(grep -c 'msg="batch queued"' "$TMP/run-$kind.log") >= 2)) &&
			grep -q "^cgperf_agent_files_refused_total{host=\"test-host\",reason=\"$reason\"} [1-9]" \
				"$TMP/metrics-$kind" && break
		sleep 0.1
	done
	kill -TERM $AG
	for ((i = 0; i < $(scaled 100); i++)); do
		kill -0 $AG 2>/dev/null || break
		sleep 0.1
	done
	kill -0 $AG 2>/dev/null && { kill -KILL $AG; fail "run ($kind): still running $(scaled 10) s after SIGTERM"; }
	wait $AG || fail "run ($kind) failed: $(tail -n 20 "$TMP/run-$kind.log")"
	batches=$(grep -c 'msg="batch queued"' "$TMP/run-$kind.log")
	info "run ($kind): stopped on SIGTERM, $batches batches"
	((batches >= 2)) || fail "run ($kind): $batches batches in $(scaled 15) s"
	grep -q "^cgperf_agent_files_refused_total{host=\"test-host\",reason=\"$reason\"} 1\$" \
		"$TMP/metrics-$kind" ||
		fail "run ($kind): no $reason refusal on /metrics: $(grep files_refused "$TMP/metrics-$kind")"
	[[ $(grep -c "msg=\"container file refused\" pid=$jp path=/tmp/perf-1.map reason=$reason" \
		"$TMP/run-$kind.log") == 1 ]] ||
		fail "run ($kind): not one notice of the refusal: $(grep refused "$TMP/run-$kind.log")"
done
kill $FC; wait $FC 2>/dev/null
ls "$TMP"/fc/body-* >/dev/null 2>&1 || fail "run: no batch reached the collector"
for f in "$TMP"/fc/body-*; do "$AGENT" wire-dump "$f"; done >"$TMP/batches.jsonl" ||
	fail "run: a batch does not decode"
grep -q '"jit;' "$TMP/batches.jsonl" || fail "run: no stack of the JIT process pushed"
! grep -raq -e "$SECRET" -e "$ENVSECRET" "$TMP"/run-*.log "$TMP"/spool-* "$TMP"/fc "$TMP/batches.jsonl" ||
	fail "run: a secret reached the log, the spool or a batch"
exit 0
