#!/bin/bash
# Off-CPU time on PostgreSQL, one cluster in its own cgroup for both checks:
# two connections contend one row (one holds SELECT ... FOR UPDATE in an
# open transaction for 2 s, the other UPDATEs the row and waits for it).
#  1. record --off-cpu -G: the waiter's lock wait shows, under the lock
#     manager's frames (ProcSleep / XactLockTableWait / LockAcquire...) with
#     its kernel stack (epoll_wait), and lasts about as long as it waited
#     (the UPDATE's time as psql measures it);
#  2. run with sampling.off_cpu pushes it to the exporter as its own event
#     "off-cpu", kept apart from the CPU profile.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
source "$(dirname "$0")/../lib/exporter.sh"
cg_new pgoff
pg_start "$cg"
pg_psql -q -c "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0);" ||
	fail "cannot create the table"

# contend HOLD: the holder keeps the row for HOLD seconds; the waiter's
# session waits (in SQL, no psql start per try) until the holder has it
# (FOR UPDATE gave its transaction an xid), then sends its UPDATE.
# waited_us: the UPDATE's time by psql's \timing, from sending it to its
# answer (not psql's start and connection, slow on a busy machine).
contend() {
	local holder ms poll
	pg_psql -q -c "BEGIN; SELECT v FROM t WHERE id = 1 FOR UPDATE; SELECT pg_sleep($1); COMMIT;" \
		>/dev/null &
	holder=$!
	printf -v poll '%s' 'DO $p$ BEGIN FOR i IN 1..' "$(($(scaled 10) * 50))" ' LOOP
		PERFORM pg_stat_clear_snapshot();
		IF EXISTS (SELECT FROM pg_stat_activity WHERE backend_xid IS NOT NULL
			AND query LIKE $q$%FOR UPDATE%$q$ AND pid <> pg_backend_pid()) THEN RETURN; END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
	RAISE $q$the holder has not locked the row$q$; END $p$'
	ms=$(pg_psql -q -c "$poll" -c '\timing on' -c "UPDATE t SET v = v + 1 WHERE id = 1;" 2>"$TMP/waiter.err" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
	[[ -n $ms ]] || fail "waiter failed (or psql printed no time): $(cat "$TMP/waiter.err")"
	wait $holder || fail "holder failed"
	waited_us=$(awk -v m="$ms" 'BEGIN { printf "%d", m * 1000 }')
}

# 1. record, until SIGINT once the contention is over. It creates its -o
# file once its events are open, right before it enables them.
"$AGENT" record --off-cpu --call-graph dwarf -G "$rel" -o "$TMP/pg.folded" -v 2>"$TMP/err" &
rec=$!; bg_track $rec
for ((i = 0; i < $(scaled 10) * 100; i++)); do
	[[ -e $TMP/pg.folded ]] && break
	kill -0 $rec 2>/dev/null || fail "record --off-cpu exited: $(cat "$TMP/err")"
	sleep 0.01
done
[[ -e $TMP/pg.folded ]] || fail "record --off-cpu not recording after $(scaled 10)s: $(cat "$TMP/err")"
contend 2
kill -INT $rec
wait $rec || fail "record --off-cpu failed: $(cat "$TMP/err")"
cat "$TMP/err"
lockre='ProcSleep|XactLockTableWait|WaitOnLock|LockAcquire'
grep -E "$lockre" "$TMP/pg.folded" | sort -t' ' -k2 -n | tail -2
lock=$(awk -v re="$lockre" '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/pg.folded")
kern=$(awk -v re="$lockre" '$0 ~ re && /epoll_wait_\[k\]|do_epoll_wait_\[k\]|schedule_\[k\]/ { s += $NF } END { print s + 0 }' "$TMP/pg.folded")
info "the UPDATE waited $waited_us us (client side); off-CPU under the lock wait frames: $lock us," \
	"$kern us of it with a kernel wait stack"
((lock > 0)) || fail "no lock wait in the off-CPU stacks"
((lock * 100 >= waited_us * 70 && lock <= waited_us * 11 / 10)) ||
	fail "lock wait $lock us, the client waited $waited_us us"
((kern * 10 >= lock * 9)) || fail "the lock wait lacks its kernel stack"

# 2. run -> exporter: an "off-cpu" profile of the cgroup, apart from cpu-clock.
exporter_up
cat >"$TMP/agent.yaml" <<YAML
host: {name: offcpu-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel"]}
counters: {enabled: false}
sampling: {frequency: 49, call_graph: dwarf, off_cpu: true, off_cpu_min_us: 1000}
push: {interval: 1s, collectors: ["$ex/api/v1/push"], spool: {dir: $TMP/spool}}
YAML
# No --duration: the agent runs (its events open on the cgroup once it has
# started) until the contention is over; SIGTERM sends its last batch.
agent_run "$TMP/run.log" --config "$TMP/agent.yaml"
agent_started "$TMP/run.log"
contend 1.5
kill -TERM $ag
wait $ag || fail "run failed: $(tail -5 "$TMP/run.log")"
# every batch was acked (stored) before the agent exited; polled all the same
for ((i = 0; i < $(scaled 5) * 5; i++)); do
	curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=$rel" >"$TMP/ex-off.folded" &&
		xlock=$(awk -v re="$lockre" '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/ex-off.folded") &&
		((xlock * 100 >= waited_us * 70)) && break
	sleep 0.2
done
curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=$rel" >"$TMP/ex-off.folded" || fail "no off-cpu stacks"
curl -s "$ex/api/v1/stacks?event=cpu-clock&cgroup=$rel" >"$TMP/ex-cpu.folded"
xlock=$(awk -v re="$lockre" '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/ex-off.folded")
xcpu=$(awk -v re="$lockre" '$0 ~ re && !/pg_sleep/ { s += $NF } END { print s + 0 }' "$TMP/ex-cpu.folded")
info "run: the UPDATE waited $waited_us us; the exporter's off-cpu profile holds $xlock us under" \
	"the lock wait frames; the cpu-clock profile $xcpu samples there"
((xlock * 100 >= waited_us * 70 && xlock <= waited_us * 11 / 10)) ||
	fail "exporter: lock wait $xlock us, the client waited $waited_us us"
# Not summed with CPU samples unless asked for; pprof says what it counts.
# (cpu-clock is the one sampled event here: the default stacks are its
# samples, which may land in the lock manager's code now and then, and
# never the off-CPU microseconds)
curl -sf "$ex/api/v1/stacks?cgroup=$rel" >"$TMP/ex-all.folded" || true
alock=$(awk -v re="$lockre" '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/ex-all.folded")
clock=$(awk -v re="$lockre" '$0 ~ re { s += $NF } END { print s + 0 }' "$TMP/ex-cpu.folded")
((alock == clock)) ||
	fail "off-CPU microseconds summed into the default (all events) stacks: $alock under the lock frames, cpu-clock has $clock"
curl -sf "$ex/api/v1/stacks?event=off-cpu&cgroup=$rel&format=pprof" | gzip -d >"$TMP/off.pb" ||
	fail "no off-cpu pprof"
grep -qa microseconds "$TMP/off.pb" && grep -qa off-cpu "$TMP/off.pb" ||
	fail "the off-cpu pprof does not name its sample types off-cpu/microseconds"
exit 0
