#!/bin/bash
# cgperf-exporter on one core (taskset -c 1; the load generator on core 0):
#  1. ingest: gen_batch POSTs agent-like batches (50 cgroups x 200 distinct
#     stacks of depth 20, 10 counters per cgroup; all built before the
#     clock starts) over 2 connections: batches/s, stack rows/s, and the
#     exporter's own CPU seconds per batch; raw and gzip'd bodies;
#  2. /metrics with ~100,000 series (10,000 cgroups x 10 events, one push):
#     20 scrapes, median time and bytes; Prometheus Pushgateway (Debian's,
#     also on core 1) fed the same series (the exporter's cgperf_cgroup_*
#     lines, PUT to /metrics/job/bench), 20 scrapes of its /metrics; the
#     ratio.
#  3. a fleet (tests/tools/agent_swarm, on core 0): 1000 agents at 100
#     batches/s in total with kept-alive connections, then the same with a new
#     connection per push (the two agent designs), then 10,000 agents at 667
#     batches/s (a 10,000-host fleet pushing every 15 s): ack latency
#     percentiles, timeouts, resends, /healthz latency, exporter CPU; then
#     10,000 idle connections: the exporter's RSS and /healthz meanwhile;
#     with --store clickhouse the first run again on the ClickHouse store,
#     its INSERTs one at a time (CGPERF_CLICKHOUSE_SERIAL=1) and then at
#     once: ack latency before and after.
# With --store clickhouse, part 1 runs on SQLite and then on the ClickHouse
# store (a clickhouse-server started here on core 0, next to the load
# generator) and prints the ratio of their batches/s; after the raw-body
# run of each, the folded stacks of the last hour (every row) are read 3
# times: the median time of the query.
# Printed figures only. Knobs: BENCH_BATCHES (default 60), BENCH_SCRAPES (20),
# BENCH_CGROUPS_METRICS (10000), BENCH_FLEET_SECONDS (20; 0 skips part 3),
# BENCH_ONLY_FLEET=1 (part 3 alone), BENCH_ONLY_READS=1 (1b and 1c alone,
# with --store clickhouse), BENCH_FLAME_ROWS (1b: 10,000,000),
# BENCH_SERIES_ROWS (1c: 8,640,000).
source "$(dirname "$0")/../tests/lib/common.sh"
source "$(dirname "$0")/../tests/lib/clickhouse.sh"
STORES=sqlite
case "${1:-}" in
--store) [[ ${2:-} == clickhouse ]] && STORES="sqlite clickhouse" ;;
--store=clickhouse) STORES="sqlite clickhouse" ;;
esac
GEN=$BUILD_DIR/tools/gen_batch
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
BATCHES=${BENCH_BATCHES:-60}
SCRAPES=${BENCH_SCRAPES:-20}
MCG=${BENCH_CGROUPS_METRICS:-10000}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
[[ -x $GEN ]] || fail "$GEN not built (make O=${BUILD:-build} build-tests)"
command -v taskset >/dev/null || fail "taskset missing (util-linux)"
hz=$(getconf CLK_TCK)
ncpu=$(nproc)
core_ex=$((ncpu > 1 ? 1 : 0))

