#!/bin/bash
# Kubernetes identity from a real containerd (Debian's): a container started
# through containerd with the annotations the kubelet's CRI plugin writes
# into its spec (io.kubernetes.cri.container-name, sandbox-name,
# sandbox-namespace, image-name), in a kubepods-shaped cgroupfs path, shows
# pod, namespace, container and image in `cgroups`, and `record --target
# namespace=...,container=...` samples it. containerd runs here with its state
# in /run/containerd (where the agent looks), a root and socket of the test,
# and without its CRI plugin; `ctr run --rootfs` needs no image store.
# holds: containerd
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
command -v containerd >/dev/null && command -v ctr >/dev/null ||
	skip "containerd not installed (docker.io brings it)"
command -v runc >/dev/null || skip "runc not installed"
[[ -x /bin/busybox ]] || skip "busybox-static not installed"
[[ -S /run/containerd/containerd.sock ]] && pgrep -x containerd >/dev/null &&
	skip "a containerd of the host uses /run/containerd; not starting a second one there"
D=$TMP/containerd
mkdir -p "$D"
busybox_tree "$TMP/rootfs"
HAD_RUN=0
[[ -d /run/containerd ]] && HAD_RUN=1
CPID=
ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
POD=8f14e45f-ceea-467a-9575-5fd0c2e6a1b2
CG=/cgperf-test-$$-cd/kubepods/besteffort/pod$POD/$ID
C=(ctr -a "$D/c.sock" -n k8s.io)

_ctr_cleanup() {
	[[ -n $CPID ]] || return 0
	"${C[@]}" task kill -s KILL "$ID" >/dev/null 2>&1
	for i in $(seq 30); do "${C[@]}" task rm "$ID" >/dev/null 2>&1 && break; sleep 0.1; done
	"${C[@]}" container rm "$ID" >/dev/null 2>&1
	kill -TERM "$CPID" 2>/dev/null
	for i in $(seq 50); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$CPID" 2>/dev/null
	((HAD_RUN)) || rm -rf /run/containerd
	# runc's cgroupfs driver made the path in every hierarchy
	for h in /sys/fs/cgroup/*/cgperf-test-$$-cd /sys/fs/cgroup/cgperf-test-$$-cd; do
		[[ -d $h ]] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	CPID=
}
trap '_ctr_cleanup; _cleanup' EXIT

printf 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n' >"$D/config.toml"
containerd --config "$D/config.toml" --root "$D/root" --state /run/containerd \
	--address "$D/c.sock" >"$D/log" 2>&1 &
CPID=$!
for i in $(seq $(( 100 * TIME_SCALE ))); do "${C[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${C[@]}" version >/dev/null 2>&1 || fail "containerd did not start: $(tail -5 "$D/log")"
"${C[@]}" run -d --cgroup "$CG" \
	--annotation io.kubernetes.cri.container-type=container \
	--annotation io.kubernetes.cri.container-name=web \
	--annotation io.kubernetes.cri.sandbox-name=frontend-7d9c \
	--annotation io.kubernetes.cri.sandbox-namespace=shop \
	--annotation io.kubernetes.cri.image-name=docker.io/example/web:1.0 \
	--rootfs "$TMP/rootfs" "$ID" /bin/sh -c 'while :; do :; done' >"$D/run.log" 2>&1 ||
	fail "ctr run failed: $(cat "$D/run.log")"
[[ -f /run/containerd/io.containerd.runtime.v2.task/k8s.io/$ID/config.json ]] ||
	fail "no bundle config.json where containerd keeps it"

cgroups_expect container_id "$ID" "{\"runtime\": \"containerd\", \"pod_uid\": \"$POD\",
	\"container_name\": \"web\", \"pod_name\": \"frontend-7d9c\", \"namespace\": \"shop\",
	\"image\": \"docker.io/example/web:1.0\", \"identity_source\": \"oci-config\"}"
"$AGENT" cgroups --containers >"$TMP/c.txt"
grep -q "shop/frontend-7d9c/web" "$TMP/c.txt" || fail "text NAME column: $(cat "$TMP/c.txt")"
info "cgroups: shop/frontend-7d9c/web, docker.io/example/web:1.0 from containerd's config.json"

record_target_only "namespace=shop,container=web" \
	"$("${C[@]}" task ls | awk -v id="$ID" '$1 == id { print $2 }')"
