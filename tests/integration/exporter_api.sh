#!/bin/bash
# cgperf-exporter's read side, fed by the real agent: cgperf-agent run pushes
# (to two exporters at once) while the chain workload burns CPU in a test
# cgroup and a process sits in a cgroup with an HTML-hostile name. Then:
#   - /api/v1/stacks folded holds chain_leaf under main;chain_a;...; its
#     total equals the stack samples the agent logged for its batches, and
#     cgperf_agent_stack_samples_total; container/pod/time filters select;
#   - svg passes xmllint and names the selection; pprof is gzip; an empty
#     selection is 404 (an SVG saying so for format=svg); bad parameters 400;
#   - format=json's total equals the folded total of the test cgroup; a
#     diff of the hostile cgroup against it sums each column to each
#     side's folded total, and its SVG passes xmllint;
#   - /metrics as OpenMetrics: its content type, `# EOF` last, counter
#     families named without _total; text format passes promtool;
#   - /api/v1/targets lists the agent and the cgroups; /index links to the
#     flame graphs and escapes the hostile name;
#   - exporter B (--retention 2s): raw stack rows deleted, counters on
#     /metrics unchanged, and the same after a restart;
#   - exporter C (--series-expiry 5s): the cgroup's series vanish from
#     /metrics and /api/v1/targets, and stay gone after a restart;
#   - a YAML config with a misspelt key fails with file:line:col and a
#     suggestion.
#   STORE=clickhouse runs it all on a ClickHouse server (retention there is
#   checked by its answers and its recorded cutoff, not by rows on disk).
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
source "$(dirname "$0")/../lib/exporter.sh"
W=$BUILD_DIR/workloads
for c in curl promtool xmllint python3 gzip; do
	command -v $c >/dev/null || fail "$c missing (packaging/install-deps.sh installs it)"
done
store_setup
cg_new api
evil=$'<b>"x\'&amp;'
mkdir "$cg/$evil" || fail "cannot create cgroup with a hostile name"
# Ports free now (a fixed scheme can fall on a port that another connection
# has taken: ephemeral ports start at 32768), three different ones.
pa=$(free_port) pb=$pa pc=$pa
while [[ $pb == "$pa" ]]; do pb=$(free_port); done
while [[ $pc == "$pa" || $pc == "$pb" ]]; do pc=$(free_port); done

start() { # NAME PORT ARGS...: start an exporter on data dir $TMP/NAME
	local n=$1 p=$2
	shift 2
	# shellcheck disable=SC2046 # store_args: one flag or value a line
	exp_start "$n" "$p" --log-level debug $(store_args "$n") "$@"
	eval "PID_$n=${EXP_PID[$n]}"
}
stop() { # NAME
	local v=PID_$1
	kill -TERM "${!v}"
	wait "${!v}" || fail "exporter $1 did not stop cleanly: $(tail "$TMP/$1.log")"
}
get() { # PORT PATH OUT [curl args]: print the HTTP status
	local p=$1 path=$2 out=$3
	shift 3
	curl -s -o "$out" -D "$out.h" -w '%{http_code}' "$@" "http://127.0.0.1:$p$path"
}
metric() { # PREFIX FILE: value of the first line starting with PREFIX
	awk -v p="$1" 'index($0, p) == 1 { print $NF; exit }' "$2"
}

start A $pa
start B $pb --retention 2s
start C $pc --series-expiry 5s

cat >"$TMP/agent.yaml" <<YAML
host: {name: "api-host", agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {frequency: 199, call_graph: fp}
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$pa/api/v1/push", "http://127.0.0.1:$pb/api/v1/push",
               "http://127.0.0.1:$pc/api/v1/push"]
  timeout: 5s
  spool: {dir: $TMP/spool}
log: {level: debug}
YAML
agent_run "$TMP/agent.log" --config "$TMP/agent.yaml" --duration 5
agent_started "$TMP/agent.log"
# Moved in once it runs chain-fp: the cgroup never holds its pid as a shell.
"$W/chain-fp" 3.2 &
wl=$!; bg_track $wl
for ((i = 0; i < $(scaled 10) * 100; i++)); do
	[[ $(cat /proc/$wl/comm 2>/dev/null) == chain-fp ]] && break
	sleep 0.01
