#!/bin/bash
# cgperf-exporter --remote-write-url against two real receivers, a
# Prometheus 2.42 (--web.enable-remote-write-receiver) and a VictoriaMetrics
# (Debian's victoria-metrics), both started here on temp dirs:
#   - the agent pushes a spinning cgroup's figures; after it stops, the
#     cgroup's CPU seconds and the agent's batches queried from each TSDB
#     equal the exporter's /metrics (within 2%; the same number in fact),
#     with the instance and job labels added, label values intact;
#   - a URL the receiver answers 404 is dropped as rejected, not retried;
#   - VictoriaMetrics stopped: requests fail and are retried, a queue of 3
#     fills and drops its oldest (counted); restarted: the queue drains
#     and the latest value is in it again;
#   - the exporter's own remote_write metrics move accordingly.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
source "$(dirname "$0")/../lib/tsdb.sh"
W=$BUILD_DIR/workloads
cg_new rw
read -r pp pv pe < <(free_ports 3)

rwm() { exp_metric "$pe" "cgperf_exporter_remote_write_$1" "${2:-}"; }

prom_start "$pp"
vm_start "$pv"
"$W/spin" 60 25 &
spin=$!; bg_track $spin
cg_enter "$cg" $spin
echo tok >"$TMP/rw-token"
exp_start E "$pe" --remote-write-url "http://127.0.0.1:$pp/api/v1/write" \
	--remote-write-url "http://127.0.0.1:$pv/api/v1/write" \
	--remote-write-url "http://127.0.0.1:$pp/api/v1/nowhere" \
	--remote-write-interval 1s --remote-write-queue 3 --remote-write-instance 'exp-"1"' \
	--remote-write-bearer-token-file "$TMP/rw-token" --log-level debug

cat >"$TMP/agent.yaml" <<YAML
host: {name: rw-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {events: [task-clock, context-switches]}
sampling: {enabled: false}
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$pe/api/v1/push"]
  spool: {dir: $TMP/spool}
YAML
"$AGENT" run --config "$TMP/agent.yaml" --duration 4 2>"$TMP/agent.log" || fail "agent failed: $(tail -5 "$TMP/agent.log")"

sel="{id=\"$rel\",instance=\"exp-\\\"1\\\"\",job=\"cgperf-exporter\"}"
want=$(exp_metric "$pe" cgperf_cgroup_cpu_seconds_total "id=\"$rel\"")
batches=$(exp_metric "$pe" cgperf_agent_batches_total)
# until a remote_write round after the last push reached both, and the
# 404 URL refused 3 (1 s rounds)
for ((i = 0; i < $(scaled 10) * 4; i++)); do
	vp=$(tsdb_value "$pp" "cgperf_cgroup_cpu_seconds_total$sel")
	vv=$(tsdb_value "$pv" "cgperf_cgroup_cpu_seconds_total$sel")
	[[ -n $vp && -n $vv ]] && near "$vp" "$want" 2 && near "$vv" "$want" 2 &&
		(($(rwm requests_dropped_total "nowhere.*reason=\"rejected\"") >= 3)) && break
	sleep 0.25
done
info "cpu seconds of $rel: /metrics $want, Prometheus $vp, VictoriaMetrics $vv"
# Counted at all (a 4 s run of a process busy a quarter of the time: about 1 s alone, less
# on a loaded or sanitized machine); the TSDBs must agree with it.
awk -v w="$want" 'BEGIN { exit !(w > 0.1) }' || fail "the spinning cgroup has $want CPU seconds on /metrics"
[[ -n $vp ]] && near "$vp" "$want" 2 || fail "Prometheus has '$vp', /metrics $want"
[[ -n $vv ]] && near "$vv" "$want" 2 || fail "VictoriaMetrics has '$vv', /metrics $want"
for p in "$pp" "$pv"; do
	b=$(tsdb_value "$p" 'sum(cgperf_agent_batches_total{host="rw-host"})')
	[[ $b == "$batches" ]] || fail "TSDB on $p: $b agent batches, /metrics $batches"
	e=$(tsdb_value "$p" "sum(cgperf_cgroup_perf_events_total{id=\"$rel\",event=\"context-switches\"})")
	[[ -n $e ]] || fail "TSDB on $p has no context-switches series"
done
sent_p=$(rwm requests_sent_total "127.0.0.1:$pp/api/v1/write")
rej=$(rwm requests_dropped_total "nowhere.*reason=\"rejected\"")
sent_bad=$(rwm requests_sent_total "nowhere")
info "sent to Prometheus: $sent_p requests; to the 404 URL: $sent_bad sent, $rej rejected"
((sent_p >= 3)) || fail "only $sent_p requests sent to Prometheus"
((rej >= 3 && sent_bad == 0)) || fail "the 404 URL: $rej rejected, $sent_bad sent"
((rej <= $(rwm requests_failed_total "nowhere") )) || fail "rejections not counted as failures"

# VictoriaMetrics down: retries, then a full queue of 3 drops its oldest.
kill $VM; wait $VM 2>/dev/null
for ((i = 0; i < $(scaled 15) * 4; i++)); do
	failed=$(rwm requests_failed_total ":$pv/") qlen=$(rwm queue_length ":$pv/")
	full=$(rwm requests_dropped_total ":$pv/.*queue_full")
	((failed >= 2 && qlen == 3 && full >= 1)) && break
	sleep 0.25
done
info "VictoriaMetrics down: $failed failed requests, queue $qlen, $full dropped (queue full)"
((failed >= 2)) || fail "no failed requests while VictoriaMetrics is down"
((qlen == 3 && full >= 1)) || fail "queue $qlen, dropped $full: want a full queue of 3 dropping its oldest"
sent_v=$(rwm requests_sent_total ":$pv/")
vm_start "$pv"
# The sender's backoff (at most 5 s) ends, then the queue of 3 goes.
for ((i = 0; i < $(scaled 30); i++)); do
	qlen=$(rwm queue_length ":$pv/") sent_v2=$(rwm requests_sent_total ":$pv/")
	((qlen <= 1 && sent_v2 >= sent_v + 3)) && break
	sleep 0.5
done
info "VictoriaMetrics back: queue $qlen, sent $sent_v -> $sent_v2"
((qlen <= 1 && sent_v2 >= sent_v + 3)) || fail "the queue did not drain: $qlen left, sent $sent_v -> $sent_v2"
vv=$(tsdb_value "$pv" "cgperf_cgroup_cpu_seconds_total$sel")
[[ -n $vv ]] && near "$vv" "$want" 2 || fail "VictoriaMetrics after restart has '$vv', /metrics $want"
grep -q 'remote_write: receiver failing' "$TMP/E.log" || fail "the outage was not logged"
grep -q 'remote_write: receiver accepts requests again' "$TMP/E.log" || fail "the recovery was not logged"
echo PASS
