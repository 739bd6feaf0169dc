#!/bin/bash
# record, C++: the agent and perf sample the same run of the C++ workload
# (tests/workloads/cxx.cpp) side by side, by frame pointers and by DWARF CFI.
#
#  - names: for each kind of C++ name (namespaces + class template + a
#    GCC clone, a function template, an internal-linkage function, an
#    anonymous namespace, a lambda, a plain function), perf's leaf name
#    (`perf script -v`: parameters and clone suffixes) appears, byte for
#    byte, as a leaf in the agent's folded stacks; with --demangle short,
#    perf's default names (`perf script`); with --no-demangle, the mangled
#    ones; `trace --stacks` names frames the same way, and `run` pushes
#    them so (symbols.demangle: default full, and none).
#  - DWARF: the workload's hot frames sit under C++ frames with cleanups
#    and handlers (CIE augmentation "zPLR"); the share of samples whose
#    stack reaches main or _start must be within 5 points of perf's.
source "$(dirname "$0")/../lib/common.sh"
command -v perf >/dev/null || skip "perf not installed"
BIN=$BUILD_DIR/workloads/cxx
[[ -x $BIN ]] || fail "$BIN not built (make build-tests)"
FREQ=499 # a loaded host gives the workload a quarter of a CPU: still 100+ samples
SECS=3

# One run of the workload, sampled at once by perf and by the agents given
# as "NAME ARGS..." strings; outputs in $TMP/NAME.folded and $TMP/$perfname.data.
sample_run() {
	local perfname=$1 callgraph=$2
	shift 2
	local pid agents=() spec name
	"$BIN" $((SECS + 30)) &
	pid=$!
	bg_track "$pid"
	perf record -F "$FREQ" $callgraph -p "$pid" -o "$TMP/$perfname.data" -- sleep "$SECS" \
		>"$TMP/$perfname.out" 2>&1 &
	agents+=($!)
	for spec in "$@"; do
		read -r name args <<<"$spec"
		# shellcheck disable=SC2086
		"$AGENT" record -F "$FREQ" $args -p "$pid" --duration "$SECS" -o "$TMP/$name.folded" \
			2>"$TMP/$name.err" &
		agents+=($!)
	done
	for p in "${agents[@]}"; do
		wait "$p" || fail "a sampler failed: $(cat "$TMP"/*.err "$TMP/$perfname.out" | tail -5)"
	done
	# It would burn SECS + 30 s of CPU, so it outlives the samplers however
	# slowly they start; still there (no crash), it is killed, not waited for.
	kill -0 "$pid" 2>/dev/null || {
		wait "$pid"
		fail "the workload ended (status $?) before the samplers"
	}
	kill "$pid"
	wait "$pid" 2>/dev/null
}

