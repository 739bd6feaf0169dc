#!/bin/bash
# packaging/kubernetes/: every manifest checked offline against the
# Kubernetes API types of Debian's python3-kubernetes (packaging/kubernetes/
# check.py: kinds, field names, value types, required fields), a misspelt
# field and a wrong type are caught, the DaemonSet asks for capabilities and
# not privileged, the agent's configuration in the ConfigMap loads, and
# podman-args.py translates every field of the pod spec (and refuses one it
# does not know).
# holds: var-lib-cgperf
source "$(dirname "$0")/../lib/common.sh"
K=$ROOT/packaging/kubernetes
/usr/bin/python3 -c 'import kubernetes.client, yaml' 2>/dev/null ||
	skip "python3-kubernetes missing (packaging/install-deps.sh --deb installs it)"
/usr/bin/python3 "$K/check.py" "$K"/*.yaml >"$TMP/check" 2>&1 || { cat "$TMP/check"; fail "manifests do not check"; }
sed 's/^/# /' "$TMP/check"
sed -e 's/hostPID: true/hostPid: true/' -e 's/runAsUser: 999/runAsUser: "x"/' "$K/agent-daemonset.yaml" >"$TMP/bad.yaml"
/usr/bin/python3 "$K/check.py" "$TMP/bad.yaml" >"$TMP/bad" 2>&1 && fail "check.py accepted a misspelt field"
grep -q "unknown field 'hostPid'" "$TMP/bad" && grep -q 'runAsUser: want int' "$TMP/bad" || { cat "$TMP/bad"; fail "check.py missed an error"; }
/usr/bin/python3 - "$K/agent-daemonset.yaml" "$K/configmap.yaml" "$TMP/agent.yaml" <<'PY' || fail "DaemonSet shape"
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
sc = c["securityContext"]
assert spec["hostPID"] is True
assert sc.get("privileged") is False and sc["runAsNonRoot"] is True
assert sc["capabilities"]["drop"] == ["ALL"]
assert sorted(sc["capabilities"]["add"]) == ["DAC_READ_SEARCH", "PERFMON", "SYS_PTRACE"], sc
ro = {m["mountPath"]: m.get("readOnly", False) for m in c["volumeMounts"]}
assert ro["/sys/fs/cgroup"] and ro["/sys/kernel/tracing"] and not ro["/var/lib/cgperf"], ro
assert c["resources"]["limits"]["memory"] and c["resources"]["limits"]["cpu"]
docs = list(yaml.safe_load_all(open(sys.argv[2])))
open(sys.argv[3], "w").write(docs[0]["data"]["agent.yaml"])
PY
"$AGENT" run --config "$TMP/agent.yaml" --print-config >"$TMP/eff" 2>&1 || { cat "$TMP/eff"; fail "the ConfigMap's agent.yaml does not load"; }
# the pod spec as podman options (pkg_image runs the image with them): every
# field translated, an unknown one refused
/usr/bin/python3 "$K/podman-args.py" "$K/agent-daemonset.yaml" --seccomp-dir /s >"$TMP/args" 2>&1 ||
	{ cat "$TMP/args"; fail "podman-args.py"; }
for o in --pid=host --user=999:999 --cap-drop=all --cap-add=PERFMON,SYS_PTRACE,DAC_READ_SEARCH \
	--security-opt=no-new-privileges --read-only --security-opt=seccomp=/s/cgperf-agent.json \
	--volume=/sys/fs/cgroup:/sys/fs/cgroup:ro; do
	grep -qxF -- "$o" "$TMP/args" || { cat "$TMP/args"; fail "podman-args.py lacks $o"; }
done
sed 's/hostPID: true/hostPID: true\n      hostIPC: true/' "$K/agent-daemonset.yaml" >"$TMP/ipc.yaml"
/usr/bin/python3 "$K/podman-args.py" "$TMP/ipc.yaml" --seccomp-dir /s >"$TMP/ipc" 2>&1 &&
	fail "podman-args.py dropped hostIPC silently"
grep -q hostIPC "$TMP/ipc" || { cat "$TMP/ipc"; fail "podman-args.py did not name hostIPC"; }
echo "PASS: pkg_kube (manifests match the API types; DaemonSet: hostPID, 3 capabilities, read-only cgroup and tracefs)"
