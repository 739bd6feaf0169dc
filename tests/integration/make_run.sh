#!/bin/bash
# What `make run` starts after its build (packaging/run-local.sh: the
# exporter and a host-wide agent side by side), on a free port and a data
# directory under $TMP, with a spinning workload of a known function in a
# cgroup of this test. Once the agent's first push is stored:
#   - `/` is the explorer page (its script and style load from the binary);
#   - /api/v1/targets knows this host and the workload's cgroup;
#   - /api/v1/stacks?format=json of this host has stacks, the workload's
#     function among them in its cgroup, and its rows add up to its totals;
#   - /metrics and /api/v1/series have the cgroup's task-clock;
# then SIGTERM to run-local.sh (Ctrl-C's path) stops both programs, by PID.
source "$(dirname "$0")/../lib/common.sh"
need curl
need python3
EXPORTER=$BUILD_DIR/cgperf-exporter
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
W=$BUILD_DIR/workloads
[[ -x $W/spin ]] || fail "$W/spin not built (make build-tests)"

cg=$(cg_make run)
rel=${cg#"$(cg2_mount)"}
cg_spawn "$cg" "$W/spin" 600
port=$(free_port)
base=http://127.0.0.1:$port
run=$TMP/run
mkdir -p "$run"
# run-local.sh's paths are relative to the repository, as `make run` runs it.
(cd "$ROOT" && exec setsid env O="$BUILD_DIR" RUN_DIR="$run" RUN_LISTEN="127.0.0.1:$port" \
	packaging/run-local.sh) >"$TMP/run.out" 2>"$TMP/run.err" &
RL=$!
bg_track "$RL"

# The first push comes 10 s after the agent starts (push.interval).
ok=0
for ((i = 0; i < $(scaled 90) * 5; i++)); do
	kill -0 "$RL" 2>/dev/null || fail "run-local.sh ended: $(tail -n 5 "$TMP/run.err") $(tail -n 5 "$run"/*.log 2>/dev/null)"
	if curl -sf "$base/api/v1/targets" -o "$TMP/targets.json" 2>/dev/null &&
		grep -qF "\"$rel\"" "$TMP/targets.json" &&
		curl -sf "$base/api/v1/stacks?format=folded&cgroup=$rel&from=-1h" 2>/dev/null | grep -q '^spin;'; then
		ok=1
		break
	fi
	sleep 0.2
done
((ok)) || fail "no push with cgroup $rel and samples of spin within $(scaled 90) s: $(tail -n 5 "$run/agent.log" 2>/dev/null)"
grep -q "cgperf is running" "$TMP/run.out" || fail "run-local.sh did not say it runs: $(head -c 300 "$TMP/run.out")"
read -r EX AG < <(sed -n 's/^cgperf is running: exporter pid \([0-9]*\), agent pid \([0-9]*\).*/\1 \2/p' "$TMP/run.out")
[[ -n ${EX:-} && -n ${AG:-} ]] || fail "no PIDs in run-local.sh's output"
info "make run: exporter $EX, agent $AG on $base; first push stored"

# The page and its assets.
curl -sf "$base/" -o "$TMP/index.html" || fail "GET / failed"
grep -qi '<script' "$TMP/index.html" || fail "/ is not the explorer page: $(head -c 200 "$TMP/index.html")"
n=0
for a in $(grep -o '\(src\|href\)="[^"]*\.\(js\|css\)"' "$TMP/index.html" | sed 's/.*="\(.*\)"/\1/'); do
	[[ $a == /* ]] || a=/$a
	curl -sf -o /dev/null "$base$a" || fail "the page's asset $a does not load"
	n=$((n + 1))
done
((n >= 2)) || fail "the page names $n script or style assets"

host=$(python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
hosts = {a.get("host") for a in t.get("agents", [])} | {c.get("host") for c in t.get("cgroups", [])}
hosts.discard(None)
print(sorted(hosts)[0] if len(hosts) == 1 else "")' "$TMP/targets.json") || fail "targets is not JSON"
[[ -n $host ]] || fail "want one host on targets: $(head -c 300 "$TMP/targets.json")"

curl -sf "$base/api/v1/stacks?format=json&host=$host&from=-1h" -o "$TMP/host.json" || fail "stacks json of $host"
curl -sf "$base/api/v1/stacks?format=json&host=$host&cgroup=$rel&from=-1h" -o "$TMP/cg.json" || fail "stacks json of $rel"
python3 - "$TMP/host.json" "$TMP/cg.json" <<'PY' || fail "the host's stacks"
import json, sys
h, c = (json.load(open(p)) for p in sys.argv[1:3])
for name, d in (("host", h), ("cgroup", c)):
    rows = d["stacks"]
    assert rows, f"{name}: no stacks"
    assert sum(r[0] for r in rows) == d["totals"]["samples"], f"{name}: rows do not add up to totals"
spin = [r for r in c["stacks"] if c["names"][r[1][0]] == "spin"]
share = sum(r[0] for r in spin) / c["totals"]["samples"]
assert share > 0.5, f"spin in {share:.0%} of the cgroup's samples"
assert h["totals"]["samples"] >= c["totals"]["samples"]
print(f"# host {h['selection']['host']}: {len(h['stacks'])} stacks, {h['totals']['samples']} samples; "
      f"the workload's cgroup {c['totals']['samples']}, spin in {share:.0%}")
PY

curl -sf "$base/metrics" | grep '^cgperf_cgroup_cpu_seconds_total' | grep -qF "\"$rel\"" ||
	fail "no cgperf_cgroup_cpu_seconds_total of $rel on /metrics"
curl -sf "$base/api/v1/series?host=$host&cgroup=$rel&from=-1h" -o "$TMP/series.json" ||
	fail "series of $rel"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = d["data"]["result"]
assert r and sum(float(v[1]) for s in r for v in s["values"]) > 0, "no CPU time in the series"' "$TMP/series.json" ||
	fail "the series: $(head -c 300 "$TMP/series.json")"

# Ctrl-C's path: SIGTERM to the script stops the agent, then the exporter.
kill -TERM "$RL"
for ((i = 0; i < $(scaled 30) * 10; i++)); do
	kill -0 "$EX" 2>/dev/null || kill -0 "$AG" 2>/dev/null || kill -0 "$RL" 2>/dev/null || break
	sleep 0.1
done
for p in "$RL" "$AG" "$EX"; do
	kill -0 "$p" 2>/dev/null && fail "PID $p still running $(scaled 30) s after SIGTERM"
done
info "SIGTERM: run-local.sh, the agent and the exporter ended"
exit 0
