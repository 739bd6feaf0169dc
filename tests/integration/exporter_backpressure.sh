#!/bin/bash
# cgperf-exporter when its store thread cannot keep up (issue 10, "A
# thousand agents"). The store is stalled by another process holding the
# SQLite file's write lock (BEGIN EXCLUSIVE, python3's sqlite3) for less
# than the store's 5 s busy timeout; --ingest-queue 1 (then 3) makes the queue short.
#  1. With the store stalled and the queue full, a push is answered at once
#     503 with Retry-After: 1 (counted in cgperf_exporter_busy_total); the
#     pushes already queued are acked 200 once the lock goes. A cgperf-agent
#     pushing meanwhile gets 503, keeps the batch in its spool, sends it
#     again later: every batch it queued is stored exactly once (no
#     duplicate, the stack samples stored equal those it counted).
#  2. Group commit with one bad batch: three pushes queued behind the stall
#     commit in one transaction (same received time); the middle one is
#     refused by the store (a test trigger on counter_samples) and answered
#     500 with the store's reason, nothing of it stored, the two others are acked 200 and stored.
#  3. --ingest-queue and ingest_queue: out-of-range values refused.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
W=$BUILD_DIR/workloads
GEN=$BUILD_DIR/tools/gen_batch
[[ -n ${KEEP_TMP:-} ]] && echo "TMP=$TMP"
[[ -x $GEN ]] || fail "$GEN not built (make O=${BUILD:-build} build-tests)"
command -v curl >/dev/null || fail "curl missing"
python3 -c 'import sqlite3' || fail "python3's sqlite3 module missing"
cg_new bp
ex_port=$(free_port)
url=http://127.0.0.1:$ex_port
db=$TMP/exporter/cgperf.db

exporter() { # QUEUE: start the exporter with --ingest-queue QUEUE
	exporter_up --ingest-queue "$1" --log-level debug
	EXP=$EX_PID
	grep -q "ingest_queue=$1\$" "$TMP/exporter.log" ||
		fail "--ingest-queue not taken: $(tail -3 "$TMP/exporter.log")"
}

metric() { # NAME: its value on /metrics
	curl -sf "$url/metrics" | awk -v n="$1" '$1 == n { print $2; exit }'
}
post() { # FILE OUT: push FILE, "STATUS SECONDS" into OUT, headers into OUT.h, body into OUT.b
	curl -s -o "$2.b" -D "$2.h" -w '%{http_code} %{time_total}\n' -m 20 -X POST \
		-H 'Content-Type: application/x-protobuf' --data-binary "@$1" "$url/api/v1/push" >"$2"
}
sql() { # QUERY: rows of the store, |-separated
	python3 - "$db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
for row in db.execute(sys.argv[2]):
    print("|".join(str(v) for v in row))
PY
}
# Hold the store's write lock from now until $TMP/release exists, 3.5 s at
# most (below the exporter's 5 s busy timeout); returns once it is held.
stall() {
	rm -f "$TMP/locked" "$TMP/release"
	python3 - "$db" "$TMP/locked" "$TMP/release" <<'PY' &
import os, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
end = time.monotonic() + 3.5
while time.monotonic() < end and not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
db.execute("COMMIT")
PY
	LOCKER=$!
	bg_track $LOCKER
	for ((i = 0; i < 100; i++)); do
		[[ -e $TMP/locked ]] && return 0
		sleep 0.02
	done
	fail "could not lock $db"
}
unstall() {
	touch "$TMP/release"
	wait $LOCKER
}
for i in $(seq 24); do
	"$GEN" --cgroups 2 --counters 2 --stacks 3 --host fill --agent fill --seq $i write "$TMP/fill$i.pb" ||
		fail "gen_batch failed"
done
for b in "ok 1" "bad 1" "ok 2" "ok 3"; do
	set -- $b
	"$GEN" --cgroups 2 --counters 2 --stacks 3 --host "$1" --agent "$1" --seq "$2" \
		write "$TMP/$1$2.pb" || fail "gen_batch failed"
