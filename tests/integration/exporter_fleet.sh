#!/bin/bash
# cgperf-exporter under a fleet (issue 10, "A thousand agents"):
#  1. 1000 simulated agents (tests/tools/agent_swarm), each with its own
#     kept-alive connection, push 100 batches/s in total for FLEET_SECONDS
#     (20: a 15 s timed window, 1500 batches; FLEET_SECONDS=60 for the full
#     minute of issue 10's soak) while /healthz is asked on a new connection every 100 ms: every
#     batch acked and stored once (no timeout, no resend, no duplicate, no
#     503), p99 ack latency under 500 ms, /healthz always answered and
#     never slower than 1 s (latencies of the steady window, after a 5 s
#     warm-up; see below); halfway, /metrics shows the 1000 connections and
#     at the end the exporter's own counts equal the swarm's;
#  2. 10,000 idle connections held (the test raises its open files limit to
#     the hard one) while /healthz still answers within 100 ms (the median;
#     each within 1 s), all still
#     open at the end, and /metrics counts them;
#  3. settings (YAML keys and flags): a connection limit above the open
#     files limit is lowered, and said in the log; an idle timeout of 2s
#     closes connections idle for 4s; an out-of-range limit is refused.
# Both processes are on this shared 2-core VM, beside the rest of the suite:
# the latency bounds here catch a stuck or serialized event loop (seconds),
# not a slow one. The issue's figures (p99 under 50 ms, /healthz under 100
# ms; measured ~5 and ~10 ms when idle, 66 and 110 ms with the suite and two
# compilers beside it) are measured by bench/bench_exporter.sh, part 3.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
SWARM=$BUILD_DIR/tools/agent_swarm
SECS=${FLEET_SECONDS:-20}
AGENTS=1000 RATE=100 IDLE=10000
[[ -x $SWARM ]] || fail "$SWARM not built (make O=${BUILD:-build} build-tests)"
command -v curl >/dev/null || fail "curl missing"

# Each of the two processes needs a descriptor per connection.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
nofile=$(ulimit -n)
[[ $nofile == unlimited ]] || ((nofile >= IDLE + 200)) ||
	skip "open files hard limit $nofile is below the $IDLE connections this test holds"

exporter_up
EXP=$EX_PID url=$ex
grep -q 'max_connections=16384' "$TMP/exporter.log" ||
	fail "the default connection limit is not 16384: $(head -3 "$TMP/exporter.log")"

