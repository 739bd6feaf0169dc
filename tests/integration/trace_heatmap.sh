#!/bin/bash
# Keyed block latency and heat maps (issue 15): 2000 direct 4 KiB writes in
# a cgroup, on the root disk (not tmpfs), paired from block_rq_issue to
# block_rq_complete by (dev, sector), although completions run in interrupt
# context: trace -G counts >= 2000 pairs and draws a well-formed heat map
# with cells; run with latency_key pushes the per-interval histograms, its
# /metrics shows the pairing figures, and the exporter's /api/v1/heatmap
# answers the same probe with a well-formed SVG with cells (and JSON whose
# cells add up to its total). STORE=clickhouse: the exporter on a ClickHouse
# server (trace_heatmap_clickhouse.sh), and the trace part is skipped.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
need xmllint curl python3 dd
ls /sys/kernel/tracing/events/block/block_rq_issue >/dev/null 2>&1 ||
	ls /sys/kernel/debug/tracing/events/block/block_rq_issue >/dev/null 2>&1 ||
	skip "no block tracepoints in tracefs"
DATA=$(mktemp /var/tmp/cgperf-heat.XXXXXX)
trap 'rm -f "$DATA"; _cleanup' EXIT
cg_new heat
# 2000 direct 4 KiB writes from inside the cgroup, with the CPUs kept busy
# meanwhile by niced spinners outside it. On this machine (a Firecracker
# guest, cpuidle haltpoll) the kernel records no sample for a tracepoint
# that fires in a hard interrupt taken by an idle CPU: `perf record -a -e
# block:block_rq_complete -e irq:irq_handler_entry` during the dd kept 5 of
# 2001 interrupts and 5 of 2003 completions, which `perf stat` counts in
# full; with the CPUs busy, perf and the agent get every completion.
writes() {
	local spin=() i
	for ((i = 0; i < 2 * $(nproc); i++)); do
		nice -n 19 sh -c 'while :; do :; done' &
		spin+=($!); bg_track $!
	done
	sh -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of="$2" oflag=direct bs=4k count=2000 2>/dev/null' \
		sh "$cg" "$DATA" || fail "dd failed"
	kill "${spin[@]}"
	wait "${spin[@]}" 2>/dev/null
}
LAT=block:block_rq_issue,block:block_rq_complete

# ---- trace -G: pairs, the counts, the heat map ----
if ! on_clickhouse; then
# Bad input: exit 2 with the reason, before anything is traced.
for bad in "--key dev -e block:block_rq_issue" "--latency $LAT --key dev,nosuch" \
	"--latency u:libc:malloc --key size" "--latency $LAT --key a,b,c,d"; do
	# shellcheck disable=SC2086 # the words of $bad are the options
	"$AGENT" trace $bad --duration 1 >/dev/null 2>"$TMP/bad.err"
	rc=$?
	[[ $rc == 2 && -s $TMP/bad.err ]] || fail "trace $bad: exit $rc, $(cat "$TMP/bad.err")"
done
# Two things of the kernel's, not the agent's, can leave a run short of
# 2000 pairs (a run is good with 1980; one with fewer is tried again, 3
# tries in all), and each start must still be paired, pending or timed out:
# - a request is issued in the task that wrote it, or by the kblockd worker
#   when the queue was busy (1 or 2 of the 2000 here); the START decides the
#   cgroup, so those are not the cgroup's;
# - a completion taken by an idle CPU leaves no record (see writes()); the
#   spinners make that rare. Such STARTs time out or stay pending, and are
#   counted so, never paired wrongly.
# The writes start once the trace is in its loop (blocked in poll(), which it
# enters once its events are enabled), and the trace is stopped (SIGINT) once
# they are done (each direct write waits for its completion).
trace_once() {
	local i n
	"$AGENT" trace -G "$rel" --latency $LAT --key dev,sector --heatmap "$TMP/trace.svg" \
		--json --duration "$(scaled 60)" >"$TMP/t.json" 2>"$TMP/t.err" &
	tr=$!; bg_track $tr
	n=$(scaled 100)
	for ((i = 0; i < n; i++)); do
		[[ $(cat "/proc/$tr/wchan" 2>/dev/null) == *poll* ]] && break
		kill -0 $tr 2>/dev/null || break
		sleep 0.1
	done
	[[ $(cat "/proc/$tr/wchan" 2>/dev/null) == *poll* ]] || fail "trace not tracing after $(scaled 10) s: $(cat "$TMP/t.err")"
	writes
	kill -INT $tr
	wait $tr || fail "trace failed: $(cat "$TMP/t.err")"
	cat "$TMP/t.err"
	python3 - "$TMP/t.json" "$rel" "$TMP/t.err" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mine = {r["probe"]: r for r in rows if r.get("cgroup") == sys.argv[2]}
issue, done = mine["block:block_rq_issue"], mine["block:block_rq_complete"]
pairs = issue["latency_ns"]["count"]
print("# issues in the cgroup", issue["hits"], "pairs", pairs, "completions", done["hits"])
assert done["hits"] == pairs, (done["hits"], pairs)  # an end counts under its start's cgroup
err = open(sys.argv[3]).read()
m = re.search(r"latency by key: (\d+) pairs, (\d+) ends without a start, (\d+) starts pending"
              r" at the end, (\d+) timed out", err)
assert m, err
print("# unpaired ends (other cgroups' I/O)", m.group(2), "pending", m.group(3),
      "timed out", m.group(4))
# Every start of the cgroup is paired, pending at the end or timed out: none
# paired wrongly or lost by the agent.
assert pairs + int(m.group(3)) + int(m.group(4)) >= issue["hits"], (pairs, m.groups(), issue["hits"])
assert int(m.group(1)) >= pairs, (pairs, m.group(1))
if issue["hits"] < 2000:
    print("# fewer issues than writes in the cgroup: kblockd issued", 2000 - issue["hits"])
if pairs < 2000:
    print("# starts without a block_rq_complete record:", issue["hits"] - pairs)
# What the kernel leaves out is a few in a thousand (up to 8 of 2000 seen
# with other tests running); more is tried again.
if pairs < 1980:
    sys.exit(3)
PY
}
for _ in 1 2 3; do
	trace_once
	rc=$?
	((rc == 3)) || break
