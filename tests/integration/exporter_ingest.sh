#!/bin/bash
# cgperf-exporter: cgperf-agent run pushes to it and /metrics shows the test
# cgroup's CPU seconds as its cpu.stat does; promtool accepts the page; bad
# requests (no or wrong token, random bytes, truncated gzip, oversized) get
# their status codes and leave it serving; a resent batch is answered 200
# and not counted twice; kill -9 right after an acknowledged batch, then a
# restart on the same data directory, keeps every total. Read routes answer
# gzip'd when Accept-Encoding allows it, with the same text inflated.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
W=$BUILD_DIR/workloads
command -v promtool >/dev/null || fail "promtool missing (packaging/install-deps.sh installs prometheus)"
command -v curl >/dev/null || fail "curl missing"
cg_new exporter
echo s3cret >"$TMP/token"
port=$(free_port) ref_port=$port
while [[ $ref_port == "$port" ]]; do ref_port=$(free_port); done
url=http://127.0.0.1:$port

exporter() { # start the exporter on the main data dir ($TMP/exporter)
	exp_start exporter "$port" --token-file "$TMP/token" --max-body 1048576 --log-level debug
	EX=${EXP_PID[exporter]}
}
agent_config() { # HOSTNAME ID_FILE COLLECTOR_URL
	cat <<YAML
host: {name: "$1", agent_id_file: $2}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {frequency: 99, call_graph: fp}
push:
  interval: 1s
  collectors: ["$3"]
  token_file: $TMP/token
  timeout: 2s
  spool: {dir: $TMP/spool-$1}
YAML
}
post() { # FILE [curl args...]: print the HTTP status of a push of FILE
	local f=$1
	shift
	curl -s -o "$TMP/resp" -w '%{http_code}' -X POST -H 'Content-Type: application/x-protobuf' \
		--data-binary "@$f" "$@" "$url/api/v1/push"
}
auth=(-H "Authorization: Bearer s3cret")
started() { # LOG: wait until the agent ($ag) has its counters open
	local i
	for ((i = 0; i < $(scaled 10) * 10; i++)); do
		grep -q 'msg=started' "$1" && return 0
		kill -0 $ag 2>/dev/null || fail "agent exited: $(cat "$1")"
		sleep 0.1
	done
	fail "agent not started after $(scaled 10)s: $(tail -5 "$1")"
}
metric() { # NAME-AND-LABELS-PREFIX FILE: the value of the first matching line
	awk -v p="$1" 'index($0, p) == 1 { print $NF; exit }' "$2"
}

# 1. Real batches to keep: the agent against the test collector.
mkdir -p "$TMP/fc"
python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc" --port 0 --port-file "$TMP/fc.port" \
	--token s3cret >>"$TMP/fc.log" 2>&1 &
FC=$!; bg_track $FC
for ((i = 0; i < $(scaled 10) * 10; i++)); do [[ -s $TMP/fc.port ]] && break; sleep 0.1; done
[[ -s $TMP/fc.port ]] || fail "test collector did not start in $(scaled 10)s: $(cat "$TMP/fc.log")"
agent_config capture-host "$TMP/agent-id-capture" "http://127.0.0.1:$(cat "$TMP/fc.port")/api/v1/push" \
	>"$TMP/capture.yaml"