done
[[ $(cat /proc/$wl/comm 2>/dev/null) == chain-fp ]] || fail "pid $wl is not chain-fp after $(scaled 10)s"
cg_enter "$cg" $wl
cg_spawn "$cg/$evil" "$W/spin" 0.5
ev=$SPAWNED
wait $wl $ev
wait $ag || fail "agent failed: $(tail "$TMP/agent.log")"
want=$(sed -n 's/.*msg="batch queued" seq=[0-9]* samples=\([0-9]*\).*/\1/p' "$TMP/agent.log" |
	awk '{ s += $1 } END { print s + 0 }')
((want >= 20)) || fail "the agent logged only $want stack samples: $(tail "$TMP/agent.log")"
grep -q 'push failed\|level=error' "$TMP/agent.log" && fail "pushes failed: $(grep 'push failed\|level=error' "$TMP/agent.log" | head)"

get $pc /metrics "$TMP/c1.prom" >/dev/null
grep -q "^cgperf_cgroup_cpu_seconds_total{host=\"api-host\",id=\"$rel\"" "$TMP/c1.prom" ||
	fail "C: no series right after the push: $(tail -3 "$TMP/C.log")"

# --- stacks, folded (the agent flushed every batch before it exited: wait
# until they are all served, then compare)
for ((i = 0; i < $(scaled 10) * 5; i++)); do
	st=$(get $pa "/api/v1/stacks?host=api-host" "$TMP/all.folded")
	got=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/all.folded")
	[[ $st == 200 ]] && ((got == want)) && break
	sleep 0.2
done
[[ $st == 200 ]] || fail "stacks: HTTP $st $(cat "$TMP/all.folded")"
grep -q 'text/plain; charset=utf-8' "$TMP/all.folded.h" || fail "folded content type: $(cat "$TMP/all.folded.h")"
info "folded total $got samples, the agent logged $want"
((got == want)) || fail "folded total $got != $want samples the agent pushed"
awk '!/^[^ ]+( [^ ]+)* [0-9]+$/ { bad = 1 } END { exit bad }' "$TMP/all.folded" ||
	fail "a folded line does not end in ' COUNT': $(head -3 "$TMP/all.folded")"
get $pa "/metrics" "$TMP/a.prom" >/dev/null
[[ $(metric 'cgperf_agent_stack_samples_total{host="api-host"' "$TMP/a.prom") == "$want" ]] ||
	fail "cgperf_agent_stack_samples_total is not $want: $(grep stack_samples "$TMP/a.prom")"
enc=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$rel")
# --- series: the steps of the test cgroup's CPU sum to its counter on
# /metrics (every push of the run is in the range; the counter began at 0)
for ev in cpu task-clock; do
	st=$(get $pa "/api/v1/series?host=api-host&cgroup=$enc&event=$ev&rate=0&from=-1h&step=1" "$TMP/series.json")
	[[ $st == 200 ]] || fail "series $ev: HTTP $st $(cat "$TMP/series.json")"
	m=cgperf_cgroup_cpu_seconds_total
	[[ $ev == task-clock ]] && m=cgperf_cgroup_perf_events_total
	python3 - "$TMP/series.json" "$TMP/a.prom" "$rel" "$ev" "$m" <<'PY' || fail "series of $ev disagree with /metrics"
import json, re, sys
path, prom, rel, ev, metric = sys.argv[1:6]
d = json.load(open(path))
assert d["status"] == "success" and d["data"]["resultType"] == "matrix", d
rs = [r for r in d["data"]["result"] if r["metric"].get("id") == rel]
assert len(rs) == 1, f"{len(rs)} series for {rel}: {d}"
assert rs[0]["metric"].get("event") == ev and rs[0]["metric"].get("host") == "api-host", rs[0]["metric"]
total = sum(float(v) for _, v in rs[0]["values"])
want = None
for line in open(prom):
    if line.startswith(metric + "{") and f'id="{rel}"' in line and \
            (metric != "cgperf_cgroup_perf_events_total" or f'event="{ev}"' in line):
        want = float(line.split()[-1])
print(f"# series {ev}: {len(rs[0]['values'])} steps sum to {total}, {metric} says {want}")
if want is None:
    sys.exit(f"no {metric} for {rel} on /metrics")
assert abs(total - want) <= 1e-6 * max(1.0, want), (total, want)
PY
done
for bad in "step=0" "step=abc" "top=0" "from=yesterday"; do
	st=$(get $pa "/api/v1/series?$bad" "$TMP/bad")
	[[ $st == 400 ]] || fail "series?$bad: HTTP $st, want 400"
