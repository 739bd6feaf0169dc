#!/bin/bash
# cgperf-agent run with push.mode failover over two real exporters (each its
# own SQLite store): while spin burns CPU in a test cgroup, exporter A (first
# of the list) takes every batch; A is killed with SIGKILL mid-run and the
# batches go to B; A is started again on its store and takes the batches
# back (the first healthy collector wins). Then no batch is lost and each is
# stored by exactly one exporter: A's + B's cgperf_agent_batches_total equal
# the batches the agent numbered (plus any batch whose ack the kill cut off,
# which the agent counts as maybe_delivered), and nothing is left spooled.
# Both exporters remote_write to one real Prometheus, each under its own
# instance: their series do not collide, and the sum over instance of the
# agent's batches there is the agent's count.
# Also: --push-mode on the command line, and a fanout run for contrast
# (every batch in both; each fan-out collector has its own cursor).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
source "$(dirname "$0")/../lib/tsdb.sh"
W=$BUILD_DIR/workloads
cg_new failover
read -r pa pb pm pp < <(free_ports 4)
prom_start "$pp"
rw=(--remote-write-url "http://127.0.0.1:$pp/api/v1/write" --remote-write-interval 1s)

"$W/spin" 60 25 &
spin=$!; bg_track $spin
cg_enter "$cg" $spin

# A push that times out fails over as a refused one does: the timeout is
# long enough that a healthy exporter slow to commit on a busy machine is
# not taken for a dead one (SIGKILL refuses at once).
config() { # MODE SPOOL
	cat <<YAML
host: {name: fo-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {events: [task-clock]}
sampling: {frequency: 49, call_graph: fp}
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$pa/api/v1/push", "http://127.0.0.1:$pb/api/v1/push"]
  mode: $1
  timeout: $(scaled 5)s
  retry: {initial: 200ms, max: 1s}
  spool: {dir: $2}
metrics: {listen: "127.0.0.1:$pm"}
log: {level: debug}
YAML
}
config fanout "$TMP/spool" >"$TMP/agent.yaml"
"$AGENT" run --config "$TMP/agent.yaml" --push-mode failover --print-config | grep -q '^  mode: failover$' ||
	fail "--push-mode failover does not override push.mode"

exp_start A "$pa" "${rw[@]}" --remote-write-instance A
exp_start B "$pb" "${rw[@]}" --remote-write-instance B
agent_run "$TMP/agent.log" --config "$TMP/agent.yaml" --push-mode failover
a_before=$(exp_wait_metric "$pa" cgperf_agent_batches_total 4 10)
b_before=$(exp_metric "$pb" cgperf_agent_batches_total)
info "before the kill: A stored $a_before batches, B $b_before"
((a_before >= 4)) || fail "A (first of the list) got $a_before batches in 10 s: $(tail -5 "$TMP/agent.log")"
((b_before == 0)) || fail "B got $b_before batches while A was healthy (failover sends to the first healthy one)"

exp_stop A KILL
b_mid=$(exp_wait_metric "$pb" cgperf_agent_batches_total 3 10)
info "A down: B stored $b_mid batches"
((b_mid >= 3)) || fail "B got $b_mid batches while A was down: $(grep -v debug "$TMP/agent.log" | tail -5)"

exp_start A "$pa" "${rw[@]}" --remote-write-instance A
# A's health backoff (at most retry.max) ends: A is first again
a_recv=$(exp_wait_metric "$pa" cgperf_exporter_batches_received_total 4 10)
info "A restarted: it stored $a_recv new batches"
((a_recv >= 4)) || fail "restarted A got $a_recv batches: $(grep -v debug "$TMP/agent.log" | tail -5)"
maybe=$(curl -sf "http://127.0.0.1:$pm/metrics" | awk '$1 ~ /^cgperf_agent_push_maybe_delivered_total/ { print $2 }')
kill -TERM $ag
wait $ag || fail "agent failed: $(tail -5 "$TMP/agent.log")"

# A fresh spool numbers batches 1, 2, ...: the service's cursor is the last
# one accepted, and nothing may be left spooled.
read -r n _ <"$TMP/spool/cursor-"* || fail "no cursor in the spool"
left=$(find "$TMP/spool" -name 'batch-*' | wc -l)
next=$(cat "$TMP/spool/seq")
# an accepted batch was acked, so stored; polled (bounded) all the same
for ((i = 0; i < $(scaled 5) * 5; i++)); do
	ta=$(exp_metric "$pa" cgperf_agent_batches_total) tb=$(exp_metric "$pb" cgperf_agent_batches_total)
	((ta + tb >= n)) && break
	sleep 0.2
done
info "agent: $n batches accepted (last numbered $next, $left left spooled); A stored $ta, B $tb; maybe delivered: ${maybe:-?}"
((n >= 10 && left == 0 && n == next)) || fail "$n batches accepted of $next, $left left in the spool"
grep -q 'failing: .*batches go to the next collector' "$TMP/agent.log" || fail "no failover logged"
grep -q "collector http://127.0.0.1:$pa/api/v1/push recovered" "$TMP/agent.log" || fail "A's recovery not logged"
# every ack the agent missed, to its stop (the metric read before it can
# miss the last ones): one debug line each
maybe=$(grep -c 'may have been delivered to' "$TMP/agent.log")
extra=$((ta + tb - n))
((extra >= 0)) || fail "batches lost: $n accepted, stored $ta + $tb"
((extra <= ${maybe:-0})) || fail "$extra batches stored twice (maybe delivered: ${maybe:-0})"
for p in "$pa" "$pb"; do
	d=$(exp_metric "$p" cgperf_exporter_batches_duplicate_total)
	((d == 0)) || fail "exporter on $p answered $d duplicates"
done
# One Prometheus, two exporters: one series each, the sum is what they
# stored (the agent's count, plus any batch whose ack the kill cut off).
q='cgperf_agent_batches_total{host="fo-host",job="cgperf-exporter"}'
for ((i = 0; i < $(scaled 10) * 4; i++)); do
	series=$(tsdb_value "$pp" "count($q)") sum=$(tsdb_value "$pp" "sum($q)")
	[[ $series == 2 && $sum == "$((ta + tb))" ]] && break
	sleep 0.25
done
info "Prometheus: $series series of the agent's batches, summing to $sum"
[[ $series == 2 && $sum == "$((ta + tb))" ]] ||
	fail "Prometheus: $series series summing to $sum, want 2 summing to $((ta + tb)) (the agent's $n)"

# Fan-out for contrast: the same agent, a new spool, every batch in both.
exp_stop A; exp_stop B
rm -rf "$TMP/A" "$TMP/B"
exp_start A "$pa"; exp_start B "$pb"
config fanout "$TMP/spool2" >"$TMP/agent2.yaml"
"$AGENT" run --config "$TMP/agent2.yaml" --duration 3 2>"$TMP/agent2.log" || fail "fanout run failed"
n2=$(cat "$TMP/spool2/seq")
# every batch acked by both before the agent exited; polled all the same
for ((i = 0; i < $(scaled 5) * 5; i++)); do
	ta=$(exp_metric "$pa" cgperf_agent_batches_total) tb=$(exp_metric "$pb" cgperf_agent_batches_total)
	((ta >= n2 && tb >= n2)) && break
	sleep 0.2
done
info "fanout: $n2 batches queued, A stored $ta, B $tb"
((ta == n2 && tb == n2)) || fail "fanout: A $ta, B $tb, queued $n2"
echo PASS
