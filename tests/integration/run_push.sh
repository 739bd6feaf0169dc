#!/bin/bash
# cgperf-agent run, on a real PostgreSQL under pgbench in its own cgroup:
# batches reach a collector, decode, and hold exactly what the agent counted
# (stack samples and probe hits per batch, from its own log); a collector
# outage loses nothing; SIGHUP reloads; an agent restart resends what was
# spooled and keeps the sequence numbers increasing.
# holds: pg-uprobe
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
W=$BUILD_DIR/workloads
cg_new run
pg_start "$cg"
pg_bench_init 1
port=$(free_port)
spool=$TMP/spool
mkdir -p "$TMP/fc"

collector() { # start the fake collector (gzip + token checked)
	python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc" --port $port --token s3cret \
		>>"$TMP/fc.log" 2>&1 &
	FC=$!; bg_track $FC
	for i in $(seq 50); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && return
		sleep 0.1
	done
	fail "collector did not start: $(cat "$TMP/fc.log")"
}
echo s3cret >"$TMP/token"
cat >"$TMP/agent.yaml" <<YAML
host: {name: test-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {frequency: 99, call_graph: dwarf}
probes:
  - spec: "sdt:postgresql:query__start@$PG_BIN/postgres"
    latency_end: "sdt:postgresql:query__done@$PG_BIN/postgres"
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$port/api/v1/push"]
  token_file: $TMP/token
  timeout: 2s
  retry: {initial: 200ms, max: 1s}
  spool: {dir: $spool, max_bytes: 64MiB}
log: {level: debug}
YAML

# Load for the whole test: pgbench against the server in the cgroup.
pg_bench_start "$TMP/pgbench.log" -n -S -c 2 -j 2 -T 40 -R 2000
usage() { awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat"; }

collector
u0=$(usage)
agent_run "$TMP/run1.log" --config "$TMP/agent.yaml" --duration 4
sleep 1.6
kill $FC; wait $FC 2>/dev/null # outage: about two intervals
sleep 1
kill -HUP $ag # reload in the middle of the outage
sleep 1
collector
wait $ag || fail "run failed: $(cat "$TMP/run1.log")"
u1=$(usage)
sleep 2 # the spooled batches arrive
# Second life of the agent: same spool, collector down at first.
kill $FC; wait $FC 2>/dev/null
agent_run "$TMP/run2.log" --config "$TMP/agent.yaml" --duration 2.2
sleep 1.5
collector
wait $ag || fail "second run failed: $(cat "$TMP/run2.log")"
u2=$(usage)
sleep 2
cat "$TMP/run1.log" "$TMP/run2.log" | grep -v 'level=debug' | head -20
grep -q 'msg="config reloaded"' "$TMP/run1.log" || fail "SIGHUP did not reload: $(cat "$TMP/run1.log")"
# What the agent produced, per batch, from its own log.
cat "$TMP/run1.log" "$TMP/run2.log" |
	sed -n 's/.*msg="batch queued" seq=\([0-9]*\) samples=\([0-9]*\) hits=\([0-9]*\) counters=\([0-9]*\).*/\1 \2 \3 \4/p' >"$TMP/produced"

for f in "$TMP"/fc/body-*; do "$AGENT" wire-dump "$f"; done >"$TMP/batches.jsonl" || fail "a received batch does not decode"
python3 - "$TMP/batches.jsonl" "$rel" "$u0" "$u1" "$u2" "$TMP/produced" <<'PY' || fail "batches do not add up"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rel = sys.argv[2]
u0, u1, u2 = (int(x) for x in sys.argv[3:6])
seqs = [r["seq"] for r in rows]
print(f"# {len(rows)} batches received, seqs {seqs}")
assert len(set(seqs)) == len(seqs), "a batch arrived twice"
s = sorted(seqs)
assert s == list(range(s[0], s[0] + len(s))), f"gap in sequence numbers: {s}"
agents = {r["agent_id"] for r in rows}
assert len(agents) == 1 and all(r["host"] == "test-host" for r in rows), "agent identity changed"
def tc(r):
    idx = [i for i, c in enumerate(r["cgroups"]) if c["path"] == rel]
    return sum(c["value"] for c in r["counters"] if c["cgroup"] in idx and c["event"] == "task-clock") / 1e6
total_ms = sum(tc(r) for r in rows)
want_ms = (u2 - u0) / 1000
print(f"# task-clock over all batches {total_ms:.0f} ms; cgroup cpu.stat over both runs {want_ms:.0f} ms "
      f"(first run alone {(u1 - u0) / 1000:.0f} ms)")
# The two runs cover less than the cpu.stat bracket (start-up, the gap between
# runs), never more.
assert total_ms <= want_ms * 1.05 + 20, "more CPU reported than the cgroup used"  # cpu.stat flushes lazily
assert total_ms >= (u1 - u0) / 1000 * 0.85, "CPU of the first run missing: batches lost?"
samples = sum(p["samples"] for r in rows for p in r["profiles"])
print(f"# stack samples {samples}")
produced = {int(a): (int(b), int(c), int(d)) for a, b, c, d in (l.split() for l in open(sys.argv[6]))}
received = {r["seq"]: (sum(p["samples"] for p in r["profiles"]), sum(p["hits"] for p in r["probes"]),
                       sum(c["value"] for c in r["counters"]))
            for r in rows}
print(f"# produced per batch (samples, probe hits, counter sum) {produced}")
assert produced == received, f"received {received} != produced {produced}"
lat = sum(p.get("latency_ns", {}).get("count", 0) for r in rows for p in r["probes"])
hits = sum(v[1] for v in produced.values())
assert sum(v[2] for v in produced.values()) > 0, "no counter deltas"
print(f"# query__start hits {hits}, query latency pairs {lat}")
assert hits > 1000 and lat >= 0.95 * hits, "queries not traced through the outage"
# cpu-clock at 99 Hz: one sample per 1/99 s of the cgroup's CPU time.
want = 99 * total_ms / 1000
assert abs(samples - want) <= 0.25 * want + 10, f"{samples} samples for {total_ms:.0f} ms of CPU at 99 Hz (want ~{want:.0f})"
PY
exit 0
