#!/bin/bash
# make image: the agent's and the exporter's OCI images (FROM scratch, the
# Debian packages' binaries and their libraries, user cgperf). The agent's
# image, run by podman as non-root with the host's PID and cgroup namespaces,
# CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH only and the seccomp
# profile make image writes, counts a host cgroup by name and names the frames
# of a host process in it; the exporter's image answers /healthz.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pkg.sh"
pkg_setup dpkg-buildpackage podman runc
[[ -f /usr/share/containers/seccomp.json ]] || skip "no /usr/share/containers/seccomp.json to derive the profile from"
pkg_build
mapfile -t made < <("$ROOT/packaging/image/build-image.sh" "$PKG_OUT") || fail "build-image.sh failed"
((${#made[@]} == 3)) || fail "build-image.sh made: ${made[*]}"
img_cleanup() {
	podman rmi -f "${made[0]}" "${made[1]}" localhost/cgperf-agent:latest localhost/cgperf-exporter:latest >/dev/null 2>&1
	_pkg_cleanup
}
trap img_cleanup EXIT
for i in 0 1; do
	size=$(podman image inspect -f '{{.Size}}' "${made[i]}")
	user=$(podman image inspect -f '{{.Config.User}}' "${made[i]}")
	info "${made[i]}: $((size / 1024 / 1024)) MiB, user $user"
	[[ $user == 999:999 ]] || fail "${made[i]} does not run as cgperf (999)"
done
P=(podman run --rm --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

cg=$(cg_make img); rel=${cg#"$(cg2_mount)"}
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec '$BUILD_DIR/workloads/chain-fp' 20" & wp=$!; bg_track $wp
mkdir -p "$TMP/out"; chown 999:999 "$TMP/out"
M=$(cg2_mount)
run_agent() {
	"${P[@]}" --network none --pid=host --cgroupns=host --cap-drop=all \
		--cap-add=PERFMON,SYS_PTRACE,DAC_READ_SEARCH --security-opt seccomp="${made[2]}" \
		-v "$M:$M:ro" -v "$TMP/out:/out" "${made[0]}" "$@"
}
run_agent stat -G "$rel" -e task-clock --duration 1 >"$TMP/stat" 2>&1 || { cat "$TMP/stat"; fail "stat in the image"; }
tc=$(awk '/task-clock/ { gsub(",", "", $1); print int($1); exit }' "$TMP/stat")
((tc > 300)) || { cat "$TMP/stat"; fail "the image counted $tc msec task-clock in $rel"; }
run_agent record -G "$rel" -g -F 199 --duration 1 -o /out/f.folded >"$TMP/rec" 2>&1 || { cat "$TMP/rec"; fail "record in the image"; }
grep -q 'chain_b;chain_c;chain_leaf' "$TMP/out/f.folded" || { head -3 "$TMP/out/f.folded"; fail "host process frames not named from the image"; }
info "agent image: $rel task-clock $tc msec, $(awk '{ s += $NF } END { print s }' "$TMP/out/f.folded") samples, chain_leaf named"

port=$(free_port)
"${P[@]}" -d --network host --name "cgperf-exp-$$" "${made[1]}" --listen 127.0.0.1:$port \
	--data-dir /var/lib/cgperf/exporter >"$TMP/cid" 2>&1 || { cat "$TMP/cid"; fail "exporter image did not start"; }
ok=0
for i in $(seq 1 40); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.25; done
podman rm -f "cgperf-exp-$$" >/dev/null 2>&1
((ok)) || fail "exporter image does not answer /healthz"
echo "PASS: pkg_image (agent image counts and names a host cgroup as cgperf with 3 capabilities; exporter image answers)"
