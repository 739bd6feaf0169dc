#!/usr/bin/python3
# podman-args.py DAEMONSET.yaml [--seccomp-dir DIR] [--map HOST=LOCAL]...:
# the `podman run` options that give the DaemonSet's first container what
# its pod spec asks for, one per line, for running that container without a
# kubelet (`podman kube play` 4.3 drops hostPID and seccompProfile; this
# does not): hostPID, hostNetwork, runAsUser/runAsGroup, capabilities,
# allowPrivilegeEscalation, readOnlyRootFilesystem, a Localhost seccomp
# profile (looked for in DIR, as the kubelet looks in its seccomp root),
# CPU and memory limits, hostPath volumes (--map moves one elsewhere) and
# memory emptyDirs. configMap volumes are left out (mount your own config).
# Any field of the pod spec it does not translate is an error, so a new
# field in the manifest cannot be silently dropped.
import sys
import yaml

HANDLED_POD = {"hostPID", "hostNetwork", "containers", "volumes", "dnsPolicy",
               "automountServiceAccountToken", "priorityClassName", "tolerations",
               "terminationGracePeriodSeconds", "serviceAccountName"}
HANDLED_SC = {"runAsUser", "runAsGroup", "runAsNonRoot", "privileged", "allowPrivilegeEscalation",
              "readOnlyRootFilesystem", "capabilities", "seccompProfile"}


def memory(v):
    units = {"Ki": "k", "Mi": "m", "Gi": "g"}
    return v[:-2] + units[v[-2:]] if v[-2:] in units else v


def cpus(v):
    return str(int(v[:-1]) / 1000) if v.endswith("m") else v


def main(argv):
    path, seccomp_dir, maps = argv[0], None, {}
    rest = argv[1:]
    while rest:
        if rest[0] == "--seccomp-dir":
            seccomp_dir = rest[1]
        elif rest[0] == "--map":
            host, local = rest[1].split("=", 1)
            maps[host] = local
        else:
            sys.exit(f"unknown option {rest[0]}")
        rest = rest[2:]
    ds = yaml.safe_load(open(path))
    spec = ds["spec"]["template"]["spec"]
    unknown = set(spec) - HANDLED_POD
    c = spec["containers"][0]
    sc = c.get("securityContext", {})
    unknown |= set(sc) - HANDLED_SC
    if unknown:
        sys.exit(f"{path}: fields not translated: {sorted(unknown)}")
    out = []
    if spec.get("hostPID"):
        out.append("--pid=host")
    if spec.get("hostNetwork"):
        out.append("--network=host")
    if "runAsUser" in sc:
        out.append(f"--user={sc['runAsUser']}:{sc.get('runAsGroup', sc['runAsUser'])}")
    if sc.get("privileged"):
        out.append("--privileged")
    caps = sc.get("capabilities", {})
    if caps.get("drop"):
        out.append("--cap-drop=" + ",".join(d.lower() for d in caps["drop"]))
    if caps.get("add"):
        out.append("--cap-add=" + ",".join(caps["add"]))
    if sc.get("allowPrivilegeEscalation") is False:
        out.append("--security-opt=no-new-privileges")
    if sc.get("readOnlyRootFilesystem"):
        out.append("--read-only")
    prof = sc.get("seccompProfile", {})
    if prof.get("type") == "Localhost":
        if not seccomp_dir:
            sys.exit("a Localhost seccomp profile: give --seccomp-dir")
        out.append(f"--security-opt=seccomp={seccomp_dir}/{prof['localhostProfile']}")
    elif prof.get("type") == "Unconfined":
        out.append("--security-opt=seccomp=unconfined")
    lim = c.get("resources", {}).get("limits", {})
    if "cpu" in lim:
        out.append("--cpus=" + cpus(lim["cpu"]))
    if "memory" in lim:
        out.append("--memory=" + memory(lim["memory"]))
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = vols[m["name"]]
        ro = ":ro" if m.get("readOnly") else ""
        if "hostPath" in v:
            host = maps.get(v["hostPath"]["path"], v["hostPath"]["path"])
            out.append(f"--volume={host}:{m['mountPath']}{ro}")
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            out.append(f"--tmpfs={m['mountPath']}" + (f":size={memory(size)}" if size else ""))
        elif "configMap" not in v:
            sys.exit(f"volume {m['name']}: only hostPath, emptyDir and configMap are translated")
    print("\n".join(out))


main(sys.argv[1:])