done
st=$(get $pa "/api/v1/stacks?host=api-host&cgroup=$enc&event=cpu-clock" "$TMP/cg.folded")
[[ $st == 200 ]] || fail "stacks of $rel: HTTP $st $(cat "$TMP/cg.folded")"
leaf=$(awk '/;main;chain_a;chain_b;chain_c;chain_leaf/ { s += $NF } END { print s + 0 }' "$TMP/cg.folded")
tot=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/cg.folded")
info "test cgroup: $tot samples, $leaf through main;chain_a;chain_b;chain_c;chain_leaf"
((leaf * 2 > tot)) || fail "chain_leaf is not most of the cgroup's stacks: $(sort -k2 -n -r "$TMP/cg.folded" | head -5)"
grep -q 'chain_leaf' "$TMP/all.folded" || fail "no chain frames in the host's stacks"
now=$(date +%s)
st=$(get $pa "/api/v1/stacks?host=api-host&cgroup=$enc&from=$((now - 600))&to=now" "$TMP/t1")
[[ $st == 200 ]] && cmp -s "$TMP/t1" "$TMP/cg.folded" || fail "Unix-time selection differs: HTTP $st"
st=$(get $pa "/api/v1/stacks?host=api-host&cgroup=$enc&from=$(date -u -d @$((now - 600)) +%FT%TZ)" "$TMP/t2")
[[ $st == 200 ]] && cmp -s "$TMP/t2" "$TMP/cg.folded" || fail "RFC 3339 selection differs: HTTP $st"
st=$(get $pa "/api/v1/stacks?host=api-host&from=-10m&to=-5m" "$TMP/t3")
[[ $st == 404 ]] || fail "a window before the run: HTTP $st, want 404"
st=$(get $pa "/api/v1/stacks?host=no-such-host" "$TMP/t4")
[[ $st == 404 ]] && grep -q 'no samples' "$TMP/t4" || fail "unknown host: HTTP $st $(cat "$TMP/t4")"
st=$(get $pa "/api/v1/stacks?container=0123456789ab" "$TMP/t5")
[[ $st == 404 ]] || fail "unknown container: HTTP $st"
for bad in "from=yesterday" "to=2024-13-45T00:00:00Z" "format=png" "from=-1h&to=-2h" \
	"host=$(head -c 5000 /dev/zero | tr '\0' x)"; do
	st=$(get $pa "/api/v1/stacks?$bad" "$TMP/bad")
	[[ $st == 400 ]] || fail "stacks?${bad:0:40}: HTTP $st, want 400"
	info "stacks?${bad:0:30}: 400 $(cat "$TMP/bad")"
done

# --- svg and pprof
st=$(get $pa "/api/v1/stacks?host=api-host&cgroup=$enc&format=svg" "$TMP/cg.svg")
[[ $st == 200 ]] || fail "svg: HTTP $st"
grep -qi 'content-type: image/svg+xml' "$TMP/cg.svg.h" || fail "svg content type"
xmllint --noout "$TMP/cg.svg" || fail "svg is not well-formed XML"
grep -q 'chain_leaf' "$TMP/cg.svg" && grep -q 'host=api-host' "$TMP/cg.svg" ||
	fail "svg lacks chain_leaf or its title"
st=$(get $pa "/api/v1/stacks?host=no-such-host&format=svg" "$TMP/empty.svg")
[[ $st == 404 ]] && xmllint --noout "$TMP/empty.svg" && grep -q 'no samples' "$TMP/empty.svg" ||
	fail "empty svg: HTTP $st"
st=$(get $pa "/api/v1/stacks?host=api-host&format=pprof" "$TMP/p.pb.gz")
[[ $st == 200 ]] || fail "pprof: HTTP $st"
grep -qi 'content-disposition: attachment' "$TMP/p.pb.gz.h" || fail "pprof: no Content-Disposition"
gzip -t "$TMP/p.pb.gz" && (($(gzip -dc "$TMP/p.pb.gz" | wc -c) > 100)) || fail "pprof is not a gzip'd profile"

