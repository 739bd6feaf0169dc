#!/bin/bash
# cgperf-agent run: probes with `stacks: true` push the stacks of their hits
# as a Profile whose event is the probe's label (period and frequency 0),
# per cgroup, with per-frame modules; and sampling.per_cgroup: false pushes
# the CPU stacks of every selected cgroup as one Profile of the root cgroup
# "/", while counters (and probe stacks) stay per cgroup.
#
#   run 1  DWARF, a USDT probe fired an exact number of times (sdtprobe) in
#          one cgroup: stack counts = hits per batch, hits = rounds, the
#          caller chain main;fire, a probe without stacks has no profile.
#   run 2  frame pointers, per_cgroup false: a uprobe on chain_touch in
#          chain-fp (cgroup B) with stacks, spin-c burning CPU in cgroup C.
#   run 3  as run 2 with per_cgroup true, to compare the sample totals.
#
# Every batch's figures are also checked against the agent's own
# "batch queued" log line (samples, probe_stacks), exactly.
# holds: sdtprobe
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
for w in sdtprobe chain-fp spin; do
	[[ -x $W/$w ]] || fail "workload $W/$w not built"
done
N=3000 # sdtprobe rounds
mkdir -p "$TMP/bin"
cp "$W/spin" "$TMP/bin/spin-c" # its own comm, to tell its stacks apart
# A probe label with the ';' that separates frames ("u:chain;fp:chain_touch"),
# on a binary run through a link, so the thread is still named chain-fp.
cp "$W/chain-fp" "$TMP/bin/chain;fp"
ln -s "chain;fp" "$TMP/bin/chain-fp"
cga=$(cg_make a)
cgb=$(cg_make b)
cgc=$(cg_make c)
rela=${cga#"$(cg2_mount)"}
relb=${cgb#"$(cg2_mount)"}
relc=${cgc#"$(cg2_mount)"}
root_ino=$(stat -c %i "$(cg2_mount)")

# run_in CGROUP OUT BINARY ARGS...: run BINARY in CGROUP from its start.
run_in() {
	local cg=$1 out=$2
	shift 2
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@" >"$out" 2>&1
}

# agent N YAML-BODY: start collector and agent for run N (config = common
# settings + YAML-BODY), wait until the agent has placed everything.
agent() {
	local n=$1 body=$2 i
	mkdir -p "$TMP/fc$n"
	python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc$n" --port 0 \
		--port-file "$TMP/port$n" >"$TMP/fc$n.log" 2>&1 &
	FC=$!; bg_track $FC
	for ((i = 0; i < $(scaled 50); i++)); do
		[[ -s $TMP/port$n ]] && break
		sleep 0.1
	done
	[[ -s $TMP/port$n ]] || fail "collector did not start: $(cat "$TMP/fc$n.log")"
	cat >"$TMP/agent$n.yaml" <<YAML
host: {name: test-host, agent_id_file: $TMP/agent-id}
counters: {events: [task-clock]}
$body
push:
  interval: 1s
  collectors: ["http://127.0.0.1:$(cat "$TMP/port$n")/api/v1/push"]
  timeout: 5s
  spool: {dir: $TMP/spool$n}
log: {level: debug}
YAML
	"$AGENT" run --config "$TMP/agent$n.yaml" 2>"$TMP/run$n.log" &
	AG=$!; bg_track $AG
	for ((i = 0; i < $(scaled 100); i++)); do
		grep -q 'msg=started' "$TMP/run$n.log" && return 0
		kill -0 $AG 2>/dev/null || fail "run $n: agent exited: $(cat "$TMP/run$n.log")"
		sleep 0.1
	done
	fail "run $n: agent did not start: $(tail -n 5 "$TMP/run$n.log")"
}

# finish N: stop the agent (the last, short batch is flushed), decode what
# the collector got into batchesN.jsonl and the agent's batch lines into
# producedN (seq samples hits probe_stacks probe_lost).
finish() {
	local n=$1 f
	kill -TERM $AG
	wait $AG || fail "run $n failed: $(tail -n 20 "$TMP/run$n.log")"
	kill $FC; wait $FC 2>/dev/null
	grep -v 'level=debug' "$TMP/run$n.log" | head -n 10
	for f in "$TMP/fc$n"/body-*; do
		[[ -f $f ]] || fail "run $n: no batch received: $(cat "$TMP/fc$n.log")"
		"$AGENT" wire-dump "$f"
	done >"$TMP/batches$n.jsonl" || fail "run $n: a batch does not decode"
	sed -n 's/.*msg="batch queued" seq=\([0-9]*\) samples=\([0-9]*\) hits=\([0-9]*\) .* probe_stacks=\([0-9]*\) probe_lost=\([0-9]*\).*/\1 \2 \3 \4 \5/p' \
		"$TMP/run$n.log" >"$TMP/produced$n"
	[[ -s $TMP/produced$n ]] || fail "run $n: no 'batch queued' lines: $(tail -n 5 "$TMP/run$n.log")"
}

# ---- run 1: DWARF, USDT probe with stacks, an exact number of hits --------
agent 1 "cgroups: {include: [\"$rela\"]}
sampling: {frequency: 99, call_graph: dwarf}
probes:
  - spec: \"sdt:cgperf_test:hit@$W/sdtprobe\"
    stacks: true
  - spec: \"sdt:cgperf_test:mem@$W/sdtprobe\""
run_in "$cga" "$TMP/sdt.out" "$W/sdtprobe" $N 1000 || fail "sdtprobe failed: $(cat "$TMP/sdt.out")"
sleep 1.2 # one more interval
finish 1
armed=$(awk '/^armed/ { print $2 }' "$TMP/sdt.out")
info "sdtprobe: $N rounds, hit armed in $armed"

# ---- run 2 and 3: frame pointers, uprobe with stacks, two cgroups ---------
for n in 2 3; do
	pc=$([[ $n == 2 ]] && echo false || echo true)
	agent $n "cgroups: {include: [\"$relb\", \"$relc\"]}
sampling: {frequency: 99, call_graph: fp, per_cgroup: $pc}
probes:
  - spec: 'u:$TMP/bin/chain;fp:chain_touch'
    stacks: true"
	run_in "$cgc" "$TMP/spin$n.out" "$TMP/bin/spin-c" 3 &
	sp=$!
	run_in "$cgb" "$TMP/chain$n.out" "$TMP/bin/chain-fp" 3 || fail "chain-fp failed: $(cat "$TMP/chain$n.out")"
	wait $sp || fail "spin-c failed: $(cat "$TMP/spin$n.out")"
	sleep 1.2
	finish $n
done

python3 - "$TMP" "$rela" "$relb" "$relc" "$N" "$armed" "$W/sdtprobe" "$TMP/bin/chain;fp" "$root_ino" <<'PY' ||
import json, re, sys
tmp, rela, relb, relc = sys.argv[1:5]
N, armed = int(sys.argv[5]), int(sys.argv[6])
sdt_bin, chain_bin, root_ino = sys.argv[7], sys.argv[8], int(sys.argv[9])

def load(n):
    rows = [json.loads(l) for l in open(f"{tmp}/batches{n}.jsonl")]
    produced = {}
    for l in open(f"{tmp}/produced{n}"):
        seq, samples, hits, pst, lost = (int(x) for x in l.split())
        produced[seq] = (samples, hits, pst, lost)
    return rows, produced

def cg_index(r, path):
    return [i for i, c in enumerate(r["cgroups"]) if c["path"] == path]

def frames(line):
    return line.rsplit(" ", 1)[0].split(";")

def count(line):
    return int(line.rsplit(" ", 1)[1])

def check_produced(n, rows, produced, probe_events):
    """Per batch: all stack samples and the probe stacks equal the agent's log."""
    received = {}
    for r in rows:
        total = sum(p["samples"] for p in r["profiles"])
        pst = sum(p["samples"] for p in r["profiles"] if p["event"] in probe_events)
        hits = sum(p["hits"] for p in r["probes"])
        received[r["seq"]] = (total, hits, pst)
    want = {s: v[:3] for s, v in produced.items()}
    # The log writes one message at most 5 times a minute (its flood guard):
    # a sixth batch arrives without its line; every logged one must match.
    unlogged = set(received) - set(want)
    assert not unlogged or len(want) >= 5, f"run {n}: batches {sorted(unlogged)} not in the log"
    assert {s: received.get(s) for s in want} == want, f"run {n}: received {received} != produced {want}"
    return sum(v[3] for v in produced.values())

# ---- run 1 ----
rows, produced = load(1)
hit_label, mem_label = "sdt:cgperf_test:hit", "sdt:cgperf_test:mem"
lost = check_produced(1, rows, produced, {hit_label})
hits = mem_hits = stack_total = chain = fire_mod_ok = fire_frames = 0
for r in rows:
    a = cg_index(r, rela)
    mods = r["modules"]
    bh = sum(p["hits"] for p in r["probes"] if p["label"] == hit_label and p["cgroup"] in a)
    hits += bh
    mem_hits += sum(p["hits"] for p in r["probes"] if p["label"] == mem_label and p["cgroup"] in a)
    assert not any(p["event"] == mem_label for p in r["profiles"]), \
        f"seq {r['seq']}: a profile for {mem_label}, which has no stacks: true"
    profs = [p for p in r["profiles"] if p["event"] == hit_label]
    assert all(p["cgroup"] in a for p in profs), f"seq {r['seq']}: probe stacks outside {rela}"
    assert len(profs) <= 1, f"seq {r['seq']}: {len(profs)} profiles for {hit_label} in one cgroup"
    bs = sum(p["samples"] for p in profs)
    # Every hit is one record carrying its stack: the counts match exactly.
    assert bs == bh, f"seq {r['seq']}: {bs} probe stacks for {bh} hits"
    stack_total += bs
    for p in profs:
        for line, fm in zip(p["folded"], p["frame_modules"]):
            f = frames(line)
            # (the first hits may come before the exec's comm record is read)
            assert f[0] in ("sdtprobe", "sh"), f"the stack does not start with the comm: {line}"
            assert hit_label not in f, f"the prefix frame was pushed: {line}"
            assert len(fm) == len(f) and fm[0] == 0, f"frame modules {fm} for {line}"
            if "main" in f and f.index("main") + 1 < len(f) and f[f.index("main") + 1] == "fire":
                chain += count(line)
            for name, m in zip(f, fm):
                if name == "fire":
                    fire_frames += 1
                    fire_mod_ok += bool(m) and mods[m - 1]["path"] == sdt_bin
    # The CPU profile of the cgroup is another profile.
    assert all(p["event"] in ("cpu-clock", hit_label) for p in r["profiles"]), \
        [p["event"] for p in r["profiles"]]
print(f"# run 1: {len(rows)} batches; {hit_label} hits {hits} (armed {armed} of {N} rounds), "
      f"{mem_label} hits {mem_hits}, probe stacks {stack_total}, main;fire in {chain}, "
      f"probe records lost {lost}")
assert armed == N, f"the probe's semaphore was raised in {armed} of {N} rounds"
assert stack_total == hits, f"{stack_total} stacks for {hits} hits"
# Lost records (a full ring) take a hit and its stack together.
assert hits <= N and hits >= N - lost and hits >= 0.9 * N, f"{hits} hits of {N} fired, {lost} lost"
assert mem_hits <= N and mem_hits >= N - lost, f"{mem_hits} hits of {mem_label}, {N} fired"
assert chain >= 0.9 * stack_total, f"only {chain} of {stack_total} stacks have main;fire"
assert fire_frames and fire_mod_ok == fire_frames, \
    f"'fire' frames not in {sdt_bin}: {fire_mod_ok} of {fire_frames}"

# ---- runs 2 and 3 ----
chain_label = "u:chain;fp:chain_touch"
rate = {}
for n, per_cgroup in ((2, False), (3, True)):
    rows, produced = load(n)
    lost = check_produced(n, rows, produced, {chain_label})
    cpu = {"b": 0, "c": 0, "host": 0}
    tc = {"b": 0, "c": 0}
    hits = stacks = chain = 0
    comms = set()
    comm_samples = {}
    for r in rows:
        b, c = cg_index(r, relb), cg_index(r, relc)
        root = cg_index(r, "/")
        for key, idx in (("b", b), ("c", c)):
            tc[key] += sum(x["value"] for x in r["counters"]
                           if x["cgroup"] in idx and x["event"] == "task-clock")
        assert not any(x["cgroup"] in root for x in r["counters"]), \
            f"run {n}: counters for '/', which is not selected"
        cpu_profs = [p for p in r["profiles"] if p["event"] == "cpu-clock"]
        if per_cgroup:
            assert not root, f"run {n}: a '/' cgroup with per_cgroup true"
            for p in cpu_profs:
                key = "b" if p["cgroup"] in b else "c" if p["cgroup"] in c else None
                assert key, f"run {n}: a CPU profile of cgroup {r['cgroups'][p['cgroup']]}"
                cpu[key] += p["samples"]
                # (sh: run_in's shell, in the cgroup until its exec)
                for line in p["folded"]:
                    assert frames(line)[0] in ("chain-fp" if key == "b" else "spin-c", "sh"), \
                        f"run {n}: {line} in the profile of cgroup {key}"
        else:
            assert len(cpu_profs) <= 1, f"run {n}: {len(cpu_profs)} CPU profiles in one batch"
            for p in cpu_profs:
                assert p["cgroup"] in root, \
                    f"run {n}: the CPU profile is for {r['cgroups'][p['cgroup']]['path']}, not '/'"
                assert r["cgroups"][p["cgroup"]]["id"] == root_ino, \
                    f"run {n}: '/' has id {r['cgroups'][p['cgroup']]['id']}, not {root_ino}"
                cpu["host"] += p["samples"]
                comms |= {frames(l)[0] for l in p["folded"]}
                for l in p["folded"]:
                    comm_samples[frames(l)[0]] = comm_samples.get(frames(l)[0], 0) + count(l)
        # probe stacks: per cgroup whatever per_cgroup says
        profs = [p for p in r["profiles"] if p["event"] == chain_label]
        assert all(p["cgroup"] in b for p in profs), f"run {n}: probe stacks outside {relb}"
        bh = sum(p["hits"] for p in r["probes"] if p["label"] == chain_label and p["cgroup"] in b)
        bs = sum(p["samples"] for p in profs)
        assert bs == bh, f"run {n} seq {r['seq']}: {bs} probe stacks for {bh} hits"
        hits += bh
        stacks += bs
        for p in profs:
            for line, fm in zip(p["folded"], p["frame_modules"]):
                f = frames(line)
                assert f[0] in ("chain-fp", "sh") and f[-1] == "chain_touch", f"run {n}: {line}"
                assert len(fm) == len(f) and fm[-1] and \
                    r["modules"][fm[-1] - 1]["path"] == chain_bin, \
                    f"run {n}: chain_touch not in {chain_bin}: {fm} {r['modules']}"
                # At the entry of chain_touch its caller's frame is not
                # linked yet: frame pointers skip chain_leaf.
                if re.search(r";main;chain_a;chain_b;chain_c;(chain_leaf;)?chain_touch$",
                             ";".join(f)):
                    chain += count(line)
    total = sum(cpu.values())
    tc_s = (tc["b"] + tc["c"]) / 1e9
    want = 99 * tc_s
    print(f"# run {n} (per_cgroup {str(per_cgroup).lower()}): {len(rows)} batches; CPU samples {cpu}, "
          f"task-clock b {tc['b'] / 1e6:.0f} ms c {tc['c'] / 1e6:.0f} ms (~{want:.0f} samples at 99 Hz); "
          f"{chain_label} hits {hits}, stacks {stacks}, full chain {chain}; probe records lost {lost}")
    assert tc["b"] > 0 and tc["c"] > 0, f"run {n}: counters missing for a cgroup: {tc}"
    assert hits > 20 and stacks == hits, f"run {n}: {stacks} stacks for {hits} hits"
    assert chain >= 0.9 * stacks, f"run {n}: only {chain} of {stacks} probe stacks have the chain"
    if not per_cgroup:
        assert cpu["b"] == cpu["c"] == 0
        # spin-c's own name, with at most a few samples of the launching
        # shell before its exec. (Once every sample kept "sh": exec moves
        # the task to another CPU, and the rings, read one CPU after the
        # other, gave the shell's COMM record last; the agent now keeps
        # the newest by time.)
        assert "chain-fp" in comms and "spin-c" in comms and \
            comm_samples.get("sh", 0) <= comm_samples["spin-c"], \
            f"run {n}: comms {comms} in the host profile (samples by comm {comm_samples})"
    else:
        assert cpu["host"] == 0 and cpu["b"] > 0 and cpu["c"] > 0, cpu
    # cpu-clock at 99 Hz: one sample per 1/99 s of the cgroups' CPU time; the
    # kernel's count strays when the tasks are preempted often (perf record
    # -F 99 -G itself: -17% with the workload at a third of a CPU; -21% and
    # +21% seen here with them at a seventh to a fifth): 40% either way.
    assert abs(total - want) <= 0.4 * want + 10, f"run {n}: {total} samples for ~{want:.0f}"
    rate[n] = (total, tc_s)
r2, r3 = (rate[n][0] / rate[n][1] for n in (2, 3))
print(f"# samples per CPU second: merged {r2:.1f}, per cgroup {r3:.1f}")
# (10 samples of slack for the few CPU seconds a busy host may leave; the
# two runs are preempted differently, -4% and -21% of 99 Hz seen: 35%)
assert abs(r2 - r3) <= 0.35 * r3 + 10 / min(rate[2][1], rate[3][1]), \
    "the merged profile does not hold what the per-cgroup ones do"
PY
	fail "batches do not add up"
exit 0
