#!/bin/bash
# cgperf-exporter: kill -9 during ingest, restart, every acknowledged batch is
# there. Three times over: 3 gen_batch clients (2 connections each, each
# client its own host and agent id) stream batches as fast as the exporter
# answers, printing each batch before it goes and each 200 as it arrives;
# once every client has had some answered, the exporter gets SIGKILL with
# requests in flight. Then:
#   - a copy of the database files taken right after the kill passes
#     PRAGMA integrity_check (python3's sqlite3) and its batches table holds
#     every acknowledged (agent id, seq);
#   - restarted on the same data directory, the exporter answers `duplicate`
#     to every acknowledged batch sent again, its duplicate counter goes up
#     by exactly their number and its totals do not move;
#   - batches sent but not acknowledged (in flight at the kill) are either
#     there (duplicate: committed, the answer was lost) or not (stored now);
#   - every perf_events_total series of a client's host equals the sum of
#     the counter values of the batches stored, before and after the resends;
#     /api/v1/targets counts the agent's batches likewise.
# At the end: a clean SIGTERM stop, integrity_check on the database itself,
# and nothing logged at warn or error level (nor by a sanitizer).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
GEN=$BUILD_DIR/tools/gen_batch
[[ -x $GEN ]] || fail "$GEN not built (make O=${BUILD:-build} build-tests)"
for c in curl python3; do command -v $c >/dev/null || fail "$c missing"; done
python3 -c 'import sqlite3' || fail "python3 has no sqlite3 module"

ROUNDS=3 CLIENTS=3
# Per batch: 3 cgroups x 4 counters (12 series per host), 20 stacks each.
CGROUPS=3 COUNTERS=4
shape=(--cgroups $CGROUPS --stacks 20 --depth 12 --counters $COUNTERS)
echo crash-token >"$TMP/token"
port=$(free_port)
url=http://127.0.0.1:$port
db=$TMP/data/cgperf.db

start_exporter() { # on $TMP/data, log $TMP/data.log; recovery may take a while
	EXP_WAIT=30 exp_start data "$port" --token-file "$TMP/token"
	EX=${EXP_PID[data]}
}
metric() { # NAME FILE
	awk -v p="$1" '$1 == p { print $2; exit }' "$2"
}
# series_check FILE HOST WANT WHAT: every perf_events_total series of HOST is WANT
series_check() {
	awk -v h="host=\"$2\"" -v w="$3" -v n=$((CGROUPS * COUNTERS)) '
		index($0, "cgperf_cgroup_perf_events_total{") == 1 && index($0, h) {
			c++; if ($NF != w) bad = bad "\n  " $0 }
		END { if (c != n || bad != "") { printf "%d series (want %d), want value %s:%s\n", c, n, w, bad; exit 1 } }' \
		"$1" || fail "$4: $2's totals are not the sum of its stored batches' values"
}
sum_values() { awk -v f="$1" '{ s += $f } END { printf "%.0f\n", s }'; } # FIELD
# integrity FILE [ACKS]: integrity_check passes; every "ack AGENT SEQ" of
# ACKS is in the batches table. Prints the number of batches.
integrity() {
	python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
check = db.execute("PRAGMA integrity_check").fetchall()
if check != [("ok",)]:
    sys.exit("integrity_check: %r" % (check,))
have = set(db.execute("SELECT agent_id, seq FROM batches"))
if len(sys.argv) > 2:
    acked = [l.split()[1:3] for l in open(sys.argv[2]) if l.startswith("ack ")]
    missing = [a for a in acked if (a[0], int(a[1])) not in have]
    if missing:
        sys.exit("%d of %d acknowledged batches not in the database: %s" %
                 (len(missing), len(acked), missing[:10]))
print(len(have))
PY
}

declare -A next prev stored_n
for ((k = 1; k <= CLIENTS; k++)); do
	next[$k]=1 prev[$k]=0 stored_n[$k]=0