cpu_s() { # PID: user + system CPU seconds so far
	awk -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
start_exporter() { # NAME [ARGS]: sets EXP (pid) and EXURL
	local port n=$1
	shift
	port=$(free_port)
	taskset -c $core_ex "$EXPORTER" --listen "127.0.0.1:$port" --data-dir "$TMP/$n" \
		--log-level warn "$@" 2>>"$TMP/$n.log" &
	EXP=$!
	bg_track $EXP
	EXURL=http://127.0.0.1:$port
	wait_http "$EXURL/healthz" 10 "$TMP/$n.log"
}
# scrapes URL N [ARGS]: "median_ms bytes failures" of N GETs of URL
scrapes() {
	local url=$1 n=$2 i bad=0
	shift 2
	: >"$TMP/scrapes"
	for ((i = 0; i < n; i++)); do
		curl -sf -o /dev/null -w '%{time_total} %{size_download}\n' "$@" "$url" >>"$TMP/scrapes" ||
			bad=$((bad + 1))
	done
	sort -n "$TMP/scrapes" | awk -v bad=$bad '{ t[NR] = $1 * 1000; b = $2 }
		END { if (!NR) { print "nan 0 " bad; exit }
		      m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
		      printf "%.1f %d %d\n", m, b, bad }'
}

echo "# exporter on core $core_ex of $ncpu; load generator on core 0; $(uname -r)"

# --- 1. ingest
declare -A RATE
ONLY_FLEET=${BENCH_ONLY_FLEET:-0}
ONLY_READS=${BENCH_ONLY_READS:-0}
for store in $STORES; do
	((ONLY_FLEET || ONLY_READS)) && break
	args=()
	if [[ $store == clickhouse ]]; then
		why=$(ch_available) || { echo "ingest (clickhouse): SKIPPED ($why)"; continue; }
		ch_start bench || fail "clickhouse-server did not start"
		taskset -pc 0 "${CH_PID[bench]}" >/dev/null
		args=(--store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[bench]}")
	fi
for mode in raw gzip; do
	start_exporter "ingest-$store-$mode" "${args[@]}" ${args[0]:+--clickhouse-database "b_$mode"}
	c0=$(cpu_s $EXP)
	z=()
	[[ $mode == gzip ]] && z=(--gzip)
	out=$(taskset -c 0 "$GEN" --cgroups 50 --stacks 200 --depth 20 --counters 10 "${z[@]}" \
		--batches "$BATCHES" --threads 2 --agent "bench-$mode" push "$EXURL/api/v1/push" 2>&1)
	rc=$?
	c1=$(cpu_s $EXP)
	if [[ $store == clickhouse ]]; then
		size=$(du -sk "$TMP/ch-bench/data" | awk '{ printf "%.1f", $1 / 1024 }')
	else
		size=$(du -sk "$TMP/ingest-$store-$mode" | awk '{ printf "%.1f", $1 / 1024 }')
	fi
	RATE[$store-$mode]=$(sed -n 's/.*batches_per_s=\([0-9.]*\).*/\1/p' <<<"$out")
	echo "ingest ($store, $mode bodies): $out"
	if [[ $mode == raw ]]; then
		read -r fl_ms fl_bytes fl_bad < <(scrapes "$EXURL/api/v1/stacks?from=-1h" 3)
		echo "flame graph query ($store): every stack of the last hour ($((BATCHES * 50 * 200)) sample rows, $fl_bytes bytes folded): median of 3 $fl_ms ms$( ((fl_bad)) && echo ", $fl_bad FAILED")"
	fi
	awk -v a="$c0" -v b="$c1" -v n="$BATCHES" -v s="$size" -v rc=$rc 'BEGIN {
		printf "ingest (%s, %s): exporter CPU %.2f s for %d batches = %.1f ms per batch (%.0f stack rows per CPU second); store %s MiB%s\n",
			"'$store'", "'$mode'", b - a, n, (b - a) * 1000 / n, (b > a) ? n * 50 * 200 / (b - a) : 0, s,
			rc ? " (SOME PUSHES FAILED)" : "" }'
	kill -TERM $EXP
	wait $EXP 2>/dev/null
done
	[[ $store == clickhouse ]] && ch_stop bench
done
for mode in raw gzip; do
	[[ -n ${RATE[clickhouse-$mode]:-} && -n ${RATE[sqlite-$mode]:-} ]] || continue
	awk -v c="${RATE[clickhouse-$mode]}" -v q="${RATE[sqlite-$mode]}" -v m=$mode 'BEGIN {
		if (q > 0) printf "ingest ratio (%s): clickhouse %.1f / sqlite %.1f batches/s = %.2f (ClickHouse on core 0 with the load generator)\n", m, c, q, c / q }'
done

# --- 1b. the one-hour flame graph of a 1000-agent fleet (--store clickhouse)
# BENCH_FLAME_ROWS sample rows (10,000,000 by default) as 1000 agents would
# have written them in the last hour: a batch per agent every 10 s (360,000
# batches, ~28 stack rows each, 10 cgroups per host, 2000 distinct stacks of
# depth 20), made in the stores by SQL (pushing them would take longer than
# the query), then GET /api/v1/stacks?from=-${FHOURS}h 5 times, folded and as the
# page's format=json: the medians
# (ClickHouse on both cores, after its merges; the SQLite exporter on core
# 1). SQLite keeps one row per (minute, host, cgroup, event, stack): fewer
# rows. The window moves between the two runs: the oldest minute may fall
# out of the second one (a few bytes less).
# BENCH_FLAME_HOURS=24: a day of the same fleet instead (240,000,000 rows
# by default; SQLite left out unless BENCH_FLAME_SQLITE=1).
FHOURS=${BENCH_FLAME_HOURS:-1}
FROWS=${BENCH_FLAME_ROWS:-$((10000000 * FHOURS))}
FSQLITE=${BENCH_FLAME_SQLITE:-$((FHOURS == 1))}
if ((ONLY_FLEET)); then
	:
