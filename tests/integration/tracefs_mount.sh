#!/bin/bash
# A host where nothing has mounted tracefs (a fresh VM, no systemd): the agent
# mounts it at /sys/kernel/tracing itself and tracepoints count. Run in a
# private mount namespace with every tracefs/debugfs mount taken away, so the
# host's own mounts are not touched; an unprivileged agent is told instead.
source "$(dirname "$0")/../lib/common.sh"

[[ -d /sys/kernel/tracing ]] || skip "kernel without tracefs (/sys/kernel/tracing absent)"

out=$(unshare -m --propagation private bash -c '
	# innermost first: debugfs/tracing under debugfs, then the rest
	for m in $(findmnt -rn -t tracefs,debugfs -o TARGET | sort -r); do
		umount -l "$m" || exit 3
	done
	findmnt -rn -t tracefs >/dev/null && { echo "tracefs still mounted"; exit 3; }
	"$1" stat -e sched:sched_switch,syscalls:sys_enter_getpid -G / --duration 0.5 --json || exit 4
	"$1" stat -a -e syscalls:sys_enter_write -- dd if=/dev/zero of=/dev/null bs=1 count=1000 status=none || exit 5
	findmnt -rn -t tracefs -o TARGET | sed "s/^/MOUNTED /"
' _ "$AGENT" 2>&1); rc=$?
[[ $rc -eq 0 ]] || fail "stat with tracefs unmounted: rc=$rc: $out"
grep -q '^MOUNTED /sys/kernel/tracing$' <<<"$out" || fail "tracefs not mounted by the agent: $out"
grep -q 'sched:sched_switch' <<<"$out" || fail "no sched:sched_switch count: $out"
grep -q "mounted tracefs at /sys/kernel/tracing" <<<"$out" || fail "the agent did not say it mounted tracefs: $out"
# the dd under `stat -a -e syscalls:sys_enter_write`: its 1000 writes at least
writes=$(awk '/syscalls:sys_enter_write/ && $1 ~ /^[0-9,]+$/ { gsub(",", "", $1); print $1; exit }' <<<"$out")
[[ -n $writes && $writes -ge 1000 ]] || fail "stat -a -e syscalls:sys_enter_write over dd's 1000 writes counted '${writes:-nothing}': $out"
info "with tracefs unmounted: stat -a -e syscalls:sys_enter_write counted $writes writes of dd's 1000"

# Without CAP_SYS_ADMIN nothing is mounted, and the message says what to do.
out=$(unshare -m --propagation private bash -c '
	for m in $(findmnt -rn -t tracefs,debugfs -o TARGET | sort -r); do
		umount -l "$m" || exit 3
	done
	setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$1" stat -e sched:sched_switch -G / --duration 0.2
' _ "$AGENT" 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "stat without CAP_SYS_ADMIN and tracefs: rc=$rc, want 2: $out"
grep -q 'tracefs is not mounted' <<<"$out" || fail "no tracefs explanation: $out"
exit 0