sample_run perf-fp "-g" "fp -g" "fp-short -g --demangle short" "fp-raw -g --no-demangle"
sample_run perf-dw "--call-graph dwarf" "dw --call-graph dwarf"
for f in "$TMP"/*.err; do sed "s/^/    $(basename "$f" .err): /" "$f"; done

perf script -v -i "$TMP/perf-fp.data" -F ip,sym >"$TMP/perf-fp.full" 2>/dev/null ||
	fail "perf script -v failed"
perf script -i "$TMP/perf-fp.data" -F ip,sym >"$TMP/perf-fp.short" 2>/dev/null ||
	fail "perf script failed"
perf script -v -i "$TMP/perf-dw.data" -F ip,sym >"$TMP/perf-dw.full" 2>/dev/null ||
	fail "perf script -v failed"

# Trace stacks name frames through the same code.
"$AGENT" trace -e "u:$BIN:_Z9leaf_worki" --stacks -- "$BIN" 0.3 >"$TMP/trace.out" 2>&1 ||
	fail "trace failed: $(tail -5 "$TMP/trace.out")"

# run: what is pushed carries the names as symbols.demangle says (default
# full, then none), through a stand-in collector and wire-dump.
cg=$(cg_make cxx)
relcg=${cg#"$(cg2_mount)"}
for style in default none; do
	mkdir -p "$TMP/fc-$style"
	python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc-$style" --port 0 \
		--port-file "$TMP/port-$style" >"$TMP/fc-$style.log" 2>&1 &
	fc=$!
	bg_track $fc
	for ((i = 0; i < $(scaled 50); i++)); do
		[[ -s $TMP/port-$style ]] && break
		sleep 0.1
	done
	[[ -s $TMP/port-$style ]] || fail "collector did not start: $(cat "$TMP/fc-$style.log")"
	symbols=""
	[[ $style == none ]] && symbols="symbols: {demangle: none}"
	cat >"$TMP/run-$style.yaml" <<YAML
host: {name: test-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$relcg"]}
counters: {enabled: false}
sampling: {frequency: $FREQ, call_graph: dwarf}
$symbols
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$(cat "$TMP/port-$style")/api/v1/push"]
  spool: {dir: $TMP/spool-$style}
YAML
	agent_run "$TMP/run-$style.log" --config "$TMP/run-$style.yaml"
	for ((i = 0; i < $(scaled 100); i++)); do
		grep -q 'msg=started' "$TMP/run-$style.log" && break
		kill -0 $ag 2>/dev/null || fail "run ($style): agent exited: $(cat "$TMP/run-$style.log")"
		sleep 0.1
	done
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 1.5' sh "$cg" "$BIN" ||
		fail "the workload failed in $cg"
	sleep 1.2 # one more interval
	kill -TERM $ag
	wait $ag || fail "run ($style) failed: $(tail -n 20 "$TMP/run-$style.log")"
	kill $fc
	wait $fc 2>/dev/null
	for f in "$TMP/fc-$style"/body-*; do
		[[ -f $f ]] || fail "run ($style): no batch received: $(cat "$TMP/fc-$style.log")"
		"$AGENT" wire-dump "$f"
	done >"$TMP/batches-$style.jsonl" || fail "run ($style): a batch does not decode"
done

python3 - "$TMP" <<'PY'
import json, re, sys
from collections import Counter
tmp = sys.argv[1]
fails = []

def perf_samples(path):
    """perf script -F ip,sym: one block of '  ip sym' lines per sample, leaf first."""
    out, cur = [], []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                out.append(cur)
            cur = []
            continue
        m = re.match(r"\s*[0-9a-f]+ (.*)$", line)
        if m:
            cur.append(m.group(1))
    if cur:
        out.append(cur)
    return out

def agent_samples(path):
    """Folded stacks of comm cxx, root first, user frames only, with counts."""
    out = []
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if frames[0] != "cxx":
            continue
        user = [f for f in frames[1:] if not f.endswith("_[k]")]
        out.append((user, int(n)))
    return out

def agent_leaves(path):
    c = Counter()
    for user, n in agent_samples(path):
        if user:
            c[user[-1]] += n
    return c

def perf_leaves(path):
    return Counter(s[0] for s in perf_samples(path) if s)

# kind -> what identifies its leaf, and what perf's full name must show
KINDS = {
    "namespaces+class template+clone": ("Klass<int>::method", r"^outer::inner::Klass<int>::method\(int, int\) \[clone \.\w+\.\d+\]$"),
    "function template":               ("scale<double>", r"^double outer::scale<double>\(double\)$"),
    "internal linkage in a namespace":  ("sum_parts", r"^outer::sum_parts\(outer::Parts const&\)$"),
    "anonymous namespace":             ("hidden_work", r"^\(anonymous namespace\)::hidden_work\(int\)$"),
    "lambda":                          ("{lambda", r"^run_lambda\(int\)::\{lambda\(int\)#1\}::operator\(\)\(int\) const$"),
    "plain function":                  ("leaf_work", r"^leaf_work\(int\)$"),
}
RAW = {"Klass<int>::method": "_ZN5outer5inner5KlassIiE6methodEii.constprop.0",
       "hidden_work": "_ZN12_GLOBAL__N_111hidden_workEi",
       "{lambda": "_ZZ10run_lambdaiENKUliE_clEi"}

pf, ps = perf_leaves(f"{tmp}/perf-fp.full"), perf_leaves(f"{tmp}/perf-fp.short")
af, ash, araw = (agent_leaves(f"{tmp}/{n}.folded") for n in ("fp", "fp-short", "fp-raw"))
adw = agent_leaves(f"{tmp}/dw.folded")
print("# kind: perf's leaf (samples perf / agent full / agent dwarf) | short form (perf / agent)")
for kind, (key, shape) in KINDS.items():
    full = [n for n, _ in pf.most_common() if key in n]
    short = [n for n, _ in ps.most_common() if key in n]
    if not full:
        fails.append(f"{kind}: perf has no leaf with {key!r}")
        continue
    name = full[0]
    print(f"#   {kind}: {name!r} ({pf[name]} / {af.get(name, 0)} / {adw.get(name, 0)})"
          f" | {short[0] if short else None!r} ({ps.get(short[0], 0) if short else 0} /"
          f" {ash.get(short[0], 0) if short else 0})")
    if not re.match(shape, name):
        fails.append(f"{kind}: perf's name {name!r} is not of the expected shape {shape}")
    if af.get(name, 0) < 5:
        fails.append(f"{kind}: the agent has {af.get(name, 0)} leaf samples named {name!r} "
                     f"(its leaves with {key!r}: {[n for n in af if key in n]})")
    if adw.get(name, 0) < 5:
        fails.append(f"{kind}: the agent's DWARF profile has {adw.get(name, 0)} leaf samples named {name!r}")
    if not short or ash.get(short[0], 0) < 5:
        fails.append(f"{kind}: --demangle short: perf's {short[0] if short else None!r} not among "
                     f"the agent's leaves {[n for n in ash if key in n]}")
    if key in RAW and araw.get(RAW[key], 0) < 5:
        fails.append(f"{kind}: --no-demangle: {RAW[key]!r} not among the agent's leaves "
                     f"{[n for n in araw if key.strip('{') in n or n.startswith('_Z')]}")
if any(n.startswith("_Z") for n in af):
    fails.append(f"mangled names left in the demangled profile: {[n for n in af if n.startswith('_Z')]}")

# DWARF: stacks that reach main or _start.
def share_agent(path):
    tot = good = 0
    for user, n in agent_samples(path):
        tot += n
        if "main" in user or "_start" in user:
            good += n
    return good, tot

def share_perf(path):
    tot = good = 0
    for s in perf_samples(path):
        tot += 1
        if "main" in s or "_start" in s:
            good += 1
    return good, tot

for mode, agent, perf in (("fp", "fp", "perf-fp.full"), ("dwarf", "dw", "perf-dw.full")):
    ag, at = share_agent(f"{tmp}/{agent}.folded")
    pg, pt = share_perf(f"{tmp}/{perf}")
    a, p = (ag / at if at else 0), (pg / pt if pt else 0)
    print(f"# {mode}: stacks reaching main/_start: agent {ag}/{at} ({a:.1%}), perf {pg}/{pt} ({p:.1%})")
    # shares of at least 100 stacks; a loaded host gives the workload less CPU
    if at < 100 or pt < 100:
        fails.append(f"{mode}: too few samples (agent {at}, perf {pt})")
    if mode == "dwarf" and a < p - 0.05:
        fails.append(f"dwarf: the agent's stacks reach main/_start in {a:.1%} of samples, perf's in {p:.1%}")

# C++ frames with cleanups are walked through, not stopped at.
walked = sum(n for user, n in agent_samples(f"{tmp}/dw.folded")
             if "with_cleanup(int)" in user and "main" in user and user[-1] == "leaf_work(int)")
stopped = sum(n for user, n in agent_samples(f"{tmp}/dw.folded")
              if user and user[0] in ("with_cleanup(int)", "round_once(int)", "leaf_work(int)"))
print(f"# dwarf: main;...;with_cleanup(int);leaf_work(int) in {walked} samples; "
      f"stacks starting at a C++ frame: {stopped}")
if walked < 5:
    fails.append("dwarf: no stack goes from main through with_cleanup(int) to leaf_work(int)")

trace = open(f"{tmp}/trace.out").read()
if "round_once(int);leaf_work(int)" not in trace:
    fails.append("trace --stacks does not show demangled frames:\n" + trace[-600:])

# run: the pushed string tables.
def pushed_strings(style):
    out = set()
    def walk(v):
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    for line in open(f"{tmp}/batches-{style}.jsonl"):
        walk(json.loads(line))
    return out
full_name = "outer::inner::Klass<int>::method(int, int) [clone .constprop.0]"
raw_name = "_ZN5outer5inner5KlassIiE6methodEii.constprop.0"
for style, want, unwanted in (("default", full_name, raw_name), ("none", raw_name, full_name)):
    strs = pushed_strings(style)
    hit = any(want in s for s in strs)
    miss = any(unwanted in s for s in strs)
    print(f"# run ({style}): pushed {want!r}: {hit}; {unwanted!r}: {miss}")
    if not hit or miss:
        fails.append(f"run ({style}): pushed names: want {want!r}, not {unwanted!r}; "
                     f"got {sorted(s for s in strs if 'method' in s or 'Klass' in s)}")

for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
