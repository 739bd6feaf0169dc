#!/bin/bash
# A real Prometheus (Debian's) scrapes cgperf-exporter while cgperf-agent run
# pushes the counters of a PostgreSQL cluster under pgbench, in its own
# cgroup, every second. Then, through Prometheus's query API:
#   - up{job="cgperf"} is 1 (every scrape parsed);
#   - the PostgreSQL cgroup has a cgperf_cgroup_cpu_seconds_total series,
#     positive, whose increase over a window lies within what the cgroup's
#     own cpu.stat says over that window give or take the lag of the push
#     and the scrape, and whose rate() matches cpu.stat's (loose);
#   - cgroups named with quotes, backslashes and UTF-8 (real ones, with
#     processes), and with a newline (no cgroup can have one, so a pushed
#     batch carries it) come back with exactly those label values;
# and `promtool check metrics` is clean on the page, hostile names included.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
source "$ROOT/tests/lib/pg.sh"
W=$BUILD_DIR/workloads
GEN=$BUILD_DIR/tools/gen_batch
[[ -x $GEN ]] || fail "$GEN not built (make O=${BUILD:-build} build-tests)"
for c in prometheus promtool curl python3; do
	command -v $c >/dev/null || fail "$c missing (packaging/install-deps.sh installs it)"
done

