#!/bin/bash
# Stacks out of cgperf-exporter: cgperf-agent run samples the known call
# chain (tests/workloads/chain-fp: main -> chain_a -> chain_b -> chain_c ->
# chain_leaf) in a test cgroup with frame pointers and pushes the stacks;
# then /api/v1/stacks for that cgroup, in each format:
#   folded  every line "root;...;leaf COUNT" (strict regex), root first (main
#           before chain_a before ... chain_leaf), and the parse of
#           flamegraph.pl/stackcollapse (a perl one-liner) agrees on the total;
#   pprof   `go tool pprof -top` reads it; its top functions by flat samples
#           are the folded output's top leaves (kernel "f_[k]" is pprof's
#           "f"), same counts, same order (ties in any order), same total; its mapping of chain-fp carries the
#           binary's build id (readelf -n), once the agent sends modules;
#   svg     well-formed XML (xmllint), naming the chain's functions.
# STORE=clickhouse runs it on a ClickHouse server it starts.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/exporter.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
W=$BUILD_DIR/workloads
[[ -x $W/chain-fp ]] || fail "$W/chain-fp not built (make O=${BUILD:-build} build-tests)"
for c in curl go xmllint perl readelf python3; do
	command -v $c >/dev/null || fail "$c missing (packaging/install-deps.sh installs it)"
done
# go tool pprof, offline, with every cache in $TMP
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS=-mod=mod GOPROXY=off \
	GOTOOLCHAIN=local GOTELEMETRY=off PPROF_TMPDIR=$TMP/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

store_setup
cg_new pprof
# shellcheck disable=SC2046 # store_args: one flag or value a line
exporter_up $(store_args exporter)

# (push timeout: the time the exporter may take to answer, also at the
# stop's flush; slow with a sanitizer or a loaded host)
agent_yaml pprof-host "$rel" "sampling: {frequency: 199, call_graph: fp, event: cpu-clock}" \
	"push: {interval: 1s, collectors: [\"$ex/api/v1/push\"], timeout: $(scaled 5)s, spool: {dir: $TMP/spool}}"
# Stopped by SIGTERM (a last batch, then the queue flushed) once the workload
# is done, not by a --duration a slow start could eat into.
agent_run "$TMP/agent.log" --config "$TMP/agent.yaml" --duration "$(scaled 60)"
# sampling set up on the cgroup (before "started") before the workload starts
for ((i = 0; i < $(scaled 100); i++)); do
	grep -q 'msg=started' "$TMP/agent.log" && break
	kill -0 $ag 2>/dev/null || fail "agent exited: $(tail -5 "$TMP/agent.log")"
	sleep 0.1