# --- explorer APIs: stacks as JSON, and a diff of the hostile cgroup (base)
# against the test cgroup (target): each column sums to its side's folded total
enc_evil=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$rel/$evil")
st=$(get $pa "/api/v1/stacks?host=api-host&cgroup=$enc&format=json" "$TMP/cg.json" --compressed)
[[ $st == 200 ]] || fail "stacks json: HTTP $st $(cat "$TMP/cg.json")"
get $pa "/api/v1/stacks?host=api-host&cgroup=$enc" "$TMP/cg.all.folded" >/dev/null
get $pa "/api/v1/stacks?host=api-host&cgroup=$enc_evil" "$TMP/evil.folded" >/dev/null
st=$(get $pa "/api/v1/diff?host=api-host&cgroup=$enc&base_cgroup=$enc_evil" "$TMP/diff.folded")
[[ $st == 200 ]] || fail "diff: HTTP $st $(cat "$TMP/diff.folded")"
st=$(get $pa "/api/v1/diff?host=api-host&cgroup=$enc&base_cgroup=$enc_evil&format=svg" "$TMP/diff.svg")
[[ $st == 200 ]] && xmllint --noout "$TMP/diff.svg" || fail "diff svg: HTTP $st or not well-formed"
python3 - "$TMP/cg.json" "$TMP/cg.all.folded" "$TMP/evil.folded" "$TMP/diff.folded" <<'PY' ||
import json, sys
j, cg, evil, diff = sys.argv[1:5]
total = lambda f: sum(int(l.rsplit(" ", 1)[1]) for l in open(f) if l.rstrip().rsplit(" ", 1)[-1].isdigit())
d = json.load(open(j))
rows = sum(r[0] for r in d["stacks"])
assert d["totals"]["samples"] == rows == total(cg), (d["totals"], rows, total(cg))
assert len(d["kinds"]) == len(d["names"]) and "chain_leaf" in d["names"], d["names"][:20]
base = target = 0
for l in open(diff):
    _, b, t = l.rsplit(" ", 2)
    base += int(b); target += int(t)
assert (base, target) == (total(evil), total(cg)), ((base, target), (total(evil), total(cg)))
print(f"# json total {rows}; diff columns {base} (base) {target} (target)")
PY
	fail "stacks json or diff disagree with the folded totals"

# --- /metrics, OpenMetrics and text
st=$(get $pa /metrics "$TMP/a.om" -H 'Accept: application/openmetrics-text; version=1.0.0')
[[ $st == 200 ]] || fail "openmetrics: HTTP $st"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0; charset=utf-8' "$TMP/a.om.h" ||
	fail "openmetrics content type: $(cat "$TMP/a.om.h")"
[[ $(tail -n1 "$TMP/a.om") == "# EOF" ]] || fail "openmetrics does not end with # EOF"
grep -q '^# TYPE [a-z_]*_total counter' "$TMP/a.om" && fail "an OpenMetrics counter family named with _total"
grep -q '^# TYPE cgperf_cgroup_cpu_seconds counter' "$TMP/a.om" || fail "no cpu_seconds family in OpenMetrics"
python3 - "$TMP/a.om" <<'EOF' || fail "OpenMetrics families interleaved or repeated"
import re, sys
seen, cur = set(), None
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("# TYPE "):
        name = line.split()[2]
        assert name not in seen, name
        seen.add(name); cur = name
    elif line[0] != "#":
        m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        assert cur and m.startswith(cur), (m, cur)
EOF
promtool check metrics <"$TMP/a.prom" || fail "promtool rejects /metrics"
for m in process_cpu_seconds_total process_resident_memory_bytes process_open_fds process_max_fds \
	process_start_time_seconds cgperf_exporter_store_size_bytes cgperf_exporter_stack_rows_total; do
	grep -q "^$m " "$TMP/a.prom" || fail "no $m on /metrics"
done
grep -q "^cgperf_cgroup_cpu_seconds_total{host=\"api-host\",id=\"$rel/<b>\\\\\"x'&amp;\"" "$TMP/a.prom" ||
	fail "hostile cgroup not on /metrics, escaped: $(grep api-host "$TMP/a.prom" | head -3)"
grep -q '^cgperf_agent_last_push_timestamp_seconds{host="api-host"' "$TMP/a.prom" ||
	fail "no agent self figures"

# --- targets and the index page
st=$(get $pa /api/v1/targets "$TMP/targets.json")
[[ $st == 200 ]] || fail "targets: HTTP $st"
python3 - "$TMP/targets.json" "$(cat "$TMP/agent-id")" "$rel" "$evil" <<'EOF' || fail "targets: $(cat "$TMP/targets.json")"
import json, sys
t = json.load(open(sys.argv[1]))
a = [x for x in t["agents"] if x["agent_id"] == sys.argv[2]]
assert a and a[0]["host"] == "api-host" and a[0]["batches"] >= 3, t["agents"]
paths = {c["path"] for c in t["cgroups"] if c["host"] == "api-host"}
assert sys.argv[3] in paths and sys.argv[3] + "/" + sys.argv[4] in paths, paths
EOF
st=$(get $pa /index "$TMP/index.html")
[[ $st == 200 ]] || fail "index: HTTP $st"
grep -q 'href="/api/v1/stacks?host=api-host&amp;format=svg"' "$TMP/index.html" ||
	fail "index lacks the host's flame graph link"
