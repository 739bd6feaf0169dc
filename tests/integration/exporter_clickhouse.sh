#!/bin/bash
# The ClickHouse store on a real two-shard cluster: two clickhouse-server
# instances (own config, data under $TMP, own ports, a remote_servers
# cluster "two" of one shard each), exporter E1 on shard 1 and E2 on shard
# 2 (--clickhouse-cluster two), and a SQLite exporter R as the reference.
#   - tables on every shard: with --clickhouse-shard-urls, E1 makes the
#     tables (and records the schema version) on the empty shard 2 too; a
#     list that misses a server of the cluster is refused; at the end, an
#     exporter on shard 1 with --retention drops an old day on shard 2;
#   - fleet: agent 1 pushes each batch to E1, E2 and R (every batch reaches
#     the cluster twice), agent 2 to E2 and R; after they stop, E1 and E2
#     answer for both cgroups exactly R's folded stacks, and R's cgroup
#     series and agent batch counts on /metrics;
#   - exactly once: one gen_batch batch posted to E1, E2 and E1 again
#     counts once in folded, pprof, SVG, targets and /metrics; its rows
#     written again by hand (a racing second write, a half-failed one)
#     still count once;
#   - stateless: a new exporter E3 on shard 2, and E1 restarted, answer
#     the same as before;
#   - outage: shard 2's server stopped, a push to E1 gets 503; shard 1's
#     (E1's own) stopped, 503 with Retry-After (never 200) and a stacks
#     read fails; started again, the resend is stored and counted once;
#     then the store stopped for 2 s under an agent pushing to E1 and R:
#     the agent gets 503, keeps its batches and resends them, and E1 ends
#     with exactly R's stacks and series.
# Skips only when clickhouse-server is not installed.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
W=$BUILD_DIR/workloads
GEN=$BUILD_DIR/tools/gen_batch
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
[[ -x $GEN ]] || fail "$GEN not built (make build-tests)"
why=$(ch_available) || skip "$why"

ch_ports s1
ch_ports s2
shards=$(ch_shards_xml two s1 s2)
ch_start s1 "$shards" || fail "shard 1 did not start"
ch_start s2 "$shards" || fail "shard 2 did not start"
info "shards: http ${CH_HTTP[s1]} and ${CH_HTTP[s2]}"

declare -A PORT PID
start() { # NAME ARGS...: an exporter on a free port
	local n=$1
	shift
	PORT[$n]=${PORT[$n]:-$(free_port)}
	"$EXPORTER" --listen "127.0.0.1:${PORT[$n]}" --log-level debug "$@" 2>>"$TMP/$n.log" &
	PID[$n]=$!
	bg_track $!
	wait_http "http://127.0.0.1:${PORT[$n]}/healthz" $(scaled 10) "$TMP/$n.log"
}
start_ch() { # NAME SHARD [ARGS...]
	local n=$1 sh=$2
	shift 2
	start "$n" --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[$sh]}" \
		--clickhouse-cluster two "$@"
}
stop() {
	kill -TERM "${PID[$1]}"
	wait "${PID[$1]}" || fail "exporter $1 did not stop cleanly: $(tail -3 "$TMP/$1.log")"
}
url() { echo "http://127.0.0.1:${PORT[$1]}$2"; }
get() { # NAME PATH OUT: the HTTP status
	curl -s -o "$3" -D "$3.h" -w '%{http_code}' "$(url "$1" "$2")"
}
folded() { # NAME QUERY OUT: sorted folded stacks (empty on 404)
	local st
	st=$(get "$1" "/api/v1/stacks?$2" "$3.raw")
	[[ $st == 200 || $st == 404 ]] || fail "$1 stacks?$2: HTTP $st $(cat "$3.raw")"
	[[ $st == 200 ]] || : >"$3.raw"
	sort "$3.raw" >"$3"
}
series() { # NAME OUT: cgroup series and agent batch/stack counts of /metrics, sorted
	get "$1" /metrics "$2.raw" >/dev/null
	grep -E '^cgperf_cgroup_(cpu_seconds|perf_events|stacks_truncated)_total|^cgperf_agent_(batches|stack_samples)_total' \
		"$2.raw" | sort >"$2"
}
same() { # WHAT A B
	cmp -s "$2" "$3" || fail "$1 differ: $(diff "$2" "$3" | head -8)"
}
# --- tables on every shard: shard 2 is empty; E1 (on shard 1) makes them there
shard_urls="http://127.0.0.1:${CH_HTTP[s1]},http://127.0.0.1:${CH_HTTP[s2]}"
"$EXPORTER" --listen "127.0.0.1:$(free_port)" --store clickhouse --clickhouse-url \
	"http://127.0.0.1:${CH_HTTP[s1]}" --clickhouse-cluster two \
	--clickhouse-shard-urls "http://127.0.0.1:${CH_HTTP[s1]}" 2>"$TMP/one.err" &&
	fail "a shard list without shard 2 was accepted"