elif [[ $STORES == *clickhouse* ]] && why=$(ch_available); then
	ch_start flame || fail "clickhouse-server did not start"
	start_exporter flame-ch --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[flame]}" \
		--clickhouse-database fleet
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	now=$(date +%s)
	t0=$(((now - FHOURS * 3600 + 10) * 1000000000))
	# n: row; b = n / 28: batch; agent b % 1000, seq b / 1000 (every 10 s)
	BT="($t0 + intDiv(intDiv(number, 28), 1000) * 10000000000)"
	T0=$(date +%s.%N)
	ch_query flame "INSERT INTO fleet.stacks SELECT number + 1, arrayStringConcat(arrayMap(i -> concat('fn_', toString((number * 31 + i * 7) % 5000)), range(20)), ';'), '' FROM numbers(2000)" &&
	ch_query flame "INSERT INTO fleet.batches SELECT concat('agent-', toString(number % 1000)), intDiv(number, 1000), concat('host-', toString(number % 1000)), 'bench', $t0 + intDiv(number, 1000) * 10000000000 AS s, s + 10000000000, s + 10000000000, 28, 28, 0, 0, 0, 0, 0, 0, 0, 0, number + 1 FROM numbers($(((FROWS + 27) / 28)))" &&
	ch_query flame "INSERT INTO fleet.samples SELECT $BT - $BT % 60000000000, concat('host-', toString(intDiv(number, 28) % 1000)), concat('/fleet/app-', toString(number % 10)), 'cpu-clock', 99, 0, (number * 7919) % 2000 + 1, 1 + number % 50, concat('agent-', toString(intDiv(number, 28) % 1000)), intDiv(intDiv(number, 28), 1000), intDiv(number, 28) + 1 FROM numbers($FROWS)" ||
		fail "could not fill ClickHouse"
	T1=$(date +%s.%N)
	crows=$(ch_query flame "SELECT count() FROM fleet.samples")
	for ((i = 0; i < 60; i++)); do # let the merges of the fresh parts end
		[[ $(ch_query flame "SELECT count() FROM system.merges") == 0 ]] && break
		sleep 1
	done
	start_exporter flame-ch --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[flame]}" \
		--clickhouse-database fleet
	read -r fc_ms fc_bytes fc_bad < <(scrapes "$EXURL/api/v1/stacks?from=-${FHOURS}h" 5)
	read -r fcj_ms fcj_bytes fcj_bad < <(scrapes "$EXURL/api/v1/stacks?from=-${FHOURS}h&format=json" 5)
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	ch_stop flame
	echo "flame graph, 1000 agents x $FHOURS h (clickhouse): $crows sample rows (made in $(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.0f", b - a }') s), $fc_bytes bytes folded: median of 5 $fc_ms ms$( ((fc_bad)) && echo ", $fc_bad FAILED")"
	echo "flame graph, 1000 agents x $FHOURS h (clickhouse), format=json (the page's): $fcj_bytes bytes: median of 5 $fcj_ms ms$( ((fcj_bad)) && echo ", $fcj_bad FAILED")"
fi
if ((ONLY_FLEET)) || ! ((FSQLITE)); then
	:
elif [[ $STORES == *clickhouse* ]] && why=$(ch_available); then
	start_exporter flame-sq
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	T0=$(date +%s.%N)
	sqlite3 "$TMP/flame-sq/cgperf.db" <<-SQL || fail "could not fill SQLite"
		PRAGMA synchronous=OFF;
		BEGIN;
		WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < 1999),
		f(x, i, t) AS (SELECT x, 1, 'fn_' || ((x * 31) % 5000) FROM n
			UNION ALL SELECT x, i + 1, t || ';fn_' || ((x * 31 + i * 7) % 5000) FROM f WHERE i < 20)
		INSERT INTO stacks(id, folded) SELECT x + 1, t FROM f WHERE i = 20;
		WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < $FROWS - 1)
		INSERT INTO stack_samples SELECT ($t0 + (x / 28 / 1000) * 10000000000) / 60000000000 * 60000000000,
			'host-' || ((x / 28) % 1000), '/fleet/app-' || (x % 10), 'cpu-clock', 99, 0,
			(x * 7919) % 2000 + 1, 1 + x % 50 FROM n WHERE 1
			ON CONFLICT DO UPDATE SET count = count + excluded.count;
		COMMIT;
	SQL
	T1=$(date +%s.%N)
	srows=$(sqlite3 "$TMP/flame-sq/cgperf.db" "SELECT count(*) FROM stack_samples")
	start_exporter flame-sq
	read -r fs_ms fs_bytes fs_bad < <(scrapes "$EXURL/api/v1/stacks?from=-${FHOURS}h" 5)
	read -r fsj_ms fsj_bytes fsj_bad < <(scrapes "$EXURL/api/v1/stacks?from=-${FHOURS}h&format=json" 5)
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	echo "flame graph, 1000 agents x $FHOURS h (sqlite): $srows sample rows (made in $(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.0f", b - a }') s), $fs_bytes bytes folded: median of 5 $fs_ms ms$( ((fs_bad)) && echo ", $fs_bad FAILED")"
	echo "flame graph, 1000 agents x $FHOURS h (sqlite), format=json (the page's): $fsj_bytes bytes: median of 5 $fsj_ms ms$( ((fsj_bad)) && echo ", $fsj_bad FAILED")"
	awk -v c="$fc_ms" -v q="$fs_ms" 'BEGIN { if (c > 0) printf "flame graph ratio: sqlite %.0f ms / clickhouse %.0f ms = %.2f\n", q, c, q / c }'
elif [[ $STORES == *clickhouse* ]]; then
	echo "flame graph 1000 agents: SKIPPED ($why)"
fi

# --- 1c. the page's series of 1000 cgroups over 24 h (--store clickhouse)
# 100 agents of 10 cgroups each, a batch per agent every 10 s for the last
# 24 h (864,000 batches, 8,640,000 task-clock counter rows), made in the
# stores by SQL as in 1b; then GET /api/v1/series?from=-24h with top=10 and
# top=100 (the most a query may ask), 3 times each: the medians.
SROWS=${BENCH_SERIES_ROWS:-8640000}
series_fill_ch() { # DB
	local db=$1 nb=$(((SROWS + 9) / 10)) t0
	t0=$((($(date +%s) - 86390) * 1000000000))
	ch_query flame "INSERT INTO $db.batches SELECT concat('agent-', toString(number % 100)), intDiv(number, 100), concat('host-', toString(number % 100)), 'bench', $t0 + intDiv(number, 100) * 10000000000 AS s, s + 10000000000, s + 10000000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, number + 1 FROM numbers($nb)" &&
	ch_query flame "INSERT INTO $db.counters SELECT concat('agent-', toString(b % 100)), intDiv(b, 100), number + 1, concat('host-', toString(b % 100)), concat('/fleet/app-', toString(number % 10)), 'task-clock', v, 10000000000, 10000000000, 1, toFloat64(v), $t0 + intDiv(b, 100) * 10000000000 + 10000000000 FROM (SELECT number, intDiv(number, 10) AS b, 1000000000 + (number * 7919) % 5000000000 AS v FROM numbers($SROWS))"
}
series_fill_sq() { # DBFILE
	local t0
	t0=$((($(date +%s) - 86390) * 1000000000))
	sqlite3 "$1" <<-SQL
		PRAGMA synchronous=OFF;
		BEGIN;
		WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < ($SROWS + 9) / 10 - 1)
		INSERT INTO batches(agent_id, seq, host, start_ns, end_ns, received_ns)
			SELECT 'agent-' || (x % 100), x / 100, 'host-' || (x % 100), $t0 + (x / 100) * 10000000000,
			$t0 + (x / 100) * 10000000000 + 10000000000, $t0 + (x / 100) * 10000000000 + 10000000000 FROM n;
		WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < $SROWS - 1)
		INSERT INTO counter_samples(host, agent_id, seq, cgroup_path, container_id, pod_uid, unit, event,
			value, time_enabled, time_running, supported)
			SELECT 'host-' || ((x / 10) % 100), 'agent-' || ((x / 10) % 100), x / 10 / 100,
			'/fleet/app-' || (x % 10), '', '', '', 'task-clock', 1000000000 + (x * 7919) % 5000000000,
			10000000000, 10000000000, 1 FROM n;
		COMMIT;
	SQL
}
series_scrapes() { # STORE-LABEL ROWS MADE_S
	local top
	for top in 10 100; do
		read -r ms bytes bad < <(scrapes "$EXURL/api/v1/series?from=-24h&top=$top" 3)
		echo "series, 1000 cgroups x 24 h ($1): $2 counter rows (made in $3 s), top=$top: $bytes bytes, median of 3 $ms ms$( ((bad)) && echo ", $bad FAILED")"
	done
}
if ((ONLY_FLEET)); then
	:
elif [[ $STORES == *clickhouse* ]] && why=$(ch_available); then
	ch_start flame || fail "clickhouse-server did not start"
	start_exporter series-ch --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[flame]}" \
		--clickhouse-database series
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	T0=$(date +%s.%N)
	series_fill_ch series || fail "could not fill ClickHouse"
	T1=$(date +%s.%N)
	crows=$(ch_query flame "SELECT count() FROM series.counters")
	for ((i = 0; i < 60; i++)); do
		[[ $(ch_query flame "SELECT count() FROM system.merges") == 0 ]] && break
		sleep 1
	done
	start_exporter series-ch --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[flame]}" \
		--clickhouse-database series
	series_scrapes clickhouse "$crows" "$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.0f", b - a }')"
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	ch_stop flame
	start_exporter series-sq
	kill -TERM $EXP
	wait $EXP 2>/dev/null
	T0=$(date +%s.%N)
	series_fill_sq "$TMP/series-sq/cgperf.db" || fail "could not fill SQLite"
	T1=$(date +%s.%N)
	srows=$(sqlite3 "$TMP/series-sq/cgperf.db" "SELECT count(*) FROM counter_samples")
	start_exporter series-sq
	series_scrapes sqlite "$srows" "$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.0f", b - a }')"
	kill -TERM $EXP
	wait $EXP 2>/dev/null
elif [[ $STORES == *clickhouse* ]]; then
	echo "series 1000 cgroups: SKIPPED ($why)"
fi

# --- 3. a fleet (before /metrics: part 2 may exit early without Pushgateway)
FLEET_S=${BENCH_FLEET_SECONDS:-20}
SWARM=$BUILD_DIR/tools/agent_swarm
if ((FLEET_S > 0 && !ONLY_READS)) && [[ -x $SWARM ]]; then
	ulimit -n "$(ulimit -Hn)" 2>/dev/null
	FLEET_STORE=() # the exporter's store arguments
	fleet() { # NAME SWARM-ARGS...: one exporter, one swarm run, one line
		local name=$1 c0 c1 rss sw
		shift
		start_exporter "fleet-$name" "${FLEET_STORE[@]}"
		c0=$(cpu_s $EXP)
		taskset -c 0 "$SWARM" "$@" "$EXURL" >"$TMP/swarm-$name" 2>&1 &
		sw=$!
		sleep $((FLEET_S / 2 + 1))
		rss=$(awk '/^VmRSS/ { print $2 }' /proc/$EXP/status) # mid-run: connections open
		wait $sw
		c1=$(cpu_s $EXP)
		echo "fleet $name: $(tail -n 1 "$TMP/swarm-$name")"
		awk -v a="$c0" -v b="$c1" -v s="$FLEET_S" -v n="$name" -v r="$rss" \
			'BEGIN { printf "fleet %s: exporter CPU %.2f s = %.1f%% of a core; RSS mid-run %.0f MiB\n", n, b - a, (b - a) * 100 / s, r / 1024 }'
		kill -TERM $EXP
		wait $EXP 2>/dev/null
	}
	fleet keepalive-1000 --agents 1000 --rate 100 --duration "$FLEET_S" push
	if [[ $STORES == *clickhouse* ]] && ch_available >/dev/null; then
		ch_start fleet || fail "clickhouse-server did not start"
		taskset -pc 0 "${CH_PID[fleet]}" >/dev/null
		FLEET_STORE=(--store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[fleet]}")
		# the store's INSERTs one after the other (as before), then at once
		CGPERF_CLICKHOUSE_SERIAL=1 fleet keepalive-1000-clickhouse-serial --agents 1000 \
			--rate 100 --duration "$FLEET_S" push
		fleet keepalive-1000-clickhouse --agents 1000 --rate 100 --duration "$FLEET_S" push
		FLEET_STORE=()
		ack() { tail -n 1 "$TMP/swarm-$1" | tr ' ' '\n' | grep -E '^(p50|p99)_ms=' | tr '\n' ' '; }
		echo "clickhouse acks, 1000 agents at 100 batches/s: INSERTs one at a time $(ack keepalive-1000-clickhouse-serial); at once $(ack keepalive-1000-clickhouse)"
		ch_stop fleet
	fi
	fleet close-1000 --agents 1000 --rate 100 --duration "$FLEET_S" --close push
	fleet keepalive-10000 --agents 10000 --rate 667 --duration "$FLEET_S" push
	fleet idle-10000 --idle 10000 --duration "$FLEET_S" idle