grep -q "href=\"/api/v1/stacks?host=api-host&amp;cgroup=${enc//%/%}&amp;format=svg\"" "$TMP/index.html" ||
	fail "index lacks the cgroup's flame graph link"
grep -q '&lt;b&gt;&quot;x&#39;&amp;amp;' "$TMP/index.html" || fail "hostile name not escaped in the index"
grep -q '<b>"x' "$TMP/index.html" && fail "hostile name unescaped in the index"
xmllint --html --noout "$TMP/index.html" 2>"$TMP/xl" ; ! grep -qi 'error' "$TMP/xl" ||
	fail "index is not clean HTML: $(head "$TMP/xl")"

# --- retention on B: raw stack rows go (ClickHouse: the recorded cutoff
# hides them at once, whole days are dropped later), totals stay, also
# after a restart
# Stacks cut short, as an agent counts them: 2 profiles x (4, 8, 12).
"$BUILD_DIR/tools/gen_batch" --cgroups 2 --stacks 1 --depth 3 --counters 1 --host trunc-host \
	--agent trunc-agent --truncated 4 --batches 1 --threads 1 push "http://127.0.0.1:$pb/api/v1/push" >"$TMP/gen.out" 2>&1 ||
	fail "gen_batch push to B failed: $(cat "$TMP/gen.out")"
get $pb /metrics "$TMP/b1.prom" >/dev/null
grep '^cgperf_cgroup' "$TMP/b1.prom" | grep -q api-host || fail "B has no cgroup series"
[[ $(grep -c '^cgperf_cgroup_stacks_truncated_total{host="trunc-host".*reason="max_stack"} 8$' "$TMP/b1.prom") == 2 ]] ||
	fail "B lacks the truncation counts: $(grep truncated_total "$TMP/b1.prom" | head -4)"
rows() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from stack_samples").fetchone()[0])' "$TMP/B/cgperf.db"; }
for ((i = 0; i < $(scaled 80) * 5; i++)); do
	st=$(get $pb "/api/v1/stacks?host=api-host" "$TMP/b.folded")
	# (SQLite: the trunc-host rows, pushed later, go too)
	[[ $st == 404 ]] && { on_clickhouse || [[ $(rows) == 0 ]]; } && break
	sleep 0.2
done
[[ $st == 404 ]] || fail "B still serves stacks after retention: HTTP $st"
if on_clickhouse; then
	[[ $(ch_query store "SELECT count() > 0 FROM $(ch_db B).expiry WHERE kind = 3") == 1 ]] ||
		fail "no retention cutoff recorded"
else
	[[ $(rows) == 0 ]] || fail "retention left $(rows) stack rows: $(tail "$TMP/B.log")"
fi
get $pb /metrics "$TMP/b2.prom" >/dev/null
diff <(grep '^cgperf_cgroup\|^cgperf_agent' "$TMP/b1.prom") <(grep '^cgperf_cgroup\|^cgperf_agent' "$TMP/b2.prom") ||
	fail "retention changed the counters"
on_clickhouse || (($(metric cgperf_exporter_retention_deleted_rows_total "$TMP/b2.prom") > 0)) ||
	fail "no deleted rows counted"
stop B
start B $pb --retention 2s
get $pb /metrics "$TMP/b3.prom" >/dev/null
# every series is kept, the truncation counts too (in the order the store
# gives them back: sorted)
persisted() { grep '^cgperf_cgroup\|^cgperf_agent' "$1" | sort; }
diff <(persisted "$TMP/b1.prom") <(persisted "$TMP/b3.prom") ||
	fail "counters changed across retention and a restart"
st=$(get $pb "/api/v1/stacks?host=api-host" "$TMP/b.folded")
[[ $st == 404 ]] || fail "B serves stacks again after a restart: HTTP $st"
info "B: stack rows deleted, $(grep -c '^cgperf_cgroup' "$TMP/b3.prom") cgroup series unchanged after restart"