done
grep -q 'msg=started' "$TMP/agent.log" || fail "agent not started after $(scaled 10) s: $(tail -5 "$TMP/agent.log")"
cg_spawn "$cg" "$W/chain-fp" 3
wl=$SPAWNED
wait $wl || fail "chain-fp failed"
# The floor is what the workload's CPU time (its own new cgroup) is worth at
# 199 Hz, so a loaded host that gives it little CPU does not fail the test.
want=$(( $(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat") * 199 / 1000000 ))
kill -TERM $ag
wait $ag || fail "agent run failed: $(tail -5 "$TMP/agent.log")"

# get FORMAT OUT: the cgroup's stacks; fails on anything but 200
q="host=pprof-host&cgroup=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$rel")&event=cpu-clock"
get() {
	local st
	st=$(curl -s -o "$2" -w '%{http_code}' "$ex/api/v1/stacks?$q&format=$1")
	[[ $st == 200 ]] || fail "GET /api/v1/stacks?$q&format=$1: HTTP $st: $(head -c 300 "$2")"
}
# The agent has flushed its batches; the exporter's ingest may still be
# storing the last: until the samples reach the floor below (404 while there
# are none), or the time is up.
for ((i = 0; i < $(scaled 100); i++)); do
	st=$(curl -s -o "$TMP/out.folded" -w '%{http_code}' "$ex/api/v1/stacks?$q&format=folded")
	[[ $st == 200 ]] && (($(awk '{ s += $NF } END { print s + 0 }' "$TMP/out.folded") * 10 >= want * 7)) &&
		break
	sleep 0.1
done
st=$(curl -s -o /dev/null -w '%{http_code}' "$ex/api/v1/stacks?$q&format=folded")
[[ $st == 404 ]] && fail "the exporter has no /api/v1/stacks"

# --- folded
get folded "$TMP/out.folded"
[[ -s $TMP/out.folded ]] || fail "empty folded output for $rel"
lines=$(wc -l <"$TMP/out.folded")
# frames non-empty, ';' between them, one space, a decimal count (no sign,
# no leading zero), a final newline
bad=$(LC_ALL=C grep -vcE '^[^;]+(;[^;]+)* [1-9][0-9]*$' "$TMP/out.folded")
((bad == 0)) || fail "$bad of $lines folded lines are malformed: $(LC_ALL=C grep -vE '^[^;]+(;[^;]+)* [1-9][0-9]*$' "$TMP/out.folded" | head -3)"
[[ $(tail -c1 "$TMP/out.folded" | od -An -c | tr -d ' ') == '\n' ]] || fail "folded output lacks its final newline"
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/out.folded")
# flamegraph.pl's own parse: /^(.*)\s+?(\d+(?:\.\d*)?)$/, frames split on ';'
perl -ne 'chomp; my ($st, $n) = /^(.*)\s+?(\d+(?:\.\d*)?)$/ or die "unparsable: $_\n";
	my @f = split /;/, $st; die "empty frame: $_\n" if grep { $_ eq "" } @f;
	$t += $n; END { print "$t\n" }' "$TMP/out.folded" >"$TMP/perl.total" 2>"$TMP/perl.err" ||
	fail "flamegraph.pl's parse fails: $(cat "$TMP/perl.err")"
[[ $(cat "$TMP/perl.total") == "$total" ]] || fail "perl total $(cat "$TMP/perl.total") != $total"
python3 - "$TMP/out.folded" <<'PY' || fail "the folded chain is not root first"
import sys
want = ["main", "chain_a", "chain_b", "chain_c", "chain_leaf"]
full = tot = 0
for line in open(sys.argv[1], encoding="utf-8"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    f = stack.split(";")
    tot += int(n)
    if "chain_leaf" in f:
        idx = [f.index(w) if w in f else -1 for w in want]
        assert idx == sorted(idx) and -1 not in idx, f"chain out of order: {stack}"
        assert idx[-1] - idx[0] == len(want) - 1, f"chain not contiguous: {stack}"
        full += int(n)
print(f"# folded: {full}/{tot} samples carry main;chain_a;chain_b;chain_c;chain_leaf, root first")
assert full >= 0.8 * tot, f"only {full} of {tot} samples in the chain"
PY
info "folded: $lines stacks, $total samples, strict format and flamegraph.pl's parse agree"
((total >= 20 && total * 10 >= want * 7)) || fail "only $total samples for chain-fp, its CPU time is worth $want at 199 Hz"

# --- pprof
get pprof "$TMP/out.pb.gz"
gzip -t "$TMP/out.pb.gz" 2>/dev/null || fail "pprof output is not gzip"
go tool pprof -top -nodecount=10 -nodefraction=0 -edgefraction=0 -sample_index=samples \
	"$TMP/out.pb.gz" >"$TMP/top.txt" 2>"$TMP/pprof.err" ||
	fail "go tool pprof -top cannot read the profile: $(cat "$TMP/pprof.err")"
sed 's/^/#   /' "$TMP/top.txt"
go tool pprof -raw "$TMP/out.pb.gz" >"$TMP/raw.txt" 2>"$TMP/pprof.err" ||
	fail "go tool pprof -raw cannot read the profile: $(cat "$TMP/pprof.err")"
grep -q '^PeriodType: cpu nanoseconds' "$TMP/raw.txt" || info "note: no cpu/nanoseconds period type"
for t in samples/count cpu/nanoseconds; do
	grep -q "$t" "$TMP/raw.txt" || fail "sample type $t missing: $(sed -n '1,8p' "$TMP/raw.txt")"
done
python3 - "$TMP/out.folded" "$TMP/top.txt" <<'PY' || fail "pprof's top functions differ from the folded leaves"
import collections, re, sys
# Kernel frames are "name_[k]" in folded text (perf's stackcollapse
# convention) and function "name" in the [kernel.kallsyms] mapping in pprof.
def fn(frame):
    return frame[:-4] if frame.endswith("_[k]") else frame
leaf = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    leaf[fn(stack.split(";")[-1])] += int(n)
total = sum(leaf.values())
top, total_pp = [], None
for line in open(sys.argv[2], encoding="utf-8"):
    m = re.match(r"Showing nodes accounting for \S+, \S+ of (\d+) total", line)
    if m:
        total_pp = int(m.group(1))
    m = re.match(r"\s*(\d+)\s+\S+%\s+\S+%\s+\d+\s+\S+%\s+(.+)$", line)
    if m and int(m.group(1)) > 0:  # rows of flat 0 fill up -nodecount
        top.append((m.group(2).strip(), int(m.group(1))))
assert total_pp == total, f"pprof total {total_pp}, folded total {total}"
assert top, "no rows in pprof -top"
# The folded ranking; a group of equal counts may come in any order.
ranked = sorted(leaf.items(), key=lambda kv: -kv[1])
cut = top[-1][1]
for i, (name, flat) in enumerate(top):
    want = ranked[i][1] if i < len(ranked) else None
    assert flat == want, f"rank {i + 1}: pprof {name} {flat}, folded rank {i + 1} has {want}"
    assert leaf.get(name) == flat, f"pprof {name} flat {flat}, folded leaf sum {leaf.get(name)}"
# everything above the last count shown is in pprof's list
shown = {n for n, _ in top}
for name, n in ranked:
    if n > cut:
        assert name in shown, f"{name} ({n}) missing from pprof -top"
want_rows = min(10, len(leaf))
assert len(top) == want_rows, f"{len(top)} rows, want {want_rows}"
print(f"# pprof -top: {len(top)} functions with samples of their own, flat counts and order = folded leaf sums; total {total}")
assert top[0][0] == "chain_leaf", f"top function is {top[0][0]}, not chain_leaf"
PY

# The chain-fp mapping's build id, once the agent sends modules.
want_bid=$(readelf -n "$W/chain-fp" | awk '/Build ID:/ { print $3; exit }')
[[ -n $want_bid ]] || fail "readelf finds no build id in $W/chain-fp"
map=$(awk '/^Mappings/ { m = 1; next } m && index($0, "/chain-fp") { print; exit }' "$TMP/raw.txt")
if [[ -z $map ]]; then
	info "SKIPPED sub-check: no mapping for chain-fp in the profile yet (needs per-frame modules from the agent, wireA): $(
		awk '/^Mappings/ { m = 1 } m' "$TMP/raw.txt" | head -4 | tr '\n' '|')"
else
	got_bid=$(grep -oE ' [0-9a-f]{16,} ' <<<"$map" | tr -d ' ' | head -n1)
	if [[ -z $got_bid ]]; then
		info "SKIPPED sub-check: the chain-fp mapping has no build id yet: $map"
	else
		[[ $got_bid == "$want_bid" ]] || fail "chain-fp mapping build id $got_bid, readelf says $want_bid"
		info "pprof mapping: $map (build id = readelf -n)"
	fi
fi

# --- svg
get svg "$TMP/out.svg"
xmllint --noout "$TMP/out.svg" 2>"$TMP/xmllint.err" || fail "SVG is not well-formed: $(head -5 "$TMP/xmllint.err")"
grep -q '<svg' "$TMP/out.svg" || fail "no <svg> element"
for f in main chain_a chain_b chain_c chain_leaf; do
	grep -q "$f" "$TMP/out.svg" || fail "SVG does not name $f"
done
info "svg: $(stat -c %s "$TMP/out.svg") bytes, well-formed, names the chain"
grep -q 'level=error' "$TMP/exporter.log" && fail "exporter logged errors: $(grep level=error "$TMP/exporter.log")"
exit 0
