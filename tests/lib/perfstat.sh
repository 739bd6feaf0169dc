# Counting helpers for the stat integration tests; source it after common.sh.
#
#   read_usage VAR        usage_usec of cgroup $cg into VAR (no fork: keeps
#                         the bracket around a measurement tight)
#   agent_field FILE CGROUP EVENT UNIT
#                         check the agent's --json lines in FILE and print
#                         "value raw time_enabled time_running pcnt_running
#                         cgroup_id" of that (cgroup, event)
#   perf_value FILE CGROUP EVENT
#                         EVENT's value for CGROUP from `perf stat -x,` output
#   stat_nested EVENTS    perf stat -a of EVENTS for cgroup $rel around the
#                         agent's stat of them for $DUR seconds: outputs in
#                         $TMP/perf.csv and $TMP/agent.json, bracketed by
#                         cpu.stat reads (u0, u1) and wall-clock stamps (t0,
#                         t1); fails when either tool does. (Side by side,
#                         perf over `sleep DUR`, the two windows are offset by
#                         the start-ups, and a fixed-rate load lags and
#                         catches up on a busy host.)

read_usage() {
	local k v
	while read -r k v; do
		[[ $k == usage_usec ]] && { printf -v "$1" %s "$v"; return 0; }
	done <"$cg/cpu.stat"
	fail "no usage_usec in $cg/cpu.stat"
}

agent_field() {
	python3 - "$@" <<'EOF'
import json, sys
path, cg, ev, unit = sys.argv[1:5]
found = []
for n, line in enumerate(open(path), 1):
    if not line.strip():
        continue
    try:
        o = json.loads(line)
    except ValueError as e:
        sys.exit(f"agent stdout line {n} is not JSON ({e}): {line.strip()!r}")
    if not isinstance(o, dict):
        sys.exit(f"agent stdout line {n} is not an object: {line.strip()!r}")
    if str(o.get("cgroup", "")).lstrip("/") == cg.lstrip("/") and o.get("event") == ev:
        found.append(o)
if len(found) != 1:
    sys.exit(f"expected 1 JSON object for cgroup {cg} event {ev}, got {len(found)}")
o = found[0]
if o.get("supported") is not True or not isinstance(o.get("value"), (int, float)):
    sys.exit(f"event {ev} not counted: {o}")
if o.get("cgroup") != "/" + cg.lstrip("/"):
    sys.exit(f"cgroup field {o.get('cgroup')!r}, want {'/' + cg.lstrip('/')!r}")
if o.get("unit") != unit:
    sys.exit(f"unit {o.get('unit')!r} for {ev}, want {unit!r}")
for k in ("raw", "time_enabled", "time_running", "pcnt_running", "cgroup_id"):
    if not isinstance(o.get(k), (int, float)):
        sys.exit(f"field {k} missing or not a number: {o}")
print(o["value"], o["raw"], o["time_enabled"], o["time_running"], o["pcnt_running"], o["cgroup_id"])
EOF
}

perf_value() {
	python3 - "$@" <<'EOF'
import sys
path, cg, ev = sys.argv[1:4]
vals = []
for line in open(path):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    f = line.split(",")
    if len(f) < 4 or f[2].split(":")[0] != ev:
        continue
    if f[3].lstrip("/") != cg.lstrip("/"):
        continue
    if f[0].startswith("<"):
        sys.exit(f"perf: {ev} in {cg} is {f[0]}: {line}")
    vals.append(float(f[0]))
if len(vals) != 1:
    sys.exit(f"perf: expected 1 line for {ev} in {cg}, got {len(vals)}")
print(vals[0])
EOF
}

stat_nested() {
	local rc g= e
	for e in ${1//,/ }; do g+="$rel,"; done
	t0=$EPOCHREALTIME
	read_usage u0
	perf stat -a -e "$1" -G "${g%,}" -x, -o "$TMP/perf.csv" -- \
		timeout $((DUR + 30)) "$AGENT" stat -G "$rel" -e "$1" --duration "$DUR" --json \
		>"$TMP/agent.json" 2>"$TMP/agent.err"
	rc=$?
	read_usage u1
	t1=$EPOCHREALTIME
	if ((rc != 0)); then
		sed 's/^/    agent, perf: /' "$TMP/agent.err" "$TMP/agent.json" "$TMP/perf.csv" | tail -n 20 >&2
		fail "perf stat -- agent stat exited with $rc"
	fi
}
