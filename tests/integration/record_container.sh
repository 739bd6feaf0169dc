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
cg=$(cg_make ctr)
rel=${cg#"$(cg2_mount)"}
# The "container": its own mount namespace, its own root, in its own cgroup.
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec unshare -m --propagation private chroot '$root' /opt/app/secretchain-$$ 4" &
ctr=$!; bg_track $ctr
sleep 0.5
[[ $(readlink /proc/$ctr/root) == "$root" ]] || fail "workload not chrooted: $(readlink /proc/$ctr/root)"
"$AGENT" record -G "$rel" --call-graph dwarf -F 199 --duration 2 --per-cgroup -o "$TMP/c.folded" -v 2>"$TMP/err" ||
	fail "record failed: $(cat "$TMP/err")"
cat "$TMP/err"
head -5 "$TMP/c.folded"
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/c.folded")
named=$(awk '/secretchain/ && /chain_b;chain_c;chain_leaf/ { s += $NF } END { print s + 0 }' "$TMP/c.folded")
info "samples $total, with chain_b;chain_c;chain_leaf named: $named"
((total >= 100)) || fail "only $total samples from the container"
((named * 100 >= total * 90)) || fail "container binary not symbolized: $named of $total"
# --per-cgroup puts the cgroup first.
awk -F';' -v c="$rel" '$1 != c { bad = 1 } END { exit bad }' "$TMP/c.folded" || fail "first frame is not the cgroup $rel"
exit 0