else
	echo "fleet: SKIPPED (BENCH_FLEET_SECONDS=0 or $SWARM not built)"
fi

# --- 2. /metrics with ~100k series
((ONLY_FLEET || ONLY_READS)) && exit 0
start_exporter metrics
"$GEN" --cgroups "$MCG" --stacks 0 --counters 10 --agent bench-metrics write "$TMP/m.pb" ||
	fail "gen_batch write failed"
st=$(curl -s -o "$TMP/resp" -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
	--data-binary "@$TMP/m.pb" "$EXURL/api/v1/push")
[[ $st == 200 ]] || fail "the $MCG-cgroup batch was refused: HTTP $st $(cat "$TMP/resp")"
curl -sf "$EXURL/metrics" >"$TMP/metrics.txt" || fail "no /metrics"
series=$(grep -c '^cgperf_cgroup_' "$TMP/metrics.txt")
c0=$(cpu_s $EXP)
read -r ex_ms ex_bytes ex_bad < <(scrapes "$EXURL/metrics" "$SCRAPES")
c1=$(cpu_s $EXP)
ex_cpu=$(awk -v a="$c0" -v b="$c1" -v n="$SCRAPES" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }')
echo "cgperf-exporter /metrics: $series cgperf_cgroup_* series, $SCRAPES scrapes: median $ex_ms ms, $ex_bytes bytes, ~$ex_cpu ms CPU per scrape$( ((ex_bad)) && echo ", $ex_bad FAILED")"
read -r exz_ms exz_bytes _ < <(scrapes "$EXURL/metrics" "$SCRAPES" --compressed)
echo "cgperf-exporter /metrics (Accept-Encoding: gzip): median $exz_ms ms, $exz_bytes bytes on the wire"

PGW=$(command -v prometheus-pushgateway || command -v pushgateway)
if [[ -z $PGW ]]; then
	echo "pushgateway reference: SKIPPED (prometheus-pushgateway missing; packaging/install-deps.sh installs it)"
	exit 0
fi
pport=$(free_port)
taskset -c $core_ex "$PGW" --web.listen-address="127.0.0.1:$pport" \
	--persistence.file="$TMP/pushgateway.state" --log.level=warn 2>"$TMP/pushgateway.log" &
PG=$!
bg_track $PG
purl=http://127.0.0.1:$pport
wait_http "$purl/-/ready" 20 "$TMP/pushgateway.log"
# The same families, HELP and TYPE lines included.
grep -E '^(# (HELP|TYPE) )?cgperf_cgroup_' "$TMP/metrics.txt" >"$TMP/push.txt"
t0=$(date +%s.%N)
st=$(curl -s -o "$TMP/presp" -w '%{http_code}' -X PUT --data-binary "@$TMP/push.txt" "$purl/metrics/job/bench")
t1=$(date +%s.%N)
[[ $st == 200 || $st == 202 ]] || fail "pushgateway refused the series: HTTP $st $(head -c 300 "$TMP/presp")"
curl -sf "$purl/metrics" >"$TMP/pgw.txt" || fail "no pushgateway /metrics"
pseries=$(grep -c '^cgperf_cgroup_' "$TMP/pgw.txt")
echo "pushgateway: PUT of $pseries series took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
c0=$(cpu_s $PG)
read -r pg_ms pg_bytes pg_bad < <(scrapes "$purl/metrics" "$SCRAPES")
c1=$(cpu_s $PG)
pg_cpu=$(awk -v a="$c0" -v b="$c1" -v n="$SCRAPES" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }')
echo "pushgateway /metrics: $pseries cgperf_cgroup_* series, $SCRAPES scrapes: median $pg_ms ms, $pg_bytes bytes, ~$pg_cpu ms CPU per scrape$( ((pg_bad)) && echo ", $pg_bad FAILED")"
awk -v a="$ex_ms" -v b="$pg_ms" 'BEGIN { if (a > 0) printf "ratio: pushgateway median / exporter median = %.2f (above 1: the exporter is faster)\n", b / a }'
exit 0
