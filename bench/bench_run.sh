#!/bin/bash
# Continuous agent soak: `cgperf-agent run` profiling a PostgreSQL under
# pgbench (DWARF stacks at 999 Hz, counters, a USDT probe) and pushing to a
# collector every second, while cgroups are created and removed in a loop.
# Prints RSS and CPU over time (flat is the goal) and the samples per second
# of agent CPU in steady state, naming and pushing included.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tests/lib/pg.sh"
DUR=${SOAK_SECONDS:-40}
MODE=${SOAK_MODE:-dwarf}
bench_pg_collector pg
cat >"$TMP/agent.yaml" <<YAML
host: {agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**", "/cgperf-test-$$-churn*"]}
sampling: {frequency: 999, call_graph: $MODE}
$( [[ ${SOAK_PROBES:-1} == 1 ]] && printf 'probes:\n  - spec: "sdt:postgresql:query__start@%s/postgres"\n' "$PG_BIN" )
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$port/api/v1/push"]
  spool: {dir: $TMP/spool}
YAML
pg_bench_start "$TMP/pgbench.log" -n -S -c 4 -j 2 -T $((DUR + 5)) -R 8000
sleep 1
"$AGENT" run --config "$TMP/agent.yaml" --duration "$DUR" 2>"$TMP/agent.log" &
ag=$!; bg_track $ag
# cgroup churn: one created and one removed every 100 ms
( i=0; while kill -0 $ag 2>/dev/null; do d="$(cg2_mount)/cgperf-test-$$-churn$((i % 20))"; [[ -d $d ]] && rmdir "$d" || mkdir "$d"; i=$((i + 1)); sleep 0.1; done ) &
bg_track $!
hz=$(getconf CLK_TCK)
printf '%6s %10s %10s\n' t_s rss_mb cpu_s
for t in $(seq 5 5 "$DUR"); do
	sleep 5
	[[ -r /proc/$ag/stat ]] || break
	rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' /proc/$ag/status)
	cpu=$(awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' /proc/$ag/stat)
	printf '%6d %10s %10s\n' "$t" "$rss" "$cpu"
	echo "$t $cpu" >>"$TMP/cpu"
done
wait $ag
sleep 2
for f in "$TMP"/fc/body-*; do "$AGENT" wire-dump "$f"; done >"$TMP/b.jsonl"
python3 - "$TMP/b.jsonl" "$TMP/cpu" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
samples = sum(p["samples"] for r in rows for p in r["profiles"])
hits = sum(p["hits"] for r in rows for p in r["probes"])
cpu = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
print(f"batches {len(rows)}, stack samples {samples}, probe hits {hits}")
if len(cpu) >= 3:
    (t0, c0), (t1, c1) = cpu[1], cpu[-1]
    steady = [r for r in rows]
    rate = samples / max(c1, 1e-9)
    print(f"agent CPU {c1:.2f} s in all; steady-state (t={t0:.0f}..{t1:.0f} s) {100*(c1-c0)/(t1-t0):.1f}% of one CPU")
    print(f"samples per second of agent CPU (everything: sampling, unwinding, naming, encoding, pushing): {rate:.0f}")
PY
grep -E 'tps' "$TMP/pgbench.log" | head -1
