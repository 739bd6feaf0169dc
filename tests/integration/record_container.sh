#!/bin/bash
# record: a binary that exists only inside another mount namespace (a test
# root entered with unshare + chroot, like a container's image) is still
# symbolized by name, through /proc/PID/root.
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
command -v unshare >/dev/null || skip "unshare (util-linux) missing"
root=$TMP/root
mkdir -p "$root/opt/app" "$root/lib64" "$root/lib/x86_64-linux-gnu"
cp "$W/chain-nofp" "$root/opt/app/secretchain-$$"
for lib in $(ldd "$W/chain-nofp" | grep -oE '/[^ ]+'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
[[ ! -e /opt/app/secretchain-$$ ]] || fail "test binary visible on the host"
cg_new ctr
# The "container": its own mount namespace, its own root, in its own cgroup.
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec unshare -m --propagation private chroot '$root' /opt/app/secretchain-$$ 4" &
ctr=$!; bg_track $ctr
# sh -> unshare -> chroot -> the binary, one PID: wait for the last exec
# (the comm is the name cut to 15 characters)
cname=secretchain-$$
cname=${cname:0:15}
for ((i = 0; i < $(scaled 10) * 100; i++)); do
	[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] && break
	sleep 0.01
done
[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] ||
	fail "pid $ctr is '$(cat /proc/$ctr/comm 2>/dev/null)', not $cname, after $(scaled 10)s"
[[ $(readlink /proc/$ctr/root) == "$root" ]] || fail "workload not chrooted: $(readlink /proc/$ctr/root)"
# The floor is what the workload's CPU time is worth at 199 Hz, so a loaded
# host that gives it little CPU does not fail the test.
u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
"$AGENT" record -G "$rel" --call-graph dwarf -F 199 --duration 2 --per-cgroup -o "$TMP/c.folded" -v 2>"$TMP/err" ||
	fail "record failed: $(cat "$TMP/err")"
u1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
want=$(( (u1 - u0) * 199 / 1000000 ))
cat "$TMP/err"
head -5 "$TMP/c.folded"
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/c.folded")
named=$(awk '/secretchain/ && /chain_b;chain_c;chain_leaf/ { s += $NF } END { print s + 0 }' "$TMP/c.folded")
info "samples $total (its CPU time is worth $want), with chain_b;chain_c;chain_leaf named: $named"
((total >= 20 && total * 10 >= want * 7)) || fail "only $total samples from the container, its CPU time is worth $want"
((named * 100 >= total * 90)) || fail "container binary not symbolized: $named of $total"
# --per-cgroup puts the cgroup first.
awk -F';' -v c="$rel" '$1 != c { bad = 1 } END { exit bad }' "$TMP/c.folded" || fail "first frame is not the cgroup $rel"
wait $ctr

# JIT code in the container, in its own pid namespace: the map is the
# container's /tmp/perf-NSPID.map, named with the pid the process sees.
cp "$W/jit" "$root/opt/app/jit-$$"
mkdir -p "$root/tmp"
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec unshare -m -p --fork --propagation private chroot '$root' /opt/app/jit-$$ 3" &
jp=$!; bg_track $jp
# the map is written (and closed) right before the JIT code runs
map=
for ((i = 0; i < $(scaled 10) * 100; i++)); do
	for m in "$root"/tmp/perf-*.map; do [[ -s $m ]] && map=$m; done
	[[ -n $map ]] && break
	sleep 0.01
done
[[ -n $map ]] || fail "JIT workload wrote no perf map in its root in $(scaled 10)s"
[[ ! -e /tmp/perf-1.map && ! -e /tmp/perf-2.map ]] || info "note: a perf-1/2.map exists on the host too"
u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
"$AGENT" record -g -G "$rel" -F 199 --duration 1.5 -o "$TMP/j.folded" 2>"$TMP/err" || fail "record (jit) failed: $(cat "$TMP/err")"
u1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
want=$(( (u1 - u0) * 199 / 1000000 ))
head -3 "$TMP/j.folded"
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/j.folded")
named=$(awk '/jit_spin_loop/ { s += $NF } END { print s + 0 }' "$TMP/j.folded")
info "JIT samples $total (its CPU time is worth $want), named jit_spin_loop: $named"
((total >= 20 && total * 10 >= want * 7 && named * 100 >= total * 90)) || fail "JIT frames not named from the container's perf map: $named of $total"
exit 0