done
start_exporter
for ((r = 1; r <= ROUNDS; r++)); do
	pids=()
	for ((k = 1; k <= CLIENTS; k++)); do
		"$GEN" "${shape[@]}" --host crash-h$k --agent crash-a$k --seq ${next[$k]} \
			--batches 100000 --threads 2 --token crash-token stream "$url/api/v1/push" \
			>"$TMP/r$r-c$k.out" 2>"$TMP/r$r-c$k.err" &
		pids+=($!)
		bg_track $!
	done
	# Kill once every client has been answered a few times, at a random
	# moment 0.2 to 0.7 s later: mid-stream, with requests in flight.
	for ((i = 0; ; i++)); do
		ready=0
		for ((k = 1; k <= CLIENTS; k++)); do
			(($(grep -c '^ack ' "$TMP/r$r-c$k.out") >= 10)) && ready=$((ready + 1))
		done
		((ready == CLIENTS)) && break
		for p in "${pids[@]}"; do
			kill -0 $p 2>/dev/null || fail "round $r: a client stopped early: $(cat "$TMP"/r$r-c*.err; tail -n 3 "$TMP"/r$r-c*.out)"
		done
		((i < $(scaled 600))) || fail "round $r: clients not answered within $(scaled 60) s: $(tail -n 3 "$TMP/data.log")"
		sleep 0.1
	done
	sleep "0.$((RANDOM % 6 + 2))"
	kill -KILL $EX
	wait $EX 2>/dev/null
	mkdir "$TMP/copy-$r"
	cp "$db"* "$TMP/copy-$r/"
	for ((k = 1; k <= CLIENTS; k++)); do
		wait ${pids[k - 1]}
		rc=$?
		[[ $rc == 3 ]] || fail "round $r client $k: exit $rc, want 3 (stopped by the kill): $(cat "$TMP/r$r-c$k.err")"
	done
	cat "$TMP"/r$r-c*.out >"$TMP/r$r.out"
	# Every failure is a lost connection, never an HTTP error.
	bad=$(grep '^fail ' "$TMP/r$r.out" | grep -v ' http=0 ')
	[[ -z $bad ]] || fail "round $r: the exporter answered errors before the kill: $bad"
	n_sent=$(grep -c '^sent ' "$TMP/r$r.out")
	n_ack=$(grep -c '^ack ' "$TMP/r$r.out")
	in_db=$(integrity "$TMP/copy-$r/cgperf.db" "$TMP/r$r.out") || fail "round $r: database copied after the kill: $in_db"
	info "round $r: $n_sent sent, $n_ack acknowledged; copy after kill -9: integrity ok, $in_db batches, every acknowledged one in it"

	start_exporter
	curl -sf "$url/metrics" >"$TMP/r$r-a.prom" || fail "round $r: no /metrics after restart"
	# The acknowledged batches again: all duplicates, nothing moves.
	for ((k = 1; k <= CLIENTS; k++)); do
		awk '$1 == "ack" { print $2, $3 }' "$TMP/r$r-c$k.out" |
			"$GEN" "${shape[@]}" --host crash-h$k --token crash-token resend "$url/api/v1/push" \
				>"$TMP/r$r-c$k.acked" || fail "round $r client $k: resend failed: $(grep -v duplicate "$TMP/r$r-c$k.acked" | head)"
	done
	cat "$TMP"/r$r-c*.acked >"$TMP/r$r.acked"
	[[ $(wc -l <"$TMP/r$r.acked") == "$n_ack" ]] || fail "round $r: resent $(wc -l <"$TMP/r$r.acked") of $n_ack"
	notdup=$(awk '$4 != "duplicate"' "$TMP/r$r.acked")
	[[ -z $notdup ]] || fail "round $r: acknowledged before kill -9 but not stored: $(head -5 <<<"$notdup")"
	curl -sf "$url/metrics" >"$TMP/r$r-b.prom"
	[[ $(metric cgperf_exporter_batches_duplicate_total "$TMP/r$r-b.prom") == "$n_ack" ]] ||
		fail "round $r: duplicate counter $(metric cgperf_exporter_batches_duplicate_total "$TMP/r$r-b.prom"), want $n_ack"
	[[ $(metric cgperf_exporter_batches_received_total "$TMP/r$r-b.prom") == 0 ]] ||
		fail "round $r: a resent acknowledged batch was stored again"
	cmp <(grep '^cgperf_cgroup_' "$TMP/r$r-a.prom") <(grep '^cgperf_cgroup_' "$TMP/r$r-b.prom") ||
		fail "round $r: resending acknowledged batches changed the totals"
	# The batches in flight: committed before the kill or not at all.
	n_dup=0 n_new=0
	for ((k = 1; k <= CLIENTS; k++)); do
		awk '$1 == "sent" { s[$2 " " $3] = 1 } $1 == "ack" { delete s[$2 " " $3] }
			END { for (b in s) print b }' "$TMP/r$r-c$k.out" |
			"$GEN" "${shape[@]}" --host crash-h$k --token crash-token resend "$url/api/v1/push" \
				>"$TMP/r$r-c$k.flight" || fail "round $r client $k: resend of unacknowledged failed"
		acked=$(awk '$1 == "ack"' "$TMP/r$r-c$k.out" | sum_values 4)
		was_in=$(awk '$4 == "duplicate"' "$TMP/r$r-c$k.flight" | sum_values 3)
		sent=$(awk '$1 == "sent"' "$TMP/r$r-c$k.out" | sum_values 4)
		series_check "$TMP/r$r-a.prom" crash-h$k $((prev[$k] + acked + was_in)) "round $r after restart"
		prev[$k]=$((prev[$k] + sent))
		stored_n[$k]=$((stored_n[$k] + $(grep -c '^sent ' "$TMP/r$r-c$k.out")))
		next[$k]=$(($(awk '$1 == "sent" && $3 > m { m = $3 } END { print m + 0 }' "$TMP/r$r-c$k.out") + 1))
		n_dup=$((n_dup + $(awk '$4 == "duplicate"' "$TMP/r$r-c$k.flight" | wc -l)))
		n_new=$((n_new + $(awk '$4 == "stored"' "$TMP/r$r-c$k.flight" | wc -l)))
	done
	((n_dup + n_new == n_sent - n_ack)) || fail "round $r: unacknowledged batches answered neither stored nor duplicate"
	curl -sf "$url/metrics" >"$TMP/r$r-c.prom"
	curl -sf "$url/api/v1/targets" >"$TMP/r$r-targets.json"
	[[ $(metric cgperf_exporter_batches_duplicate_total "$TMP/r$r-c.prom") == $((n_ack + n_dup)) &&
		$(metric cgperf_exporter_batches_received_total "$TMP/r$r-c.prom") == "$n_new" ]] ||
		fail "round $r: counters after the in-flight resends: $(grep '^cgperf_exporter_batches' "$TMP/r$r-c.prom")"
	for ((k = 1; k <= CLIENTS; k++)); do
		series_check "$TMP/r$r-c.prom" crash-h$k ${prev[$k]} "round $r after the in-flight resends"
		got=$(python3 -c 'import json, sys
print(next((a["batches"] for a in json.load(open(sys.argv[1]))["agents"] if a["agent_id"] == sys.argv[2]), -1))' \
			"$TMP/r$r-targets.json" crash-a$k)
		[[ $got == "${stored_n[$k]}" ]] || fail "round $r: targets counts $got batches of crash-a$k, want ${stored_n[$k]}"
	done
	info "round $r: restart: $n_ack acknowledged resent, all duplicates; of the $((n_sent - n_ack)) unacknowledged (in flight at the kill or sent after it) $n_dup had been stored, $n_new had not; totals = sums of stored batches"
done

kill -TERM $EX
wait $EX || fail "exporter did not stop cleanly on SIGTERM: $(tail -5 "$TMP/data.log")"
n=$(integrity "$db") || fail "database after the last stop: $n"
info "database after a clean stop: integrity ok, $n batches"
starts=$(grep -c 'msg="exporter started"' "$TMP/data.log")
((starts == ROUNDS + 1)) || fail "$starts starts logged, want $((ROUNDS + 1))"
alarm=$(grep -Ei 'level=(warn|error)|sanitizer|runtime error|corrupt|malformed' "$TMP/data.log")
[[ -z $alarm ]] || fail "the exporter logged: $alarm"
exit 0