# --- expiry on C (its first scrape was taken right after the agent stopped)
for ((i = 0; i < $(scaled 20) * 5; i++)); do
	get $pc /metrics "$TMP/c2.prom" >/dev/null
	grep -q 'host="api-host"' "$TMP/c2.prom" || break
	sleep 0.2
done
grep -q 'host="api-host"' "$TMP/c2.prom" && fail "series did not expire: $(grep api-host "$TMP/c2.prom" | head -3)"
get $pc /api/v1/targets "$TMP/c.json" >/dev/null
grep -q 'api-host' "$TMP/c.json" && fail "expired agent still in targets: $(cat "$TMP/c.json")"
swept() { # the store forgot the series too (a sweep every 2 s: 5s / 3 on 1 s ticks)
	if on_clickhouse; then
		# every series counted has its expiry (more may be marked: a
		# series of an event the host could not count, say)
		ch_query store "SELECT (SELECT count() FROM (SELECT DISTINCT host, path, event FROM $(ch_db C).counters
		 WHERE host = 'api-host' AND supported = 1) WHERE (host, path, event) NOT IN
		 (SELECT host, path, name FROM $(ch_db C).expiry WHERE kind = 0 AND host = 'api-host')) = 0
		 AND (SELECT count() FROM $(ch_db C).counters WHERE host = 'api-host') > 0
		 AND (SELECT count() FROM $(ch_db C).expiry WHERE kind = 2) > 0"
	else
		python3 -c 'import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); print(int(d.execute("select count(*) from cgroup_totals where host = ?", ("api-host",)).fetchone()[0] + d.execute("select count(*) from agents where host = ?", ("api-host",)).fetchone()[0] == 0))' "$TMP/C/cgperf.db"
	fi
}
# (a sweep's inserts wait for ClickHouse, slower on a loaded machine)
for ((i = 0; i < $(scaled 60) * 5; i++)); do
	[[ $(swept) == 1 ]] && break
	sleep 0.2
done
if [[ $(swept) != 1 ]]; then
	on_clickhouse && info "counted: $(ch_query store "SELECT DISTINCT path, event, supported FROM $(ch_db C).counters
		WHERE host = 'api-host'" | tr '\n\t' '; '), expired: $(ch_query store "SELECT kind, path, name
		FROM $(ch_db C).expiry ORDER BY kind" | tr '\n\t' '; ')"
	fail "the store kept the expired series"
fi
stop C
start C $pc --series-expiry 1h
get $pc /metrics "$TMP/c3.prom" >/dev/null
grep -q 'host="api-host"' "$TMP/c3.prom" && fail "expired series came back after a restart"
get $pc /api/v1/targets "$TMP/c3.json" >/dev/null
python3 -c 'import json, sys; sys.exit(any(a["host"] == "api-host" for a in json.load(open(sys.argv[1]))["agents"]))' "$TMP/c3.json" ||
	fail "expired agent came back after a restart: $(cat "$TMP/c3.json")"
info "C: series expired and stayed gone after a restart"

# --- configuration file
printf 'listen: "127.0.0.1:1"\ndata_dir: %s\nretension: 2d\n' "$TMP/X" >"$TMP/bad.yaml"
"$EXPORTER" --config "$TMP/bad.yaml" 2>"$TMP/cfg.err" && fail "a misspelt key was accepted"
grep -q "bad.yaml:3:1: unknown key 'retension' (did you mean 'retention'?)" "$TMP/cfg.err" ||
	fail "config error: $(cat "$TMP/cfg.err")"
printf 'listen: "127.0.0.1:%s"\ndata_dir: %s\nseries_expiry: 5m\n' $pc "$TMP/C" >"$TMP/good.yaml"
stop C
"$EXPORTER" --config "$TMP/good.yaml" --retention 3d 2>"$TMP/C2.log" &
c2=$!; bg_track $c2
wait_http "http://127.0.0.1:$pc/healthz" "$(scaled 10)" "$TMP/C2.log"
grep -q 'retention=259200s series_expiry=300s' "$TMP/C2.log" || fail "file and flags not combined: $(cat "$TMP/C2.log")"
kill -TERM $c2; wait $c2 || fail "C did not stop cleanly"
stop A
grep -h 'level=error' "$TMP"/A.log "$TMP"/B.log "$TMP"/C.log && fail "errors logged"
grep -l 'Sanitizer\|runtime error' "$TMP"/*.log && fail "sanitizer reports"
exit 0