grep -q 'cluster two has 2 servers at .*, --clickhouse-shard-urls lists 1' "$TMP/one.err" ||
	fail "short shard list: $(cat "$TMP/one.err")"
[[ $(ch_query s2 "SELECT count() FROM system.tables WHERE database = 'cgperf'") == 0 ]] ||
	fail "shard 2 is not empty"
start_ch E1 s1 --clickhouse-shard-urls "$shard_urls"
for t in samples_local samples batches_local expiry_local cgperf_schema; do
	[[ $(ch_query s2 "EXISTS TABLE cgperf.$t") == 1 ]] || fail "E1 did not make cgperf.$t on shard 2"
done
[[ $(ch_query s2 "SELECT max(version) FROM cgperf.cgperf_schema") == 3 ]] ||
	fail "no schema version on shard 2"
info "E1 made the tables on both shards: $(ch_query s2 "SELECT count() FROM system.tables WHERE database = 'cgperf'") on shard 2"
start_ch E2 s2
start R --data-dir "$TMP/R"

# --- fleet: two agents, every batch of agent 1 twice in the cluster
cg1=$(cg_make one)
cg2=$(cg_make two)
agent() { # N CGROUP COLLECTORS...
	local n=$1 rel=${2#"$(cg2_mount)"} c
	shift 2
	c=$(printf '"%s",' "$@")
	cat >"$TMP/agent$n.yaml" <<YAML
host: {name: "ch-host-$n", agent_id_file: $TMP/agent-id-$n}
cgroups: {include: ["$rel"]}
counters: {events: [task-clock, context-switches]}
sampling: {frequency: 199, call_graph: fp}
push:
  interval: 1s
  collectors: [${c%,}]
  timeout: 5s
  spool: {dir: $TMP/spool$n}
YAML
	"$AGENT" run --config "$TMP/agent$n.yaml" --duration 4 2>"$TMP/agent$n.log" &
	bg_track $!
	eval "AG$n=$!"
}
agent 1 "$cg1" "$(url E1 /api/v1/push)" "$(url E2 /api/v1/push)" "$(url R /api/v1/push)"
agent 2 "$cg2" "$(url E2 /api/v1/push)" "$(url R /api/v1/push)"
sleep 1
for n in 1 2; do
	v=cg$n
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 2.2' sh "${!v}" "$W/chain-fp" &
	bg_track $!
	eval "WL$n=$!"
done
wait "$WL1" "$WL2"
wait "$AG1" || fail "agent 1 failed: $(tail -3 "$TMP/agent1.log")"
wait "$AG2" || fail "agent 2 failed: $(tail -3 "$TMP/agent2.log")"
grep -q 'push failed\|level=error' "$TMP"/agent?.log &&
	fail "pushes failed: $(grep -h 'push failed\|level=error' "$TMP"/agent?.log | head -3)"

for n in 1 2; do
	v=cg$n
	q="host=ch-host-$n&cgroup=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "${!v#"$(cg2_mount)"}")"
	folded R "$q" "$TMP/R$n.folded"
	tot=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/R$n.folded")
	((tot > 20)) || fail "the reference has only $tot samples of agent $n"
	for e in E1 E2; do
		folded $e "$q" "$TMP/$e-$n.folded"
		same "$e's stacks of agent $n and the reference's" "$TMP/$e-$n.folded" "$TMP/R$n.folded"
	done
	info "agent $n: E1 and E2 answer the reference's $tot samples, $(wc -l <"$TMP/R$n.folded") stacks"
done
series R "$TMP/R.series"
grep -q 'ch-host-1' "$TMP/R.series" && grep -q 'ch-host-2' "$TMP/R.series" ||
	fail "the reference lacks a host: $(head -3 "$TMP/R.series")"
for e in E1 E2; do
	series $e "$TMP/$e.series"
	same "$e's and the reference's /metrics" "$TMP/$e.series" "$TMP/R.series"
done
info "E1 and E2: /metrics cgroup and agent series equal the reference's ($(wc -l <"$TMP/R.series") lines)"

# --- exactly once: one batch through E1, E2 and E1 again
"$GEN" --cgroups 2 --counters 2 --stacks 5 --host dup-host --agent dup-agent --seq 7 \
	write "$TMP/dup.pb" || fail "gen_batch failed"
export HOME=$TMP/home GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local \
	GOTELEMETRY=off PPROF_TMPDIR=$TMP/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"
pprof_top() { # FILE: every function's flat and cum, sorted (gzip -t without go)
	if command -v go >/dev/null; then
		go tool pprof -top -nodecount=100000 "$1" 2>/dev/null | sed 1d | sort
	else
		gzip -t "$1" && echo ok
	fi
}
post() { # NAME FILE: the HTTP status
	curl -s -o "$TMP/post.out" -D "$TMP/post.h" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/x-protobuf' --data-binary "@$2" "$(url "$1" /api/v1/push)"
}
for e in R E1 E2 E1; do
	st=$(post $e "$TMP/dup.pb")
	[[ $st == 200 ]] || fail "push to $e: HTTP $st $(cat "$TMP/post.out")"
done
folded R "host=dup-host" "$TMP/dupR.folded"
[[ -s $TMP/dupR.folded ]] || fail "the reference has no stacks of dup-host"
series R "$TMP/R2.series"
now=$(date +%s)
span="from=$((now - 3600))&to=$((now + 60))" # the same title on every SVG
for e in E1 E2; do
	folded $e "host=dup-host" "$TMP/dup$e.folded"
	same "$e's stacks of a batch sent three times" "$TMP/dup$e.folded" "$TMP/dupR.folded"
	series $e "$TMP/$e.2.series"
	same "$e's /metrics after a batch sent three times" "$TMP/$e.2.series" "$TMP/R2.series"
	get $e "/api/v1/stacks?host=dup-host&$span&format=svg" "$TMP/dup$e.svg" >/dev/null
	get R "/api/v1/stacks?host=dup-host&$span&format=svg" "$TMP/dupR.svg" >/dev/null
	same "$e's SVG" "$TMP/dup$e.svg" "$TMP/dupR.svg"
	get $e "/api/v1/stacks?host=dup-host&$span&format=pprof" "$TMP/dup$e.pb.gz" >/dev/null
	get R "/api/v1/stacks?host=dup-host&$span&format=pprof" "$TMP/dupR.pb.gz" >/dev/null
	# The samples' order follows the store's rows: compare what pprof reads.
	pprof_top "$TMP/dup$e.pb.gz" >"$TMP/a.top"
	pprof_top "$TMP/dupR.pb.gz" >"$TMP/b.top"
	[[ -s $TMP/a.top ]] || fail "$e's pprof: nothing read"
	same "$e's pprof (go tool pprof -top)" "$TMP/a.top" "$TMP/b.top"
	get $e /api/v1/targets "$TMP/t$e.json" >/dev/null
	python3 - "$TMP/t$e.json" <<'EOF' || fail "$e targets: $(cat "$TMP/t$e.json")"
import json, sys
t = json.load(open(sys.argv[1]))
a = [x for x in t["agents"] if x["agent_id"] == "dup-agent"]
assert len(a) == 1 and a[0]["batches"] == 1, a
EOF
done
info "a batch posted to E1, E2 and E1 again: counted once in folded, SVG, pprof, targets, /metrics"
# What the check before a write cannot see, made by hand on the batch's
# shard: a second complete write of it racing the first (its rows and its
# batches row under another insert id, its counters again) and a write that
# failed before its batches row (rows only).
# Merges stopped meanwhile: a background merge may collapse the copies
# (ReplacingMergeTree), which would leave nothing for the reads to count once.
for sh in s1 s2; do
	ch_query $sh "SYSTEM STOP MERGES" || fail "SYSTEM STOP MERGES on $sh"
	cols="bucket, host, path, event, frequency, period, stack, count, agent_id, seq"
	ch_query $sh "INSERT INTO cgperf.samples_local SELECT $cols, bitXor(ins, 2) FROM cgperf.samples_local WHERE agent_id = 'dup-agent'" &&
	ch_query $sh "INSERT INTO cgperf.samples_local SELECT $cols, bitXor(ins, 1) FROM cgperf.samples_local WHERE agent_id = 'dup-agent' AND ins IN (SELECT ins FROM cgperf.batches_local)" &&
	ch_query $sh "INSERT INTO cgperf.counters_local SELECT * FROM cgperf.counters_local WHERE agent_id = 'dup-agent'" &&
	ch_query $sh "INSERT INTO cgperf.batches_local SELECT agent_id, seq, host, version, start_ns, end_ns, received_ns, stack_samples, samples, lost_samples, unwind_failures, push_failures, push_rejected, spool_dropped_batches, stacks_refused, spool_bytes, spool_batches, bitXor(ins, 1) FROM cgperf.batches_local WHERE agent_id = 'dup-agent'" ||
		fail "could not copy the rows of dup-agent on $sh"
done
[[ $(ch_query s1 "SELECT count() FROM cgperf.batches WHERE agent_id = 'dup-agent'") == 2 ]] ||
	fail "the batch is not there twice: $(ch_query s1 "SELECT * FROM cgperf.batches WHERE agent_id = 'dup-agent'")"
sleep 1.2
for e in E1 E2; do
	folded $e "host=dup-host" "$TMP/dup$e.folded"
	same "$e's stacks of a batch written twice and half" "$TMP/dup$e.folded" "$TMP/dupR.folded"
	series $e "$TMP/$e.2.series"
	same "$e's /metrics of a batch written twice" "$TMP/$e.2.series" "$TMP/R2.series"
done
info "the same batch written twice (a race) and once half: counted once in folded and /metrics"
for sh in s1 s2; do ch_query $sh "SYSTEM START MERGES" || fail "SYSTEM START MERGES on $sh"; done

# --- stateless: a new exporter, and a restarted one, answer the same
start_ch E3 s2
folded E3 "host=dup-host" "$TMP/dupE3.folded"
same "a new exporter's stacks" "$TMP/dupE3.folded" "$TMP/dupR.folded"
series E3 "$TMP/E3.series"
same "a new exporter's /metrics" "$TMP/E3.series" "$TMP/R2.series"
stop E1
start_ch E1 s1
series E1 "$TMP/E1.3.series"
same "a restarted exporter's /metrics" "$TMP/E1.3.series" "$TMP/R2.series"
# E2 learns of what E3 stores without a restart (within its cache's second)
"$GEN" --cgroups 1 --counters 1 --stacks 2 --truncated 3 --host late-host --agent late --seq 1 \
	write "$TMP/late.pb" || fail "gen_batch failed"
[[ $(post E3 "$TMP/late.pb") == 200 ]] || fail "push to E3 failed"
[[ $(post R "$TMP/late.pb") == 200 ]] || fail "push to R failed"
sleep 1.2
series R "$TMP/R3.series"
series E2 "$TMP/E2.3.series"
same "E2's /metrics after E3 stored a batch" "$TMP/E2.3.series" "$TMP/R3.series"
grep -q '^cgperf_cgroup_stacks_truncated_total{host="late-host".*reason="bad_return_address"} 9$' "$TMP/E2.3.series" ||
	fail "E2 lacks the truncation counts E3 stored: $(grep truncated "$TMP/E2.3.series.raw" | head -3)"
info "a new exporter, a restarted one, and one that another exporter wrote past: the same answers"

# --- outage: shard 1 down, 503 + Retry-After; up again, stored once
"$GEN" --cgroups 1 --counters 1 --stacks 3 --host out-host --agent out --seq 3 \
	write "$TMP/out.pb" || fail "gen_batch failed"
ch_stop s2 KILL # the other shard: E1's server is up, the insert cannot finish
st=$(post E1 "$TMP/out.pb")
[[ $st == 503 ]] || fail "push with shard 2 down: HTTP $st $(cat "$TMP/post.out"), want 503"
info "shard 2 down: $(tr -d '\r' <"$TMP/post.out" | head -1 | cut -c1-120)"
ch_start s2 "$shards" || fail "shard 2 did not start again"
ch_stop s1 KILL
st=$(post E1 "$TMP/out.pb")
[[ $st == 503 ]] || fail "push while the store is down: HTTP $st $(cat "$TMP/post.out"), want 503"
grep -qi '^retry-after: [0-9]' "$TMP/post.h" || fail "503 without Retry-After: $(cat "$TMP/post.h")"
info "store down: $(tr -d '\r' <"$TMP/post.out" | head -1)"
st=$(get E1 "/api/v1/stacks?host=dup-host" "$TMP/down")
[[ $st == 200 ]] && fail "stacks answered 200 with the store down"
ch_start s1 "$shards" || fail "shard 1 did not start again"
for e in E1 R; do
	st=$(post $e "$TMP/out.pb")
	[[ $st == 200 ]] || fail "resend to $e: HTTP $st $(cat "$TMP/post.out")"
done
[[ $(post E2 "$TMP/out.pb") == 200 ]] || fail "a second resend failed"
folded R "host=out-host" "$TMP/outR.folded"
folded E2 "host=out-host" "$TMP/outE2.folded"
same "stacks of the batch resent after the outage" "$TMP/outE2.folded" "$TMP/outR.folded"
sleep 1.2
series R "$TMP/R4.series"
series E1 "$TMP/E1.4.series"
same "/metrics after the outage" "$TMP/E1.4.series" "$TMP/R4.series"
info "a shard down: 503 + Retry-After; up again: the resend stored and counted once"

# --- an outage while an agent pushes: its spool keeps what got 503
cg3=$(cg_make three)
mport3=$(free_port)
cat >"$TMP/agent3.yaml" <<YAML
host: {name: "ch-host-3", agent_id_file: $TMP/agent-id-3}
cgroups: {include: ["${cg3#"$(cg2_mount)"}"]}
counters: {events: [task-clock]}
sampling: {frequency: 199, call_graph: fp}
push:
  interval: 1s
  collectors: ["$(url E1 /api/v1/push)", "$(url R /api/v1/push)"]
  timeout: 5s
  retry: {initial: 100ms, max: 500ms}
  spool: {dir: $TMP/spool3}
metrics: {listen: "127.0.0.1:$mport3"}
log: {level: debug}
YAML
# No --duration: the agent runs until its spool has gone into the restarted
# shard, however long the server takes to come back.
"$AGENT" run --config "$TMP/agent3.yaml" 2>"$TMP/agent3.log" &
AG3=$!
bg_track $AG3
sleep 1
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 5' sh "$cg3" "$W/chain-fp" &
WL3=$!
bg_track $WL3
sleep 1
ch_stop s1 KILL
sleep 2
ch_start s1 "$shards" || fail "shard 1 did not start again"
wait $WL3
# Every batch the agent has built by now stored through E1 and R: the ones
# spooled during the outage included, however long the shard took to return.
mval() { curl -sf "$1" | awk -v m="$2" 'index($1, m) == 1 { v = $2 } END { print v + 0 }'; }
built=$(mval "http://127.0.0.1:$mport3/metrics" cgperf_agent_batches_total)
for ((i = 0; i < $(scaled 150); i++)); do
	e1=$(mval "$(url E1 /metrics)" 'cgperf_agent_batches_total{host="ch-host-3"')
	r=$(mval "$(url R /metrics)" 'cgperf_agent_batches_total{host="ch-host-3"')
	((e1 >= built && r >= built)) && break
	sleep 0.2
done
((e1 >= built && r >= built)) ||
	fail "agent 3 built $built batches, E1 stored $e1 and R $r: $(grep -v level=debug "$TMP/agent3.log" | tail -3)"
kill -TERM $AG3
wait $AG3 || fail "agent 3 failed: $(tail -3 "$TMP/agent3.log")"
q="host=ch-host-3"
folded R "$q" "$TMP/R3.folded"
folded E1 "$q" "$TMP/E1-3.folded"
same "stacks pushed through an outage" "$TMP/E1-3.folded" "$TMP/R3.folded"
tot=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/R3.folded")
((tot > 20)) || fail "agent 3 pushed only $tot samples"
grep -q 'failing: HTTP 503' "$TMP/agent3.log" ||
	fail "the agent saw no 503 while the store was down: $(grep -i 'push' "$TMP/agent3.log" | tail -3)"
sleep 1.2
series R "$TMP/R5.series"
series E1 "$TMP/E1.5.series"
same "/metrics after an outage under an agent" "$TMP/E1.5.series" "$TMP/R5.series"
info "the store down for 2 s under a pushing agent: $tot samples, none lost, none twice"

# --- retention on every shard: an old day on shard 2 dropped by an exporter on shard 1
old=$(( ($(date +%s) - 10 * 86400) * 1000000000 ))
ch_query s2 "INSERT INTO cgperf.samples_local (bucket, host, path, event, stack, count)
 VALUES ($old, 'old-host', '/old', 'cpu-clock', 1, 1)" >/dev/null || fail "old row"
parts() { ch_query s2 "SELECT count() FROM system.parts WHERE active AND database = 'cgperf'
 AND table = 'samples_local' AND toDate(partition) < today() - 5"; }
[[ $(parts) == 1 ]] || fail "no old partition on shard 2"
start_ch E4 s1 --clickhouse-shard-urls "$shard_urls" --retention 2d
for _ in $(seq 50); do
	[[ $(parts) == 0 ]] && break
	sleep 0.2
done
[[ $(parts) == 0 ]] || fail "E4 (on shard 1) did not drop shard 2's old day: $(tail -3 "$TMP/E4.log")"
folded E4 "host=ch-host-1" "$TMP/E4-1.folded"
folded R "host=ch-host-1" "$TMP/R-1.folded"
[[ -s $TMP/R-1.folded ]] || fail "no reference stacks"
same "stacks after retention" "$TMP/E4-1.folded" "$TMP/R-1.folded"
info "retention: shard 2's old day dropped by the exporter on shard 1; today's stacks unchanged"

for e in E1 E2 E3 E4 R; do stop $e; done
ch_stop s1
ch_stop s2
grep -l 'Sanitizer\|runtime error' "$TMP"/*.log && fail "sanitizer reports"
exit 0
