#!/bin/bash
# cgperf-agent run serves its own /metrics: Prometheus text that promtool
# accepts, also for cgroup names with quotes, backslashes, tabs and UTF-8,
# with a busy cgroup's CPU seconds matching its own cpu.stat.
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
command -v promtool >/dev/null || fail "promtool missing (packaging/install-deps.sh installs prometheus)"
base=$(cg_make metrics)
rel=${base#"$(cg2_mount)"}
hostile=$'we"ird\\name\twith tab ünï'
mkdir "$base/$hostile" "$base/busy" || fail "cannot create test cgroups"
port=$(free_port)
cat >"$TMP/agent.yaml" <<YAML
host: {name: "metrics-\"host", agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {enabled: false}
push: {interval: 1s, collectors: [], spool: {dir: $TMP/spool}}
metrics: {listen: "127.0.0.1:$port"}
YAML
# batches: the agent's batch count on its /metrics (0 when none yet)
batches() {
	curl -sf "http://127.0.0.1:$port/metrics" | awk '/^cgperf_agent_batches_total\{/ { n = $NF } END { print n + 0 }'
}
# Stopped by SIGTERM once the figures are read, not by a --duration.
agent_run "$TMP/run.log" --config "$TMP/agent.yaml" --duration "$(scaled 60)"
# /metrics answers once the cgroups are counted: the spin starts after, so
# the agent sees all of the CPU time cpu.stat has for it.
wait_http "http://127.0.0.1:$port/metrics" "$(scaled 10)" "$TMP/run.log"
sh -c "echo \$\$ > '$base/busy/cgroup.procs'; exec '$W/spin' 3" &
sp=$!; bg_track $sp
curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/m.txt" || fail "no /metrics: $(cat "$TMP/run.log")"
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/other" | grep -q 404 || fail "unknown path not 404"
wait $sp
u=$(awk '/^usage_usec/ { print $2 }' "$base/busy/cpu.stat")
# Two batches later (the one under way may have read its counters before
# the spin ended), /metrics holds all of the spin's CPU time.
b0=$(batches)
for ((i = 0; i < $(scaled 100); i++)); do
	(($(batches) >= b0 + 2)) && break
	sleep 0.1
done
(($(batches) >= b0 + 2)) || fail "no batch after the spin ended within $(scaled 10) s: $(tail -n 5 "$TMP/run.log")"
curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/m2.txt" || fail "no /metrics the second time"
kill -TERM $ag
wait $ag || fail "run failed: $(cat "$TMP/run.log")"
promtool check metrics <"$TMP/m2.txt" || fail "promtool rejects /metrics: $(head -30 "$TMP/m2.txt")"
grep -q 'host="metrics-\\"host"' "$TMP/m2.txt" || fail "host label not escaped"
grep -qF 'id="'"$rel"'/we\"ird\\name	with tab ünï"' "$TMP/m2.txt" ||
	fail "hostile cgroup label not escaped: $(grep cpu_seconds "$TMP/m2.txt")"
python3 - "$TMP/m2.txt" "$rel/busy" "$u" <<'PY' || fail "cpu seconds wrong"
import sys
want = int(sys.argv[3]) / 1e6
for line in open(sys.argv[1]):
    if line.startswith("cgperf_cgroup_cpu_seconds_total{") and f'id="{sys.argv[2]}"' in line:
        got = float(line.rsplit(" ", 1)[1])
        print(f"# busy cgroup: {got:.3f} s on /metrics, cpu.stat {want:.3f} s")
        assert abs(got - want) <= 0.1 * want + 0.05, (got, want)
        break
else:
    raise SystemExit("busy cgroup missing")
PY
exit 0
