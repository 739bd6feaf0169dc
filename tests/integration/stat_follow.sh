#!/bin/bash
# With -a the agent follows cgroups that appear and disappear while it runs.
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
parent=$(cg_make follow)
"$AGENT" stat -a -e task-clock -I 200 --duration 4 --json >"$TMP/out.jsonl" 2>"$TMP/err" &
ag=$!; bg_track $ag
sleep 1
mkdir "$parent/late"
"$W/spin" 1.2 & sp=$!; bg_track $sp; cg_enter "$parent/late" $sp
wait $sp
sleep 0.5
rmdir "$parent/late" || fail "cannot remove $parent/late"
wait $ag || fail "agent failed: $(cat "$TMP/err")"
rel=${parent#"$(cg2_mount)"}/late
python3 - "$rel" "$TMP/out.jsonl" <<'PY' || fail "follow check failed"
import json, sys
rel, path = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path)]
mine = [r for r in rows if r["cgroup"] == rel]
first = min(r["interval"] for r in rows)
print(f"# {len(rows)} rows, {len(mine)} for {rel}")
assert mine, "new cgroup never reported"
assert min(r["interval"] for r in mine) > first + 0.5, "reported before it existed?"
busy = sum(r["value"] for r in mine)
print(f"# task-clock in {rel}: {busy:.1f} ms (spin ran 1200 ms)")
assert 1000 <= busy <= 1300, f"task-clock {busy} ms, want ~1200"
last = max(r["interval"] for r in mine)
assert last < max(r["interval"] for r in rows), "removed cgroup still reported at the end"
PY
exit 0
