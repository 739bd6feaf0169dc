#!/bin/bash
# make image: the agent's and the exporter's OCI images (FROM scratch, the
# Debian packages' binaries and their libraries, user cgperf). The agent's
# image, run by podman with what packaging/kubernetes/agent-daemonset.yaml's
# pod spec asks for (packaging/kubernetes/podman-args.py: host PID and
# network, uid 999, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH only,
# no-new-privileges, read-only root, the Localhost seccomp profile make image
# writes, the limits and the read-only cgroup and tracefs mounts), plus the
# host's cgroup namespace, counts a host cgroup by name, names the frames of a
# host process in it, and names the frames of a process inside another
# container (its binary only in that container's image, read through
# /proc/PID/root); the exporter's image answers /healthz.
# `podman kube play` of the same pod spec (the DaemonSet's template as a Pod)
# is checked for what podman 4.3 applies of it: the user, the capabilities,
# no-new-privileges, the read-only root; it leaves out hostPID and the
# seccomp profile, which the test reports (and the run above supplies).
# The agent's image then runs `run`: it serves /metrics and pushes to the
# exporter's image (libmicrohttpd and libcurl, which it loads on first use).
# holds: dpkg cgperf-user var-lib-cgperf podman
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pkg.sh"
source "$(dirname "$0")/../lib/containers.sh"
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
mkdir -p "$TMP/seccomp" "$TMP/state"; chown 999:999 "$TMP/state"
cp "${made[2]}" "$TMP/seccomp/cgperf-agent.json"
mapfile -t KF < <(/usr/bin/python3 "$ROOT/packaging/kubernetes/podman-args.py" \
	"$ROOT/packaging/kubernetes/agent-daemonset.yaml" --seccomp-dir "$TMP/seccomp" \
	--map "/var/lib/cgperf=$TMP/state") || fail "podman-args.py failed"
info "the DaemonSet's pod spec as podman options: ${KF[*]}"
run_agent() {
	"${P[@]}" "${KF[@]}" --cgroupns=host -v "$M:$M:ro" -v "$TMP/out:/out" "${made[0]}" "$@"
}
run_agent stat -G "$rel" -e task-clock --duration 1 >"$TMP/stat" 2>&1 || { cat "$TMP/stat"; fail "stat in the image"; }
tc=$(awk '/task-clock/ { gsub(",", "", $1); print int($1); exit }' "$TMP/stat")
((tc > 100)) || { cat "$TMP/stat"; fail "the image counted $tc msec task-clock in $rel"; }
run_agent record -G "$rel" -g -F 199 --duration 1 -o /out/f.folded >"$TMP/rec" 2>&1 || { cat "$TMP/rec"; fail "record in the image"; }
grep -q 'chain_b;chain_c;chain_leaf' "$TMP/out/f.folded" || { head -3 "$TMP/out/f.folded"; fail "host process frames not named from the image"; }
info "agent image: $rel task-clock $tc msec, $(awk '{ s += $NF } END { print s }' "$TMP/out/f.folded") samples, chain_leaf named"

# a process inside another container: chain-fp and its libraries as an
# image of their own, the binary at a path the host does not have
CIMG=localhost/cgperf-chain:$$
CTR=cgperf-chain-$$
podman_image_of "$CIMG" "$BUILD_DIR/workloads/chain-fp" "/opt/app/ctrchain-$$"
ctr_cleanup() { podman rm -f -t 0 "$CTR" >/dev/null 2>&1; podman rmi -f "$CIMG" >/dev/null 2>&1; }
trap 'ctr_cleanup; img_cleanup' EXIT
"${P[@]:0:2}" "${P[@]:3}" -d --name "$CTR" "$CIMG" "/opt/app/ctrchain-$$" 30 >/dev/null || fail "podman run $CTR"
cpid=$(podman inspect -f '{{.State.Pid}}' "$CTR")
ccg=$(sed -n 's/^0:://p' "/proc/$cpid/cgroup")
[[ -e /opt/app/ctrchain-$$ ]] && fail "the container's binary is visible on the host"
run_agent record -G "$ccg" -g -F 199 --duration 1.5 -o /out/c.folded >"$TMP/rec2" 2>&1 ||
	{ cat "$TMP/rec2"; fail "record of the container in the image"; }
grep -q "ctrchain-$$;.*chain_b;chain_c;chain_leaf" "$TMP/out/c.folded" ||
	{ head -3 "$TMP/out/c.folded"; fail "container process frames not named from the image"; }
info "agent image: $(awk '{ s += $NF } END { print s }' "$TMP/out/c.folded") samples of ctrchain-$$ in $ccg, chain_leaf named"
podman rm -f -t 0 "$CTR" >/dev/null 2>&1