metric() { # NAME: its value on /metrics
	curl -sf "$url/metrics" | awk -v n="$1" '$1 == n { print $2; exit }'
}
field() { # LINE KEY
	tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

# --- 1. the fleet pushing
# Every count is asserted on the run as it is. The latency bounds (ten
# times the issue's, see above) are on the steady window: pushes and
# /healthz requests started in the first WARM seconds (1000 connections
# opened, the store's first commits) are left out of the percentiles. When
# only the latency bounds miss, the fleet runs once more and the second run
# must meet them: both lines are printed. Under a sanitized build
# (TIME_SCALE) the bounds are scaled.
WARM=5
P99_MAX=$(scaled 500) HEALTHZ_MAX=$(scaled 1000)
((TIME_SCALE > 1)) && info "sanitized build: latency bounds x$TIME_SCALE: p99 < $P99_MAX ms, /healthz < $HEALTHZ_MAX ms"
fleet() { # ATTEMPT: run the swarm; fail on any count; 1 when a latency bound missed
	local got0 dup0 conns line sent want k v hn got dup slow=0
	got0=$(metric cgperf_exporter_batches_received_total)
	dup0=$(metric cgperf_exporter_batches_duplicate_total)
	info "attempt $1: $AGENTS agents, $RATE batches/s, ${SECS}s (first ${WARM}s not timed)"
	"$SWARM" --agents $AGENTS --rate $RATE --duration "$SECS" --warmup $WARM --healthz-ms 100 \
		--timeout-ms 5000 push "$url" >"$TMP/swarm$1.out" 2>"$TMP/swarm$1.err" &
	SW=$!
	bg_track $SW
	sleep $((SECS / 2))
	conns=$(metric cgperf_exporter_connections)
	wait $SW || fail "agent_swarm failed: $(tail -5 "$TMP/swarm$1.err")"
	line=$(tail -n 1 "$TMP/swarm$1.out")
	info "attempt $1: $line"
	info "attempt $1: connections halfway: $conns"
	[[ $line == swarm\ * ]] || fail "no summary from agent_swarm: $(cat "$TMP/swarm$1.out" "$TMP/swarm$1.err")"
	sent=$(field "$line" sent)
	want=$((SECS * RATE * 95 / 100))
	((sent >= want)) || fail "only $sent batches sent in ${SECS}s (want >= $want)"
	for k in timeouts resends duplicates busy errors closed; do
		v=$(field "$line" $k)
		[[ $v == 0 ]] || fail "$k=$v (want 0): $line"
	done
	[[ $(field "$line" acked) == "$sent" && $(field "$line" stored) == "$sent" ]] ||
		fail "not every batch acked as stored: $line"
	hn=$(field "$line" healthz_n)
	((hn >= (SECS - WARM) * 5)) || fail "only $hn /healthz answers in $((SECS - WARM))s"
	[[ $(field "$line" healthz_fail) == 0 ]] || fail "/healthz failed: $line"
	((conns >= AGENTS)) || fail "/metrics showed $conns connections halfway (want >= $AGENTS)"
	got=$(($(metric cgperf_exporter_batches_received_total) - got0))
	dup=$(($(metric cgperf_exporter_batches_duplicate_total) - dup0))
	[[ $got == "$sent" && $dup == 0 ]] ||
		fail "exporter stored $got batches ($dup duplicates), the swarm had $sent acked"
	awk -v p="$(field "$line" p99_ms)" -v m=$P99_MAX 'BEGIN { exit !(p < m) }' || {
		info "attempt $1: p99 ack latency $(field "$line" p99_ms) ms (want < $P99_MAX)"
		slow=1
	}
	awk -v x="$(field "$line" healthz_max_ms)" -v m=$HEALTHZ_MAX 'BEGIN { exit !(x < m) }' || {
		info "attempt $1: /healthz took up to $(field "$line" healthz_max_ms) ms (want < $HEALTHZ_MAX)"
		slow=1
	}
	return $slow
}
if ! fleet 1; then
	info "latency bounds missed on attempt 1; once more"
	fleet 2 || fail "latency bounds missed twice: $(tail -qn 1 "$TMP/swarm1.out" "$TMP/swarm2.out")"
fi

# --- 2. idle connections
info "$IDLE idle connections"
"$SWARM" --idle $IDLE --duration 8 --healthz-ms 100 idle "$url" >"$TMP/idle.out" \
	2>"$TMP/idle.err" &
SW=$!
bg_track $SW
conns=0
for ((i = 0; i < 60 && conns < IDLE; i++)); do
	sleep 0.25
	conns=$(metric cgperf_exporter_connections)
done
wait $SW || fail "agent_swarm idle failed: $(tail -5 "$TMP/idle.err")"
line=$(tail -n 1 "$TMP/idle.out")
info "$line"
info "connections while held: $conns"
[[ $line == idle\ * ]] || fail "no summary from agent_swarm idle: $(cat "$TMP/idle.out" "$TMP/idle.err")"
[[ $(field "$line" held) == "$IDLE" ]] || fail "held $(field "$line" held) of $IDLE: $line"
((conns >= IDLE)) || fail "/metrics showed at most $conns connections (want >= $IDLE)"
hn=$(field "$line" healthz_n)
((hn >= 20)) && [[ $(field "$line" healthz_fail) == 0 ]] ||
	fail "/healthz failed with $IDLE connections open: $line"
# Idle connections cost the event loop nothing per request: the median
# answer within the bound; every one within ten times it (one slow answer is
# the shared VM's scheduling, a stuck loop would be all of them).
awk -v m="$(field "$line" healthz_p50_ms)" -v b=$(scaled 100) 'BEGIN { exit !(m < b) }' ||
	fail "/healthz took $(field "$line" healthz_p50_ms) ms (median) with $IDLE connections open"
awk -v m="$(field "$line" healthz_max_ms)" -v b=$(scaled 1000) 'BEGIN { exit !(m < b) }' ||
	fail "/healthz took up to $(field "$line" healthz_max_ms) ms with $IDLE connections open"
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$EXP/status")
info "exporter RSS after: $((rss / 1024)) MiB"
kill -TERM $EXP
wait $EXP
if grep -E 'level=(warn|error)' "$TMP/exporter.log"; then
	fail "the exporter logged warnings or errors"
fi

# --- 3. settings: a connection limit the open files limit cannot hold is
# lowered with a warning; the idle timeout closes idle connections; bad
# values are refused
"$EXPORTER" --listen 127.0.0.1:1 --data-dir "$TMP/x" --max-connections 5 2>"$TMP/bad.err" &&
	fail "--max-connections 5 was accepted"
grep -q "max-connections: '5': want a whole number 16..1000000" "$TMP/bad.err" ||
	fail "bad --max-connections: $(cat "$TMP/bad.err")"
port=$(free_port)
cat >"$TMP/exporter.yaml" <<EOF
listen: "127.0.0.1:$port"
data_dir: $TMP/data2
max_connections: 5000
idle_timeout: 2s
EOF
(
	ulimit -n 1000
	exec "$EXPORTER" --config "$TMP/exporter.yaml"
) 2>"$TMP/exporter2.log" &
EXP=$!
bg_track $EXP
wait_http "http://127.0.0.1:$port/healthz" 10 "$TMP/exporter2.log"
grep -q 'level=warn.*open files limit.*nofile=1000 max_connections=5000 using=936' \
	"$TMP/exporter2.log" || fail "no warning for a low open files limit: $(cat "$TMP/exporter2.log")"
grep -q 'idle_timeout=2s' "$TMP/exporter2.log" || fail "idle_timeout not taken: $(cat "$TMP/exporter2.log")"
[[ $(curl -sf "http://127.0.0.1:$port/metrics" |
	awk '$1 == "cgperf_exporter_connection_limit" { print $2 }') == 936 ]] ||
	fail "the connection limit was not lowered to 936"
"$SWARM" --idle 50 --duration 4 --healthz-ms 0 idle "http://127.0.0.1:$port" >"$TMP/idle2.out" \
	2>"$TMP/idle2.err" || fail "agent_swarm idle failed: $(cat "$TMP/idle2.err")"
line=$(tail -n 1 "$TMP/idle2.out")
info "idle timeout 2s, connections idle 4s: $line"
[[ $(field "$line" held) == 0 ]] || fail "idle connections outlived --idle-timeout: $line"
kill -TERM $EXP
wait $EXP
echo "PASS: exporter_fleet"
