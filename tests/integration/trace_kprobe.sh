#!/bin/bash
# Kernel probes (k:FUNC...). On a kernel without kprobes (this project's VM:
# no kprobe PMU, no kprobe_events), trace and run refuse with the reason and
# exit 2 before anything is opened or started. On a kernel with them, the
# same commands count do_sys_openat2 hits while files are opened, fetch an
# argument by register and by BTF name, and name near functions for a typo.
# holds: kprobe_events
source "$(dirname "$0")/../lib/common.sh"

PMU=/sys/bus/event_source/devices/kprobe/type
TRACEFS=$(awk '$3 == "tracefs" { print $2; exit }' /proc/mounts)
have_pmu=0 have_kev=0
[[ -e $PMU ]] && have_pmu=1
[[ -n $TRACEFS && -e $TRACEFS/kprobe_events ]] && have_kev=1

# Bad specs are refused by the grammar on any kernel.
"$AGENT" trace -a -e 'k:vfs_read %edi' --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q 'unknown register "%edi".*%di:u32' "$TMP/err" ||
	fail "bad register: rc=$rc $(cat "$TMP/err")"
"$AGENT" trace -a -e 'k:vfs_read $retval' --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q '\$retval is for a %return probe' "$TMP/err" ||
	fail "\$retval without %return: rc=$rc $(cat "$TMP/err")"

cat >"$TMP/k.yaml" <<EOF
host: {agent_id_file: $TMP/agent-id}
push: {spool: {dir: $TMP/spool}}
counters:
  enabled: false
sampling:
  enabled: false
probes:
  - spec: "k:do_sys_openat2 dfd"
EOF

if ((!have_pmu && !have_kev)); then
	info "no kprobe PMU ($PMU) and no kprobe_events in tracefs (${TRACEFS:-not mounted}): the refusal"
	# trace: exit 2, the reason, and the command never started
	"$AGENT" trace -e 'k:do_sys_openat2' -- touch "$TMP/ran" >"$TMP/out" 2>"$TMP/err"; rc=$?
	cat "$TMP/err"
	[[ $rc -eq 2 ]] || fail "trace: exit $rc, want 2"
	grep -q 'k:do_sys_openat2: kernel probes are not available: no kprobe PMU in /sys/bus/event_source/devices and no kprobe_events in tracefs' "$TMP/err" ||
		fail "trace: no reason given: $(cat "$TMP/err")"
	[[ ! -e $TMP/ran ]] || fail "trace started the command before refusing"
	[[ ! -s $TMP/out ]] || fail "trace printed results: $(cat "$TMP/out")"
	"$AGENT" trace -a -e 'k:do_sys_openat2' --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
	[[ $rc -eq 2 ]] && grep -q 'kernel probes are not available' "$TMP/err" ||
		fail "trace -a: rc=$rc $(cat "$TMP/err")"
	# run: the same refusal for a configured probe
	timeout 20 "$AGENT" run --config "$TMP/k.yaml" --duration 1 2>"$TMP/err"; rc=$?
	[[ $rc -eq 2 ]] && grep -q 'bad probe.*kernel probes are not available' "$TMP/err" ||
		fail "run: rc=$rc $(cat "$TMP/err")"
	echo "OK: refused (this kernel has no kprobes)"
	exit 0
fi

info "kprobes here: PMU=$have_pmu kprobe_events=$have_kev"
# count_hits OUT ARGS...: trace -p ARGS on a shell that, once the probes
# are placed (it waits 2 s first, scaled), opens a file 2000 times (bash
# redirections: openat, no exec) and exits, which ends the trace; then check
# its 2000 opens (and the few of its own). -p rather than -- COMMAND: in the
# QEMU guest of tests/tools/kprobe_vm.sh, cgroup-filtered events fail.
count_hits() {
	local out=$1 sh
	shift
	bash -c "sleep $(scaled 2); for _ in \$(seq 2000); do read -r _ </etc/hostname; done" &
	sh=$!
	bg_track $sh
	"$AGENT" trace -p $sh "$@" --json >"$out" 2>"$TMP/err" || fail "trace $* failed: $(cat "$TMP/err")"
	python3 - "$out" <<'PY' || fail "trace $*: not the 2000 opens: $(cat "$out")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
hits = sum(r["hits"] for r in rows)
print("# hits:", hits)
assert 2000 <= hits <= 2100, rows
PY
}

# Counted while files are opened.
count_hits "$TMP/k.json" -e 'k:do_sys_openat2'

# A typo: near names, exit 2.
"$AGENT" trace -a -e 'k:do_sys_opnat2' --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q 'did you mean.*do_sys_openat2' "$TMP/err" ||
	fail "typo: rc=$rc $(cat "$TMP/err")"

if ((have_kev)); then
	# An argument by register, and by name where the kernel has BTF.
	spec='k:do_sys_openat2 dfd=%di:s32'
	[[ -e /sys/kernel/btf/vmlinux ]] && spec='k:do_sys_openat2 dfd'
	count_hits "$TMP/a.json" -e "$spec" --hist dfd
	grep -q '"hist"' "$TMP/a.json" || fail "no dfd histogram: $(cat "$TMP/a.json")"
	! grep -q 'cgperf/' "$TRACEFS/kprobe_events" || fail "dynamic event left behind: $(cat "$TRACEFS/kprobe_events")"
fi
echo "OK: kernel probes counted"