# --- the cgroups: PostgreSQL's, and hostile names with a process each
pgcg=$(cg_make pgcg)
pgrel=${pgcg#"$(cg2_mount)"}
names=$(cg_make names)
nrel=${names#"$(cg2_mount)"}
hostile=($'q"uote' $'back\\slash' $'ünï-✓ cøde' $'{brace}=x,y "both\\"')
for h in "${hostile[@]}"; do
	mkdir "$names/$h" || fail "cannot create cgroup '$h'"
	# a little CPU, then asleep: the cgroup stays populated for the test
	sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; "$2" 0.3 >/dev/null; exec sleep 300' \
		sh "$names/$h" "$W/spin" &
	bg_track $!
done

pg_start "$pgcg" 2

# --- exporter, agent, Prometheus
exporter_up

cat >"$TMP/agent.yaml" <<YAML
host: {name: "prom-host", agent_id_file: $TMP/agent-id}
cgroups: {include: ["$pgrel", "$pgrel/**", "$nrel", "$nrel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {enabled: false}
push: {interval: 1s, collectors: ["$ex/api/v1/push"], timeout: 2s, spool: {dir: $TMP/spool}}
YAML
"$AGENT" run --config "$TMP/agent.yaml" 2>"$TMP/agent.log" &
AG=$!
bg_track $AG

prom_port=$(free_port)
prom=http://127.0.0.1:$prom_port
cat >"$TMP/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cgperf
    static_configs:
      - targets: ["127.0.0.1:$ex_port"]
YAML
promtool check config "$TMP/prometheus.yml" >"$TMP/promtool-config.log" 2>&1 ||
	fail "promtool rejects the test's own config: $(cat "$TMP/promtool-config.log")"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom" \
	--web.listen-address="127.0.0.1:$prom_port" --log.level=warn 2>"$TMP/prometheus.log" &
bg_track $!
wait_http "$prom/-/ready" "$(scaled 30)" "$TMP/prometheus.log"

# query EXPR [TIME]: the result vector of an instant query, one line per
# series: the labels as JSON (keys sorted), a tab, the value.
query() {
	local args=(--data-urlencode "query=$1")
	[[ -n ${2:-} ]] && args+=(--data-urlencode "time=$2")
	curl -sf -G "${args[@]}" "$prom/api/v1/query" >"$TMP/q.json" ||
		fail "query '$1' failed: $(cat "$TMP/q.json" 2>/dev/null)"
	python3 - "$TMP/q.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "success", d
for r in d["data"]["result"]:
    print(json.dumps(r["metric"], sort_keys=True, ensure_ascii=False) + "\t" + r["value"][1])
PY
}
# usage_at T: the PostgreSQL cgroup's usage_usec at time T, interpolated
# from the sampler's log.
usage_at() {
	awk -v t="$1" 'NR > 1 && $1 >= t { printf "%.0f", pu + ($2 - pu) * (t - pt) / ($1 - pt); done = 1; exit }
		{ pt = $1; pu = $2 } END { if (!done) exit 1 }' "$TMP/usage.log"
}

# --- load: pgbench against the cluster; its backends burn CPU in pgcg
(while :; do
	echo "$(date +%s.%N) $(awk '/^usage_usec/ { print $2 }' "$pgcg/cpu.stat")"
	sleep 0.25
done) >"$TMP/usage.log" &
bg_track $!
# (long enough for a slow start; killed at exit)
# Rate-limited (about a third of a CPU here): the cgroup has CPU to count
# without pgbench taking the machine from the tests running beside.
pg_bench_start "$TMP/pgbench.log" -c 2 -j 1 -T "$(scaled 180)" -n -R 300
info "pgbench running; agent pid $AG, exporter $ex, prometheus $prom"

# The series must exist and be positive once the load is on.
for ((i = 0; i < $(scaled 30) * 2; i++)); do
	v=$(query "cgperf_cgroup_cpu_seconds_total{id=~\".*-pgcg\"}" | awk -F'\t' '{ print $2; exit }')
	[[ -n $v ]] && awk -v v="$v" 'BEGIN { exit !(v > 0) }' && break
	sleep 0.5
done
[[ -n $v ]] || fail "no cgperf_cgroup_cpu_seconds_total series for $pgrel in Prometheus: $(
	curl -s "$ex/metrics" | grep cpu_seconds | head; tail -5 "$TMP/agent.log")"
awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "PostgreSQL cgroup's CPU seconds not positive: $v"
info "cgperf_cgroup_cpu_seconds_total{id=\"$pgrel\"} = $v"

sleep 3
t0=$(date +%s.%N)
sleep 15
t1=$(date +%s.%N)
kill -0 "$PG_BENCH_PID" 2>/dev/null || fail "pgbench ended early: $(tail -5 "$TMP/pgbench.log")"
sel="cgperf_cgroup_cpu_seconds_total{id=\"$pgrel\",host=\"prom-host\"}"
# every scrape up to t1 is in once one taken after t1 is (a target's scrapes
# go in order), and cpu.stat has been sampled past t1
for ((i = 0; i < $(scaled 10) * 5; i++)); do
	ts=$(query "timestamp($sel)" | awk -F'\t' '{ print $2; exit }')
	[[ -n $ts ]] && awk -v a="$ts" -v b="$t1" 'BEGIN { exit !(a > b) }' && usage_at "$t1" >/dev/null && break
	sleep 0.2
done
[[ -n $ts ]] && awk -v a="$ts" -v b="$t1" 'BEGIN { exit !(a > b) }' ||
	fail "no scrape after t1 $t1 in $(scaled 10)s: the last is at '$ts'"
v0=$(query "$sel" "$t0" | awk -F'\t' '{ print $2; exit }')
v1=$(query "$sel" "$t1" | awk -F'\t' '{ print $2; exit }')
[[ -n $v0 && -n $v1 ]] || fail "no value at t0 or t1 for $sel: '$v0' '$v1'"
at() { awk -v t="$1" -v d="$2" 'BEGIN { printf "%.3f", t - d }'; } # T D: T - D
# What Prometheus holds at T was pushed about a second before T...
u0=$(usage_at "$(at "$t0" 1)") || fail "no cpu.stat sample at t0"
u1=$(usage_at "$(at "$t1" 1)") || fail "no cpu.stat sample at t1"
got=$(awk -v a="$v0" -v b="$v1" 'BEGIN { printf "%.4f", b - a }')
want=$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.4f", (b - a) / 1e6 }')
info "over $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s: Prometheus says +$got CPU s, cpu.stat +$want ($(pct_diff "$got" "$want")%)"
awk -v w="$want" 'BEGIN { exit !(w > 1) }' || fail "pgbench put too little CPU in the cgroup: $want s"
# ...but at most L s (a push and a scrape interval, and their delays on a
# busy machine, where they vary): not the usage at an assumed lag but the
# bracket any lag within L allows, from cpu.stat over [t0, t1 - L] to over
# [t0 - L, t1], 5% either side (perf counters against cpu.stat). This
# follows the load as it comes and goes, which a bound around one lag
# cannot do.
L=$(scaled 3)
lo=$(awk -v a="$(usage_at "$t0")" -v b="$(usage_at "$(at "$t1" "$L")")" 'BEGIN { printf "%.4f", (b - a) / 1e6 * 0.95 }')
hi=$(awk -v a="$(usage_at "$(at "$t0" "$L")")" -v b="$(usage_at "$t1")" 'BEGIN { printf "%.4f", (b - a) / 1e6 * 1.05 }')
info "a lag up to $L s allows +$lo to +$hi CPU s"
awk -v g="$got" -v l="$lo" -v h="$hi" 'BEGIN { exit !(g >= l && g <= h) }' ||
	fail "increase $got s outside $lo..$hi s, cpu.stat's over the window with up to $L s of lag"

rate=$(query "rate(${sel}[15s])" "$t1" | awk -F'\t' '{ print $2; exit }')
ur=$(usage_at "$(awk -v t="$t1" 'BEGIN { printf "%.3f", t - 16 }')") || fail "no cpu.stat sample at t1-16"
want_rate=$(awk -v a="$ur" -v b="$u1" 'BEGIN { printf "%.4f", (b - a) / 15e6 }')
info "rate(...[15s]) at t1: $rate CPUs; cpu.stat: $want_rate CPUs ($(pct_diff "$rate" "$want_rate")%)"
[[ -n $rate ]] || fail "rate() returned nothing"
# loose: 35%, or a tenth of a CPU when the load is light
near "$rate" "$want_rate" 35 || awk -v a="$rate" -v b="$want_rate" 'BEGIN { d = a - b; exit !(d < 0.1 && d > -0.1) }' ||
	fail "rate() $rate not within 35% of cpu.stat's $want_rate"

# --- hostile names: a batch with a newline (and more) in its labels
"$GEN" hostile "$TMP/hostile.pb" || fail "gen_batch hostile failed"
st=$(curl -s -o "$TMP/resp" -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
	--data-binary "@$TMP/hostile.pb" "$ex/api/v1/push")
[[ $st == 200 ]] || fail "hostile batch: HTTP $st $(cat "$TMP/resp")"

# hostile_intact: every hostile label value is in Prometheus (real cgroups
# pushed by the agent, and the batch's), with positive values
hostile_intact() {
	query 'cgperf_cgroup_cpu_seconds_total' >"$TMP/all.tsv"
	python3 - "$TMP/all.tsv" "$nrel" "${hostile[@]}" <<'PY'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
series = [(json.loads(m), float(v)) for m, v in rows]
want = [("prom-host", sys.argv[2] + "/" + h) for h in sys.argv[3:]]
want += [('h"o\\st', p) for p in ['/q"uote', '/back\\slash', '/new\nline',
                                   '/utf8-\u00e9t\u00e9-\u2713', '/sp ace/{brace}=x,y']]
missing = [w for w in want if not any(m.get("host") == w[0] and m.get("id") == w[1] for m, _ in series)]
for m, v in series:
    if m.get("host") == 'h"o\\st':
        assert v > 0, (m, v)
print(f"# {len(want)} hostile label values intact, among {len(series)} series")
if missing:
    print("missing:", missing, file=sys.stderr)
    print("have:", sorted((m.get("host"), m.get("id")) for m, _ in series), file=sys.stderr)
    sys.exit(1)
PY
}
# the hostile cgroups' first pushes and a scrape
for ((i = 0; i < $(scaled 10) * 2; i++)); do
	hostile_intact >/dev/null 2>&1 && break
	sleep 0.5
done

curl -sf "$ex/metrics" >"$TMP/metrics.txt" || fail "no /metrics"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.log" 2>&1 ||
	fail "promtool check metrics: $(cat "$TMP/promtool.log")"
info "promtool check metrics: clean ($(grep -vc '^#' "$TMP/metrics.txt") samples)"
# OpenMetrics, once the exporter offers it (Prometheus asks for it first).
curl -sf -D "$TMP/om.hdr" -H 'Accept: application/openmetrics-text; version=1.0.0' "$ex/metrics" \
	>"$TMP/om.txt" || fail "no /metrics with an OpenMetrics Accept header"
if grep -qi '^content-type: application/openmetrics-text' "$TMP/om.hdr"; then
	[[ $(tail -n1 "$TMP/om.txt") == "# EOF" ]] || fail "OpenMetrics page does not end in # EOF"
	info "OpenMetrics page served, ends in # EOF"
else
	info "OpenMetrics not served yet: text format 0.0.4 for every Accept header"
fi

hostile_intact || fail "hostile label values not intact in Prometheus"
up=$(query 'up{job="cgperf"}' | awk -F'\t' '{ print $2; exit }')
[[ $up == 1 ]] || fail "up{job=\"cgperf\"} is '$up': $(curl -s "$prom/api/v1/targets" | head -c 600)"
# Every scrape since the start parsed: no sample of up was 0.
down=$(query 'min_over_time(up{job="cgperf"}[5m])' | awk -F'\t' '{ print $2; exit }')
[[ $down == 1 ]] || fail "some scrape failed: min_over_time(up[5m]) = $down"
info "up == 1, and on every scrape"

kill -0 $AG 2>/dev/null || fail "the agent died: $(tail -5 "$TMP/agent.log")"
grep -q 'level=error' "$TMP/exporter.log" && fail "exporter logged errors: $(grep level=error "$TMP/exporter.log")"
exit 0