agent_run "$TMP/capture.log" --config "$TMP/capture.yaml" --duration 3.2
started "$TMP/capture.log" # then some load, so the captured batches carry non-zero counts
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec '$W/spin' 1.5" &
sp=$!; bg_track $sp
wait $sp
wait $ag || fail "capture run failed: $(cat "$TMP/capture.log")"
kill $FC; wait $FC 2>/dev/null
mapfile -t bodies < <(ls "$TMP"/fc/body-* | sort -t- -k2 -n)
((${#bodies[@]} >= 3)) || fail "want 3 captured batches, got ${#bodies[@]}: $(cat "$TMP/fc.log")"

# 2. The agent pushes to the exporter while spin burns CPU in the cgroup.
exporter
u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
agent_config test-host "$TMP/agent-id" "$url/api/v1/push" >"$TMP/agent.yaml"
# No --duration: the agent runs (counters open on the cgroup before the
# load starts) until spin is done, however slowly that starts; SIGTERM
# makes its last batch and sends it.
agent_run "$TMP/run.log" --config "$TMP/agent.yaml"
started "$TMP/run.log"
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec '$W/spin' 2.5" &
sp=$!; bg_track $sp
wait $sp
u=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
kill -TERM $ag
wait $ag || fail "agent run failed: $(cat "$TMP/run.log")"
want=$(awk -v u="$u" -v u0="$u0" 'BEGIN { printf "%.6f", (u - u0) / 1e6 }')
# A 200 means stored and the agent sent every batch before it exited; the
# total is polled all the same (bounded) before it is checked.
for ((i = 0; i < $(scaled 10) * 5; i++)); do
	curl -sf "$url/metrics" >"$TMP/m1.txt" || fail "no /metrics: $(cat "$TMP/exporter.log")"
	got=$(metric "cgperf_cgroup_cpu_seconds_total{host=\"test-host\",id=\"$rel\"" "$TMP/m1.txt")
	[[ -n $got ]] && near "$got" "$want" 10 && break
	sleep 0.2
done
promtool check metrics <"$TMP/m1.txt" || fail "promtool rejects /metrics: $(head -30 "$TMP/m1.txt")"
[[ -n $got ]] || fail "no cpu seconds for $rel: $(cat "$TMP/m1.txt")"
info "test cgroup: $got s on the exporter's /metrics, cpu.stat $want s"
near "$got" "$want" 10 || fail "cpu seconds $got not within 10% of $want"
grep -q "cgperf_cgroup_perf_events_total{host=\"test-host\",id=\"$rel\".*event=\"context-switches\"}" \
	"$TMP/m1.txt" || fail "no context-switches series"
received=$(metric cgperf_exporter_batches_received_total "$TMP/m1.txt")
((received >= 3)) || fail "only $received batches received: $(cat "$TMP/exporter.log")"

# 2b. gzip'd answers: the same text as the plain ones once inflated; only
# when Accept-Encoding allows gzip; never for /healthz or pprof (already gzip).
hget() { # NAME PATH [curl args...]: body to $TMP/NAME, headers to $TMP/NAME.h, status printed
	local n=$1 p=$2
	shift 2
	curl -s -o "$TMP/$n" -D "$TMP/$n.h" -w '%{http_code}' "$@" "$url$p"
}
has_header() { grep -qi "^$2:[[:space:]]*$3"$'\r'"\?\$" "$TMP/$1.h"; }
t_to=$(($(date +%s) + 60)) # a fixed range: the SVG names it
stacks_q="/api/v1/stacks?host=test-host&from=$((t_to - 3600))&to=$t_to"
for r in "metrics:/metrics" "folded:$stacks_q" "svg:$stacks_q&format=svg" "targets:/api/v1/targets" \
	"index:/index"; do
	n=${r%%:*} p=${r#*:}
	[[ $(hget "$n.plain" "$p") == 200 ]] || fail "$p: HTTP $(head -1 "$TMP/$n.plain.h")"
	[[ $(hget "$n.gz" "$p" -H 'Accept-Encoding: gzip') == 200 ]] || fail "$p gzip'd: not 200"
	[[ $(hget "$n.auto" "$p" --compressed) == 200 ]] || fail "$p --compressed: not 200"
	has_header "$n.gz" Content-Encoding gzip || fail "$p: no Content-Encoding: gzip: $(cat "$TMP/$n.gz.h")"
	has_header "$n.auto" Content-Encoding gzip || fail "$p: curl --compressed got it plain"
	! grep -qi '^content-encoding' "$TMP/$n.plain.h" || fail "$p: gzip'd without Accept-Encoding"
	for v in plain gz; do
		has_header "$n.$v" Vary Accept-Encoding || fail "$p: no Vary: Accept-Encoding: $(cat "$TMP/$n.$v.h")"
	done
	[[ $(head -c2 "$TMP/$n.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] && gzip -t <"$TMP/$n.gz" ||
		fail "$p: body is not gzip"
	gzip -dc <"$TMP/$n.gz" >"$TMP/$n.inflated"
	if [[ $n == metrics ]]; then # process_* figures move between two scrapes
		filt() { grep -v '^process_' "$1"; }
		cmp <(filt "$TMP/$n.plain") <(filt "$TMP/$n.inflated") &&
			cmp <(filt "$TMP/$n.plain") <(filt "$TMP/$n.auto") || fail "$p: gzip'd text differs from plain"
	else
		cmp "$TMP/$n.plain" "$TMP/$n.inflated" && cmp "$TMP/$n.plain" "$TMP/$n.auto" ||
			fail "$p: gzip'd text differs from plain"
	fi
	info "$p: $(stat -c %s "$TMP/$n.plain") bytes plain, $(stat -c %s "$TMP/$n.gz") gzip'd, same text"
done
promtool check metrics <"$TMP/metrics.inflated" || fail "promtool rejects the inflated /metrics"
# Accept-Encoding as RFC 9110 has it: q=0 refuses, * covers unnamed codings,
# names are case-insensitive, several fields form one list.
while IFS='|' read -r want ae; do
	args=()
	IFS=$'\t' read -r -a parts <<<"$ae"
	for a in "${parts[@]}"; do args+=(-H "Accept-Encoding: $a"); done
	[[ $(hget ae /metrics "${args[@]}") == 200 ]] || fail "Accept-Encoding '$ae': not 200"
	got=plain
	has_header ae Content-Encoding gzip && got=gzip
	[[ $got == gzip ]] && { gzip -t <"$TMP/ae" || fail "Accept-Encoding '$ae': bad gzip"; }
	[[ $got == "$want" ]] || fail "Accept-Encoding '$ae': got $got, want $want"
done <<'TABLE'
gzip|gzip
gzip|GZip
gzip|x-gzip
gzip|deflate, gzip;q=0.5, br
gzip|gzip ; q=0.001
gzip|gzip;Q=1.000
gzip|*
gzip|br, *;q=0.1
gzip|identity;q=1, gzip;q=0.9
gzip|br	gzip
plain|gzip;q=0
plain|gzip; q=0.000
plain|gzip;q=0, *
plain|*;q=0
plain|*;q=0.5, gzip;q=0
plain|identity
plain|deflate, br
plain|gzipx, xgzip
plain|gzip;q=2
plain|gzip;q=0.0001
plain|gzip;q=abc
plain|gzip;q=1, gzip;q=0
plain|br	gzip;q=0
TABLE
[[ $(hget hz /healthz -H 'Accept-Encoding: gzip') == 200 ]] && ! grep -qi '^content-encoding' "$TMP/hz.h" &&
	[[ $(cat "$TMP/hz") == ok ]] || fail "/healthz: gzip'd or not ok"
[[ $(hget pp "$stacks_q&format=pprof" -H 'Accept-Encoding: gzip') == 200 ]] &&
	! grep -qi '^content-encoding' "$TMP/pp.h" || fail "pprof: gzip'd twice: $(cat "$TMP/pp.h")"
[[ $(gzip -dc <"$TMP/pp" | head -c2 | od -An -tx1 | tr -d ' ') != 1f8b ]] || fail "pprof: gzip in gzip"

# 3. Bad requests.
head -c 5000 /dev/urandom >"$TMP/random"
gzip -c "${bodies[0]}" >"$TMP/body.gz"
head -c $(($(stat -c %s "$TMP/body.gz") / 2)) "$TMP/body.gz" >"$TMP/trunc.gz"
head -c 1100000 /dev/zero >"$TMP/big"
check() { # WANT DESCRIPTION STATUS
	[[ $3 == "$1" ]] || fail "$2: HTTP $3, want $1 ($(cat "$TMP/resp" 2>/dev/null))"
	info "$2: HTTP $3 $(head -c 100 "$TMP/resp")"
}
check 401 "no token" "$(post "${bodies[0]}")"
check 401 "wrong token" "$(post "${bodies[0]}" -H "Authorization: Bearer wrong")"
check 400 "random bytes" "$(post "$TMP/random" "${auth[@]}")"
check 400 "truncated gzip" "$(post "$TMP/trunc.gz" "${auth[@]}" -H 'Content-Encoding: gzip')"
check 400 "empty body" "$(post /dev/null "${auth[@]}")"
check 413 "oversized body" "$(post "$TMP/big" "${auth[@]}")"
check 413 "oversized chunked body" "$(post "$TMP/big" "${auth[@]}" -H 'Transfer-Encoding: chunked')"
curl -sf "$url/healthz" | grep -qx ok || fail "exporter no longer healthy: $(cat "$TMP/exporter.log")"
curl -sf "$url/metrics" >"$TMP/m2.txt" || fail "no /metrics after bad requests"
for r in auth:2 bad_request:3 too_large:2; do
	n=$(metric "cgperf_exporter_rejects_total{reason=\"${r%%:*}\"}" "$TMP/m2.txt")
	[[ $n == "${r##*:}" ]] || fail "rejects_total{reason=${r%%:*}} is $n, want ${r##*:}"
done
diff <(grep '^cgperf_cgroup' "$TMP/m1.txt") <(grep '^cgperf_cgroup' "$TMP/m2.txt") ||
	fail "bad requests changed the totals"

# 4. The same batch twice: both 200, stored once.
check 200 "captured batch (gzip'd)" "$(post "$TMP/body.gz" "${auth[@]}" -H 'Content-Encoding: gzip')"
curl -sf "$url/metrics" >"$TMP/m3.txt"
check 200 "same batch again" "$(post "${bodies[0]}" "${auth[@]}")"
curl -sf "$url/metrics" >"$TMP/m4.txt"
[[ $(metric cgperf_exporter_batches_duplicate_total "$TMP/m4.txt") == 1 ]] ||
	fail "duplicate not counted: $(grep exporter_ "$TMP/m4.txt")"
[[ $(metric cgperf_exporter_batches_received_total "$TMP/m4.txt") == $((received + 1)) ]] ||
	fail "received count wrong after the duplicate: $(grep exporter_ "$TMP/m4.txt")"
diff <(grep '^cgperf_cgroup' "$TMP/m3.txt") <(grep '^cgperf_cgroup' "$TMP/m4.txt") ||
	fail "a duplicate changed the totals"
grep -q 'cgperf_cgroup_cpu_seconds_total{host="capture-host"' "$TMP/m4.txt" &&
	! grep -q 'cgperf_cgroup_cpu_seconds_total{host="capture-host".* 0$' "$TMP/m4.txt" ||
	fail "captured batch not on /metrics: $(grep capture-host "$TMP/m4.txt")"

# 5. kill -9 right after a batch was acknowledged; restart on the same data.
check 200 "second captured batch" "$(post "${bodies[1]}" "${auth[@]}")"
kill -KILL $EX; wait $EX 2>/dev/null
exporter
curl -sf "$url/metrics" >"$TMP/m5.txt" || fail "no /metrics after restart: $(cat "$TMP/exporter.log")"
promtool check metrics <"$TMP/m5.txt" || fail "promtool rejects /metrics after restart"
diff <(grep '^cgperf_cgroup.*host="test-host"' "$TMP/m4.txt") \
	<(grep '^cgperf_cgroup.*host="test-host"' "$TMP/m5.txt") ||
	fail "test-host totals changed across kill -9 and restart"
check 200 "acknowledged batch resent after restart" "$(post "${bodies[1]}" "${auth[@]}")"
curl -sf "$url/metrics" >"$TMP/m6.txt"
[[ $(metric cgperf_exporter_batches_duplicate_total "$TMP/m6.txt") == 1 ]] ||
	fail "batch acknowledged before kill -9 is not in the store"
# A fresh exporter fed the same two captured batches: same capture-host totals.
exp_start ref "$ref_port"
REF=${EXP_PID[ref]}
url=http://127.0.0.1:$ref_port
check 200 "reference: first batch" "$(post "${bodies[0]}")"
check 200 "reference: second batch" "$(post "${bodies[1]}")"
curl -sf "$url/metrics" >"$TMP/ref.txt"
diff <(grep '^cgperf_cgroup.*host="capture-host"' "$TMP/ref.txt" | sort) \
	<(grep '^cgperf_cgroup.*host="capture-host"' "$TMP/m6.txt" | sort) ||
	fail "capture-host totals after kill -9 and restart differ from a fresh exporter's"
# 6. The series cap: a batch that would take /metrics past --max-series is
# refused with 429 and Retry-After before anything is stored; smaller ones
# still go in, and the refusal is counted.
lim_port=$(free_port)
exp_start lim "$lim_port" --max-series 60 --series-expiry 42s
LIM=${EXP_PID[lim]}
url=http://127.0.0.1:$lim_port
"$BUILD_DIR/tools/gen_batch" --cgroups 100 --counters 2 --stacks 1 --host big --agent big --seq 1 write "$TMP/wide.pb" ||
	fail "gen_batch failed"
"$BUILD_DIR/tools/gen_batch" --cgroups 3 --counters 2 --stacks 1 --host small --agent small --seq 1 write "$TMP/narrow.pb" ||
	fail "gen_batch failed"
code=$(curl -s -o "$TMP/resp" -D "$TMP/hdr" -w '%{http_code}' --data-binary @"$TMP/wide.pb" \
	-H 'Content-Type: application/x-protobuf' "$url/api/v1/push")
[[ $code == 429 ]] || fail "batch over --max-series: HTTP $code, want 429 ($(cat "$TMP/resp"))"
grep -qi '^Retry-After: 42' "$TMP/hdr" || fail "429 without Retry-After 42: $(cat "$TMP/hdr")"
grep -q 'series limit' "$TMP/resp" || fail "429 without a reason: $(cat "$TMP/resp")"
info "over the series cap: HTTP 429, $(head -c 120 "$TMP/resp")"
check 200 "batch under the series cap" "$(post "$TMP/narrow.pb")"
curl -sf "$url/metrics" >"$TMP/lim.txt" || fail "no /metrics after a series-limit refusal"
[[ $(metric 'cgperf_exporter_rejects_total{reason="series_limit"}' "$TMP/lim.txt") == 1 ]] ||
	fail "series_limit refusal not counted: $(grep rejects "$TMP/lim.txt")"
grep -q 'host="big"\|agent_id="big"' "$TMP/lim.txt" && fail "the refused batch reached /metrics"
kill -TERM $LIM; wait $LIM || fail "capped exporter did not stop cleanly"
url=http://127.0.0.1:$ref_port

# Clean stop on SIGTERM.
kill -TERM $REF
wait $REF || fail "exporter did not stop cleanly on SIGTERM: $(cat "$TMP/ref.log")"
grep -q 'msg="exporter stopped"' "$TMP/ref.log" || fail "no stop message: $(cat "$TMP/ref.log")"
grep -q 'level=error' "$TMP/exporter.log" && fail "errors logged: $(grep level=error "$TMP/exporter.log")"
exit 0
