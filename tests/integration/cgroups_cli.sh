#!/bin/bash
# cgperf-agent cgroups: the tree with identity, process counts and processes,
# valid JSON even for hostile cgroup names.
source "$(dirname "$0")/../lib/common.sh"
M=$(cg2_mount)
base=$(cg_make tree)
rel=${base#"$M"}
cid=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
uid=8a3e1d2c-55f1-4b6e-9a07-0d7c1e2f3a4b
mkdir -p "$base/system.slice/docker-$cid.scope" \
	"$base/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice/cri-containerd-$cid.scope" \
	"$base/system.slice/postgresql@15-main.service"
hostile=$'we"ird\\name\twith tab ünï' # the kernel refuses '\n' in cgroup names
mkdir "$base/$hostile" || fail "cannot create hostile cgroup"
sleep 60 & sl=$!; bg_track $sl
cg_enter "$base/system.slice/docker-$cid.scope" $sl
# $! is the forked shell: wait until it is sleep (comm) before it is listed
for ((i = 0; i < $(scaled 50); i++)); do
	[[ $(cat "/proc/$sl/comm" 2>/dev/null) == sleep ]] && break
	sleep 0.1
done

"$AGENT" cgroups --processes --json "$rel" >"$TMP/c.json" || fail "cgroups --json failed"
python3 - "$TMP/c.json" "$rel" "$cid" "$uid" "$sl" "$hostile" <<'PY' || fail "JSON check failed"
import json, sys, os
doc = json.load(open(sys.argv[1]))
rel, cid, uid, pid, hostile = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
by = {c["path"]: c for c in doc["cgroups"]}
assert all(p == rel or p.startswith(rel + "/") for p in by), "subtree filter leaked"
d = by[f"{rel}/system.slice/docker-{cid}.scope"]
assert d["runtime"] == "docker" and d["container_id"] == cid, d
assert d["nprocs"] == 1 and [p["pid"] for p in d["processes"]] == [pid], d
assert d["processes"][0]["comm"] == "sleep", d
assert d["id"] == os.stat(doc["mount"] + d["path"]).st_ino, "id is not the inode"
k = [c for p, c in by.items() if p.endswith(f"cri-containerd-{cid}.scope")][0]
assert k["runtime"] == "containerd" and k["pod_uid"] == uid and k["qos"] == "burstable", k
pg = by[f"{rel}/system.slice/postgresql@15-main.service"]
assert pg["unit"] == "postgresql@15-main.service" and pg["slice"] == "system.slice", pg
assert f"{rel}/{hostile}" in by, "hostile name mangled in JSON"
print("# cgroups:", len(by))
PY

out=$("$AGENT" cgroups --processes "$rel") || fail "cgroups (text) failed"
info "$out"
grep -q "docker:0123456789ab" <<<"$out" || fail "docker identity not shown"
grep -qE "^ +$sl sleep " <<<"$out" || fail "process $sl not listed under its cgroup"
grep -q 'we"ird\\name\\x09with tab' <<<"$out" || fail "control characters not made visible"
[[ $(grep -c "with tab" <<<"$out") -eq 1 ]] || fail "hostile name printed more than once"

out=$("$AGENT" cgroups --containers "$rel")
grep -q "docker-$cid.scope" <<<"$out" || fail "--containers lost the container"
grep -q "postgresql@15" <<<"$out" && fail "--containers kept a plain service"

"$AGENT" cgroups /no/such-$$ >/dev/null 2>"$TMP/e"; rc=$?
[[ $rc -eq 2 ]] || fail "missing subtree: rc=$rc"
grep -q "/no/such-$$" "$TMP/e" || fail "missing subtree not named"

# The whole host's tree, as a user first runs it.
"$AGENT" cgroups --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["cgroups"][0]["path"]=="/"' ||
	fail "host tree JSON invalid"
exit 0