# podman kube play of the DaemonSet's pod spec: what it applies, what not
/usr/bin/python3 - "$ROOT/packaging/kubernetes/agent-daemonset.yaml" "${made[0]}" "$TMP/state" \
	>"$TMP/pod.yaml" <<'PY' || fail "cannot make the Pod"
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
c["image"] = sys.argv[2]
c["args"] = ["cgroups"]
c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "config"]
spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "config"]
for v in spec["volumes"]:
    if v["name"] == "state":
        v["hostPath"]["path"] = sys.argv[3]
spec["restartPolicy"] = "Never"
print(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "cgperf-kube-%s" % sys.argv[2].rsplit(":", 1)[-1]}, "spec": spec}))
PY
kube_cleanup() { podman kube down "$TMP/pod.yaml" >/dev/null 2>&1; }
trap 'kube_cleanup; ctr_cleanup; img_cleanup' EXIT
podman kube play --start=false "$TMP/pod.yaml" >"$TMP/play" 2>&1 || { cat "$TMP/play"; fail "podman kube play"; }
kc=$(podman ps -a --filter "pod=$(awk '/^Pod:/ { getline; print; exit }' "$TMP/play")" --format '{{.Names}}' | grep -v infra | head -1)
[[ -n $kc ]] || { cat "$TMP/play"; fail "no container from kube play"; }
podman inspect "$kc" >"$TMP/kc.json" || fail "podman inspect $kc"
/usr/bin/python3 - "$TMP/kc.json" <<'PY' || fail "kube play did not apply the pod spec: $(head -c 3000 "$TMP/kc.json")"
import json, sys
c = json.load(open(sys.argv[1]))[0]
hc = c["HostConfig"]
applied = {
    "user 999:999": c["Config"]["User"] == "999:999",
    "capabilities PERFMON, SYS_PTRACE, DAC_READ_SEARCH only":
        sorted(c["EffectiveCaps"]) == ["CAP_DAC_READ_SEARCH", "CAP_PERFMON", "CAP_SYS_PTRACE"],
    "no-new-privileges": "no-new-privileges" in " ".join(hc.get("SecurityOpt") or []),
    "read-only root": hc["ReadonlyRootfs"] is True,
}
for k, ok in applied.items():
    print("# kube play applies %s: %s" % (k, "yes" if ok else "NO"))
host_pid = hc.get("PidMode") == "host"
seccomp = [o for o in hc.get("SecurityOpt") or [] if o.startswith("seccomp")]
print("# kube play hostPID: %s (PidMode %r); seccompProfile Localhost: %s (%r)" % (
    "applied" if host_pid else "not applied", hc.get("PidMode"),
    "applied" if any("cgperf-agent.json" in o for o in seccomp) else "not applied", seccomp))
assert all(applied.values())
PY

port=$(free_port)
"${P[@]}" -d --network host --name "cgperf-exp-$$" "${made[1]}" --listen 127.0.0.1:$port \
	--data-dir /var/lib/cgperf/exporter >"$TMP/cid" 2>&1 || { cat "$TMP/cid"; fail "exporter image did not start"; }
ok=0
for i in $(seq 1 40); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.25; done
((ok)) || { podman rm -f "cgperf-exp-$$" >/dev/null 2>&1; fail "exporter image does not answer /healthz"; }

# run in the agent's image: /metrics (libmicrohttpd) and pushes (libcurl),
# both loaded on first use, from the image's copies
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec '$BUILD_DIR/workloads/chain-fp' 8" & wp=$!; bg_track $wp
mport=$(free_port)
cat >"$TMP/out/agent.yaml" <<EOF
cgroups:
  include: ["$rel"]
counters:
  events: [task-clock]
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$port/api/v1/push"]
  spool:
    dir: /var/lib/cgperf/spool
metrics:
  listen: "127.0.0.1:$mport"
EOF
run_agent run --config /out/agent.yaml --duration 4 >"$TMP/run" 2>&1 & rp=$!
served=0
for i in $(seq 1 40); do
	curl -fsS "http://127.0.0.1:$mport/metrics" >"$TMP/agent.metrics" 2>/dev/null &&
		grep -q '^cgperf_' "$TMP/agent.metrics" && { served=1; break; }
	sleep 0.25
done
wait $rp; rrc=$?
curl -fsS "http://127.0.0.1:$port/metrics" >"$TMP/exp.metrics" 2>&1
podman rm -f "cgperf-exp-$$" >/dev/null 2>&1
((rrc == 0)) || { tail -20 "$TMP/run"; fail "run in the agent image exited $rrc"; }
((served)) || { tail -20 "$TMP/run"; fail "run in the agent image did not serve /metrics"; }
grep -q "id=\"$rel\"" "$TMP/exp.metrics" ||
	{ tail -20 "$TMP/run"; grep -m3 task "$TMP/exp.metrics"; fail "the exporter image has no series of $rel from the agent image's pushes"; }
info "agent image: run served /metrics ($(grep -c '^cgperf_' "$TMP/agent.metrics") samples) and pushed $rel to the exporter image"
echo "PASS: pkg_image (agent image counts and names a host cgroup as cgperf with 3 capabilities, serves /metrics and pushes; exporter image answers)"