done
((rc == 0)) || fail "trace pairs wrong"
xmllint --noout "$TMP/trace.svg" || fail "trace heat map is not well-formed"
n=$(grep -c 'class="cell"' "$TMP/trace.svg")
((n > 0)) || fail "trace heat map has no cells"
info "trace heat map: $n cells"
fi

# ---- run + exporter: per-interval histograms become a heat map ----
store_setup
# shellcheck disable=SC2046 # one flag per line
exporter_up $(store_args heat)
mport=$(free_port)
cat >"$TMP/agent.yaml" <<YAML
host: {name: heat-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {enabled: false}
sampling: {enabled: false}
probes:
  - spec: block:block_rq_issue dev sector
    latency_end: block:block_rq_complete dev sector
    latency_key: [dev, sector]
push: {interval: 1s, collectors: ["$ex/api/v1/push"], spool: {dir: $TMP/spool}}
metrics: {listen: "127.0.0.1:$mport"}
YAML
agent_run "$TMP/run.log" --config "$TMP/agent.yaml"
wait_http "http://127.0.0.1:$mport/metrics" "$(scaled 10)" "$TMP/run.log"
writes
# until the pairs are on /metrics: a batch (1 s) and the pairing delay
# (200 ms) later, or more on a loaded host
for ((i = 0; i < $(scaled 100); i++)); do
	curl -sf "http://127.0.0.1:$mport/metrics" >"$TMP/agent.prom" || fail "agent /metrics"
	pairs=$(awk '/^cgperf_agent_latency_pairs_total/ { print $NF }' "$TMP/agent.prom")
	((${pairs:-0} > 0)) && break
	sleep 0.1
done
grep '^cgperf_agent_latency_' "$TMP/agent.prom"
# (not necessarily 2000: see trace_once)
((${pairs:-0} > 0)) || fail "agent /metrics: ${pairs:-no} latency pairs"
for f in unpaired_ends_total timed_out_total dropped_total replaced_total pending late_total; do
	grep -q "^cgperf_agent_latency_$f{" "$TMP/agent.prom" || fail "no cgperf_agent_latency_$f"
done
kill -TERM "$ag" # a last batch, with every pair held, then exit
wait "$ag" || fail "run failed: $(cat "$TMP/run.log")"
q="probe=block:block_rq_issue&cgroup=$rel&from=-5m"
heat_total() {
	curl -sf "$ex/api/v1/heatmap?$q&format=json" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])' 2>/dev/null || echo 0
}
# The last batches may still be on their way (the agent's sender, the
# exporter's ingest queue): wait until the total holds still.
last=-1
for _ in $(seq $((20 * TIME_SCALE))); do
	now=$(heat_total)
	((now > 0 && now == last)) && break
	last=$now
	sleep 0.5
done
curl -sf "$ex/api/v1/heatmap?$q" -o "$TMP/exp.svg" || fail "heat map endpoint: $(curl -s "$ex/api/v1/heatmap?$q")"
xmllint --noout "$TMP/exp.svg" || fail "exporter heat map is not well-formed"
n=$(grep -c 'class="cell"' "$TMP/exp.svg")
((n > 0)) || fail "exporter heat map has no cells"
curl -sf "$ex/api/v1/heatmap?$q&format=json" >"$TMP/exp.json" || fail "heat map JSON"
python3 - "$TMP/exp.json" <<'PY' || fail "exporter heat map JSON does not add up"
import json, sys
m = json.load(open(sys.argv[1]))
total = sum(c["count"] for c in m["cells"])
print("# exporter heat map: columns", m["columns"], "of", m["column_ns"] / 1e9, "s, pairs", total)
# Not all 2000 on a loaded host: see trace_once.
assert total == m["total"] and total > 0, m
assert all(c["ge"] <= c["le"] for c in m["cells"])
PY
code=$(curl -s -o /dev/null -w '%{http_code}' "$ex/api/v1/heatmap?cgroup=$rel")
[[ $code == 400 ]] || fail "heat map without probe: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$ex/api/v1/heatmap?probe=no:such")
[[ $code == 404 ]] || fail "heat map of an unknown probe: HTTP $code"
info "exporter heat map: $n cells"
