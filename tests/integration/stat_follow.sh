#!/bin/bash
# With -a the agent follows cgroups that appear and disappear while it runs.
# holds: cgroups-1000
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
parent=$(cg_make follow)
"$AGENT" stat -a -e task-clock -I 200 --duration $(scaled 6) --json >"$TMP/out.jsonl" 2>"$TMP/err" &
ag=$!; bg_track $ag
# The agent has counted an interval before the cgroup appears.
for ((i = 0; i < $(scaled 100); i++)); do
	[[ -s $TMP/out.jsonl ]] && break
	sleep 0.1
done
[[ -s $TMP/out.jsonl ]] || fail "no interval printed: $(cat "$TMP/err")"
sleep 0.5
mkdir "$parent/late"
"$W/spin" 1.2 & sp=$!; bg_track $sp; cg_enter "$parent/late" $sp
wait $sp
usage=$(awk '/^usage_usec/ { print $2 }' "$parent/late/cpu.stat")
sleep 0.5
rmdir "$parent/late" || fail "cannot remove $parent/late"
wait $ag || fail "agent failed: $(cat "$TMP/err")"
rel=${parent#"$(cg2_mount)"}/late
python3 - "$rel" "$TMP/out.jsonl" "$usage" <<'PY' || fail "follow check failed"
import json, sys
rel, path = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path)]
mine = [r for r in rows if r["cgroup"] == rel]
first = min(r["interval"] for r in rows)
print(f"# {len(rows)} rows, {len(mine)} for {rel}")
assert mine, "new cgroup never reported"
assert min(r["interval"] for r in mine) > first + 0.5, "reported before it existed?"
busy = sum(r["value"] for r in mine)
used = int(sys.argv[3]) / 1000
print(f"# task-clock in {rel}: {busy:.1f} ms; the cgroup's cpu.stat says {used:.1f} ms")
# The spin entered the cgroup a moment after it started, so the cgroup's own
# accounting is the reference, not the spin's wall time.
assert used > 100, f"the spin hardly ran ({used} ms)"
assert abs(busy - used) <= 0.10 * used + 20, f"task-clock {busy} ms vs cpu.stat {used} ms"
last = max(r["interval"] for r in mine)
assert last < max(r["interval"] for r in rows), "removed cgroup still reported at the end"
PY
exit 0