done

# --- 1. queue full: 503 + Retry-After; the agent's batch kept and resent
cat >"$TMP/agent.yaml" <<YAML
host: {name: bp-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {events: [task-clock]}
sampling: {frequency: 99, call_graph: fp}
push: {interval: 2s, collectors: ["$url/api/v1/push"], timeout: 8s, retry: {initial: 100ms, max: 500ms}, spool: {dir: $TMP/spool}}
log: {level: debug}
YAML
exporter 1 # one push in the store thread's hands, one queued: then full
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec '$W/spin' 600 25" &
SP=$!
bg_track $SP
# No --duration: the agent runs until the batch that carries its failed
# pushes (a per-batch delta, sent in a batch built after the failure) is
# stored, then stops on SIGTERM with a final batch.
"$AGENT" run --config "$TMP/agent.yaml" 2>"$TMP/agent.log" &
AG=$!
bg_track $AG
# The agent is up and pushing: its first batch is stored.
for ((i = 0; i < $(scaled 100); i++)); do
	(($(metric cgperf_exporter_batches_received_total) >= 1)) && break
	sleep 0.1
done
(($(metric cgperf_exporter_batches_received_total) >= 1)) ||
	fail "no batch of the agent reached the exporter: $(tail -5 "$TMP/agent.log")"
# Right after one of the agent's pushes is acked: stall the store, fill the
# queue (A is taken by the store thread, B queued) and see a push answered
# 503 at once; then the agent's next push, a push interval (2 s) later,
# meets the full queue. On a busy machine the agent may take the queue's
# place before B (B then gets the 503 and the agent's push waits for the
# store): then again, eight times at most.
f=1 met=0
for try in 1 2 3 4 5 6 7 8; do
	n0=$(metric cgperf_exporter_batches_received_total)
	for ((i = 0; i < 100; i++)); do
		(($(metric cgperf_exporter_batches_received_total) > n0)) && break
		sleep 0.03
	done
	seen=$(grep -c 'HTTP 503' "$TMP/agent.log")
	stall
	post "$TMP/fill$f.pb" "$TMP/rA$try" &
	PA=$!
	sleep 0.1
	post "$TMP/fill$((f + 1)).pb" "$TMP/rB$try" &
	PB=$!
	sleep 0.1
	post "$TMP/fill$((f + 2)).pb" "$TMP/rC$try"
	f=$((f + 3))
	info "try $try: push with the queue full: $(cat "$TMP/rC$try") $(tr -d '\r' <"$TMP/rC$try.b")"
	read -r st secs <"$TMP/rC$try"
	[[ $st == 503 ]] || fail "a push with the queue full got $st (want 503): $(tail -5 "$TMP/exporter.log")"
	grep -qi '^Retry-After: 1' "$TMP/rC$try.h" || fail "no Retry-After in the 503: $(cat "$TMP/rC$try.h")"
	awk -v s="$secs" 'BEGIN { exit !(s < 1) }' || fail "the 503 took $secs s (want at once, < 1 s)"
	# The agent pushes once a second: within the stall (3.5 s at most).
	for ((i = 0; i < 60; i++)); do
		(($(grep -c 'HTTP 503' "$TMP/agent.log") > seen)) && met=1 && break
		sleep 0.05
	done
	unstall
	wait $PA $PB
	read -r st _ <"$TMP/rA$try"
	[[ $st == 200 ]] || fail "a push taken before the full queue got $st: $(cat "$TMP/rA$try.b")"
	read -r st _ <"$TMP/rB$try"
	# 200 once the store went on, or 503 when the agent held the place.
	[[ $st == 200 || $st == 503 ]] || fail "a queued push got $st: $(cat "$TMP/rB$try.b")"
	((met)) && break
	info "try $try: the agent's push was queued, not refused"
done
((met)) || fail "the agent never met the full queue: $(grep -v level=debug "$TMP/agent.log" | tail -5)"
busy=$(metric cgperf_exporter_busy_total)
((busy >= 2)) || fail "busy_total=$busy (want >= 2: our 5th push and the agent's)"
aid=$(cat "$TMP/agent-id")
# Wait for the batch that reports the failed push, and for eight batches.
deadline=$((SECONDS + $(scaled 40)))
while ((SECONDS < deadline)); do
	IFS='|' read -r nb afail < <(sql "SELECT batches, push_failures FROM agents WHERE agent_id = '$aid'")
	((${nb:-0} >= 8 && ${afail:-0} >= 1)) && break
	sleep 0.2
done
kill -TERM $AG
wait $AG || fail "agent run failed: $(grep -v level=debug "$TMP/agent.log" | tail -5)"
kill $SP 2>/dev/null
wait $SP 2>/dev/null
grep 'HTTP 503' "$TMP/agent.log" | head -2
# Every batch of the agent stored once: sequence numbers 1..N, all there,
# the store's count of its batches N, no duplicate; the 503'd batch among
# them; its failed pushes reported; the exporter's count of batches stored
# (its /metrics totals) equal to the rows of the store.
sql "SELECT seq FROM batches WHERE agent_id = '$aid' ORDER BY seq" >"$TMP/stored"
n=$(wc -l <"$TMP/stored")
IFS='|' read -r abatches afail < <(sql "SELECT batches, push_failures FROM agents
	WHERE agent_id = '$aid'")
rows=$(sql "SELECT count(*) FROM batches")
k=$(sed -n 's/.*recovered: batch \([0-9]*\) acked.*/\1/p' "$TMP/agent.log" | head -1)
info "agent: $n batches stored (store counts $abatches), batch $k acked after the 503s," \
	"push failures reported $afail; $rows batches in the store in all"
((n >= 8)) || fail "only $n batches of the agent stored in $(scaled 40) s"
[[ $(seq "$n" | tr '\n' ' ') == "$(tr '\n' ' ' <"$TMP/stored")" ]] ||
	fail "stored sequence numbers are not 1..$n: $(tr '\n' ' ' <"$TMP/stored")"
[[ $abatches == "$n" ]] || fail "the store counted $abatches batches of the agent, $n stored"
[[ -n $k ]] && grep -qx "$k" "$TMP/stored" || fail "the batch answered 503 ($k) was not stored"
((afail >= 1)) || fail "the agent reported no failed push"
[[ $(metric cgperf_exporter_batches_duplicate_total) == 0 ]] ||
	fail "the exporter saw duplicates: $(metric cgperf_exporter_batches_duplicate_total)"
[[ $(metric cgperf_exporter_batches_received_total) == "$rows" ]] ||
	fail "the exporter counted $(metric cgperf_exporter_batches_received_total) batches, $rows stored"

# --- 2. group commit: one batch refused, the two around it stored
kill -TERM $EXP
wait $EXP || fail "the exporter did not stop cleanly: $(tail -3 "$TMP/exporter.log")"
exporter 3
sql "CREATE TRIGGER test_refuse BEFORE INSERT ON counter_samples WHEN NEW.host = 'bad'
     BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END" || fail "cannot add the trigger"
errs0=$(metric cgperf_exporter_store_errors_total) # 0: a new process
stall
post "$TMP/ok1.pb" "$TMP/g0" & # alone: the store thread waits with it
G0=$!
sleep 0.3
gp=()
q=0
for b in ok2 bad1 ok3; do # queued in this order, committed as one group
	post "$TMP/$b.pb" "$TMP/g-$b" &
	gp+=($!)
	q=$((q + 1))
	for ((i = 0; i < $(scaled 100); i++)); do
		(($(metric cgperf_exporter_ingest_queue) >= q)) && break
		sleep 0.05
	done
	(($(metric cgperf_exporter_ingest_queue) == q)) ||
		fail "want $q pushes queued behind the stalled store, /metrics says $(metric cgperf_exporter_ingest_queue)"
done
unstall
wait $G0
for p in "${gp[@]}"; do wait "$p"; done
for b in 0 -ok2 -bad1 -ok3; do info "push g$b: $(cat "$TMP/g$b") $(tr -d '\r\n' <"$TMP/g$b.b")"; done
for b in 0 -ok2 -ok3; do
	read -r st _ <"$TMP/g$b"
	[[ $st == 200 ]] && grep -q '^stored' "$TMP/g$b.b" || fail "push g$b: $(cat "$TMP/g$b" "$TMP/g$b.b")"
done
read -r st _ <"$TMP/g-bad1"
[[ $st == 500 ]] || fail "the refused batch got $st (want 500): $(cat "$TMP/g-bad1.b")"
grep -q '^store failed: refused by the test trigger$' "$TMP/g-bad1.b" ||
	fail "the 500 does not carry its own reason: $(cat "$TMP/g-bad1.b")"
grep -q 'msg="cannot store batch" agent_id=bad seq=1 error="refused by the test trigger"' \
	"$TMP/exporter.log" || fail "the refusal's reason is not logged: $(grep 'cannot store' "$TMP/exporter.log")"
[[ $(metric cgperf_exporter_store_errors_total) == $((errs0 + 1)) ]] ||
	fail "store_errors_total $(metric cgperf_exporter_store_errors_total) (want $((errs0 + 1)))"
rows=$(sql "SELECT agent_id || ':' || seq || ':' || received_ns FROM batches WHERE agent_id IN ('ok', 'bad')
	ORDER BY seq" | tr '\n' ' ')
info "stored: $rows"
[[ $(sql "SELECT count(*) FROM batches WHERE agent_id = 'ok'") == 3 ]] || fail "want ok 1..3 stored: $rows"
[[ $(sql "SELECT count(DISTINCT received_ns) FROM batches WHERE agent_id = 'ok' AND seq IN (2, 3)") == 1 ]] ||
	fail "ok 2 and 3 were not committed in one group: $rows"
[[ $(sql "SELECT (SELECT count(*) FROM batches WHERE agent_id = 'bad') +
	(SELECT count(*) FROM counter_samples WHERE host = 'bad') +
	(SELECT count(*) FROM cgroups WHERE host = 'bad')") == 0 ]] ||
	fail "rows of the refused batch were stored"
# Without the trigger the same batch is stored, not taken for a duplicate.
sql "DROP TRIGGER test_refuse"
post "$TMP/bad1.pb" "$TMP/g-again"
read -r st _ <"$TMP/g-again"
[[ $st == 200 ]] && grep -q '^stored' "$TMP/g-again.b" ||
	fail "the refused batch sent again: $(cat "$TMP/g-again" "$TMP/g-again.b")"
kill -TERM $EXP
wait $EXP

# The setting's range, as a flag and as a YAML key.
"$EXPORTER" --listen 127.0.0.1:1 --data-dir "$TMP/x" --ingest-queue 0 2>"$TMP/bad.err" &&
	fail "--ingest-queue 0 was accepted"
grep -q "ingest-queue: '0': want a whole number 1..1000000" "$TMP/bad.err" ||
	fail "bad --ingest-queue: $(cat "$TMP/bad.err")"
printf 'listen: "127.0.0.1:1"\ndata_dir: %s\ningest_queue: 1000001\n' "$TMP/x" >"$TMP/bad.yaml"
"$EXPORTER" --config "$TMP/bad.yaml" 2>"$TMP/bad2.err" && fail "ingest_queue: 1000001 was accepted"
grep -q "ingest_queue: '1000001': want a whole number 1..1000000" "$TMP/bad2.err" ||
	fail "bad ingest_queue: $(cat "$TMP/bad2.err")"
echo "PASS: exporter_backpressure"
