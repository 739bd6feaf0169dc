#!/bin/bash
# record: stacks that cannot be completed end in a marker frame that says
# why, right after the comm frame, and are counted in the summary:
#   DWARF recursion deeper than the 8 KiB stack copy   [truncated: stack copy]
#   FP recursion deeper than kernel.perf_event_max_stack  [truncated: max stack]
#   FP walk through code without frame pointers         [bad return address]
# No frame is an address outside the process's executable mappings
# ("[unmapped]+0x..." is what the agent writes for those).
# holds: exclusive
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
SYSCTL=/proc/sys/kernel/perf_event_max_stack
OLD_MAX=$(cat $SYSCTL)
restore() {
	[[ $(cat $SYSCTL) == "$OLD_MAX" ]] || echo "$OLD_MAX" >$SYSCTL 2>/dev/null
	_cleanup
}
trap restore EXIT

# What a frame may be: a symbol of the workload, libc or ld.so (from the
# file or from its separate debuginfo, found by build-id, as the agent finds
# it), a function their DWARF has inlined there (read only when a name is
# not a symbol: a sample in ld.so while the process starts, which a slow
# machine makes likelier, is named so), a PLT stub ("NAME@plt"),
# "FILE+0xOFF" of a mapped file, a kernel frame, or a marker.
: >"$TMP/debuginfo"
for f in "$W/deepstack-fp" "$W/deepstack-nofp" \
	$(ldd "$W/deepstack-fp" | awk '/=>/ { print $3 } /ld-linux/ { print $1 }'); do
	files=("$f")
	bid=$(readelf -n "$f" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[[ -n $bid && -r /usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug ]] &&
		files+=("/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug")
	printf '%s\n' "${files[@]}" >>"$TMP/debuginfo"
	for g in "${files[@]}"; do
		nm -D --defined-only "$g" 2>/dev/null | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }'
		nm -a --defined-only "$g" 2>/dev/null | awk 'NF == 3 { print $3 }'
	done
	objdump -d -j .plt -j .plt.sec -j .plt.got "$f" 2>/dev/null | sed -n 's/^[0-9a-f]* <\(.*@plt\)>:$/\1/p'
done >"$TMP/syms"

# check FILE COMM MARKER SUMMARY-FILE: the marker in >= 90% of COMM's samples,
# the summary's count equal to the folded one, every frame a real one.
check() {
	python3 - "$@" "$TMP/syms" "$TMP/debuginfo" <<'PY'
import re, subprocess, sys
path, comm, marker, errpath, symspath, dbgpath = sys.argv[1:7]
syms = set(l.strip() for l in open(symspath))
MARKERS = ("[truncated: stack copy]", "[truncated: max stack]", "[bad return address]")
total = marked = 0
allmarked = 0
bad = []
for line in open(path):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    n = int(count)
    if any(f.startswith("[truncated") or f == "[bad return address]" for f in frames):
        allmarked += n
        # the marker is the root: right after the comm frame, and only there
        assert frames[1].startswith("[") and not any(
            f.startswith("[truncated") or f == "[bad return address]" for f in frames[2:]), line
    if frames[0] != comm:
        continue
    total += n
    if frames[1] == marker:
        marked += n
    # A sample taken inside execve, after the new image replaced the old
    # one, carries the old image's user registers: that address is in no
    # mapping of the new process (perf shows it as [unknown]).
    in_exec = any("sys_execve" in f for f in frames)
    for f in frames[1:]:
        if f.endswith("_[k]") or f in MARKERS:
            continue  # another marker is a short stack, not a false frame
        if f.startswith("[unmapped]") and in_exec:
            continue
        if f.startswith("[unmapped]"):
            bad.append(f)
        elif re.fullmatch(r"[^+]+\+0x[0-9a-f]+", f):
            continue  # a mapped file without a symbol there
        elif f not in syms:
            bad.append(f)
if [f for f in bad if not f.startswith("[unmapped]")]:
    # names of DWARF subprograms (inlined ones too) of the files and their debuginfo
    for dbg in open(dbgpath).read().split():
        p = subprocess.Popen(["readelf", "-wi", dbg], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        sub = False
        for l in p.stdout:
            if "DW_TAG_" in l:
                sub = "DW_TAG_subprogram" in l
            elif sub and "DW_AT_name" in l:
                syms.add(l.split()[-1])
        p.wait()
    bad = [f for f in bad if f not in syms]
share = marked / total if total else 0
print(f"# {comm}: {marked}/{total} samples end in {marker} ({share:.1%}); frames outside mappings: {len(bad)} {sorted(set(bad))[:5]}")
assert total >= 50, f"only {total} samples of {comm}"
assert share >= 0.90, f"only {share:.1%} of {comm}'s samples carry {marker}"
assert not bad, f"frames that are not code: {sorted(set(bad))[:10]}"
# the summary counts every marked stack of the run, by reason
want = {"[truncated: stack copy]": 0, "[truncated: max stack]": 0, "[bad return address]": 0}
for line in open(path):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    for f in stack.split(";")[1:2]:
        if f in want:
            want[f] += int(count)
m = None
for l in open(errpath):
    m = re.search(r"stacks cut short: (\d+) \[truncated: stack copy\], (\d+) \[truncated: max stack\], (\d+) \[bad return address\]", l) or m
assert m, "no 'stacks cut short' line in the summary"
got = [int(x) for x in m.groups()]
assert got == list(want.values()), f"summary {got} != folded {list(want.values())}"
# and per cgroup: lines "  CGROUP REASON COUNT" that add up
per = {}
for l in open(errpath):
    mm = re.match(r".*:   (\S+) (stack_copy|max_stack|bad_return_address) (\d+)$", l.rstrip("\n"))
    if mm:
        per[mm.group(2)] = per.get(mm.group(2), 0) + int(mm.group(3))
assert [per.get(k, 0) for k in ("stack_copy", "max_stack", "bad_return_address")] == got, f"per-cgroup {per} != {got}"
PY
}

# 1. DWARF, 100 levels of 256+ bytes: far more than the 8 KiB copied.
"$AGENT" record --call-graph dwarf -F 199 -o "$TMP/dw.folded" -- "$W/deepstack-fp" rec 100 2 2>"$TMP/dw.err" ||
	fail "record dwarf failed: $(cat "$TMP/dw.err")"
cat "$TMP/dw.err"
check "$TMP/dw.folded" deepstack-fp "[truncated: stack copy]" "$TMP/dw.err" || fail "dwarf: stack copy truncation"
# A bigger copy goes deeper: more frames per stack.
"$AGENT" record --call-graph dwarf,65528 -F 199 -o "$TMP/dw64.folded" -- "$W/deepstack-fp" rec 100 1 2>/dev/null ||
	fail "record dwarf,65528 failed"
d8=$(awk '/^deepstack-fp;/ { n = split($0, a, ";"); if (n > m) m = n } END { print m + 0 }' "$TMP/dw.folded")
d64=$(awk '/^deepstack-fp;/ { n = split($0, a, ";"); if (n > m) m = n } END { print m + 0 }' "$TMP/dw64.folded")
info "deepest DWARF stack: $d8 frames with 8 KiB copied, $d64 with 64 KiB"
((d64 > d8)) || fail "a 64 KiB copy did not unwind deeper ($d64 <= $d8 frames)"

# 2. Frame pointers, 300 levels: more than the kernel's cap. Lower the cap
# to 64 when the kernel lets us (EBUSY while other callchain events exist).
MAX=$OLD_MAX
if echo 64 >$SYSCTL 2>/dev/null; then
	MAX=64
else
	info "kernel.perf_event_max_stack busy (other profilers): kept at $OLD_MAX"
fi
"$AGENT" record -g -F 199 -o "$TMP/fp.folded" -- "$W/deepstack-fp" rec 300 2 2>"$TMP/fp.err" ||
	fail "record -g failed: $(cat "$TMP/fp.err")"
echo "$OLD_MAX" >$SYSCTL 2>/dev/null
cat "$TMP/fp.err"
check "$TMP/fp.folded" deepstack-fp "[truncated: max stack]" "$TMP/fp.err" || fail "fp: max stack truncation"
# (over the stacks the cap cut: one caught on its way down may reach main,
# whose inlined calls the naming adds as frames of their own)
deepest=$(awk '/^deepstack-fp;\[truncated: max stack\];/ { n = split($0, a, ";"); k = 0; for (i = 1; i <= n; i++) if (a[i] !~ /_\[k\]$/) k++; if (k > m) m = k } END { print m + 0 }' "$TMP/fp.folded")
info "deepest FP stack: $deepest user frames (+ comm and marker), cap $MAX"
((deepest <= MAX + 2)) || {
	awk '/^deepstack-fp;/ { n = split($0, a, ";"); k = 0; for (i = 1; i <= n; i++) if (a[i] !~ /_\[k\]$/) k++; if (k > 66) print }' "$TMP/fp.folded" | head -3
	fail "more user frames ($deepest) than the kernel's cap $MAX allows"
}

# 3. Frame pointers over code built without them, RBP pointing at text.
"$AGENT" record -g -F 199 -o "$TMP/junk.folded" -- "$W/deepstack-nofp" junk 0 2 2>"$TMP/junk.err" ||
	fail "record -g (junk) failed: $(cat "$TMP/junk.err")"
cat "$TMP/junk.err"
check "$TMP/junk.folded" deepstack-nofp "[bad return address]" "$TMP/junk.err" || fail "fp: bad return address"
# ... and the ordinary no-FP build: whatever the walk finds is code, or cut.
"$AGENT" record -g -F 199 -o "$TMP/nofp.folded" -- "$W/chain-nofp" 1 2>/dev/null || fail "record -g chain-nofp failed"
# (but for a sample inside execve: the old image's registers, see check)
if grep -v 'sys_execve' "$TMP/nofp.folded" | grep -q '\[unmapped\]'; then
	fail "frames outside the mappings: $(grep -v 'sys_execve' "$TMP/nofp.folded" | grep -o '\[unmapped\][^;]*' | sort -u | head -3)"
fi

# 4. run: counted per cgroup on its own /metrics, on the wire, and on the
# exporter's /metrics.
source "$(dirname "$0")/../lib/exporter.sh"
cg_new trunc
exporter_up
mport=$(free_port)
agent_yaml trunc-host "$rel" "sampling: {frequency: 199, call_graph: dwarf, event: cpu-clock}" \
	"push: {interval: 1s, collectors: [\"$ex/api/v1/push\"], timeout: 2s, spool: {dir: $TMP/spool}}" \
	"metrics: {listen: \"127.0.0.1:$mport\"}"
# No --duration: the agent runs until its /metrics has every stack of the
# workload, then SIGTERM (its last batch holds no more of them).
agent_run "$TMP/agent.log" --config "$TMP/agent.yaml"
agent_started "$TMP/agent.log"
cg_spawn "$cg" "$W/deepstack-fp" rec 100 2
wl=$SPAWNED
wait $wl || fail "deepstack failed"
# /metrics is published after each batch: two batches after the workload's
# end, its last samples are in (one may have been under way at its end)
batches() { curl -sf "http://127.0.0.1:$mport/metrics" | awk '$1 ~ /^cgperf_agent_batches_total/ { print $NF; exit }'; }
b0=$(batches)
[[ -n $b0 ]] || fail "no cgperf_agent_batches_total on the agent's /metrics: $(tail -3 "$TMP/agent.log")"
for ((i = 0; i < $(scaled 10) * 10; i++)); do
	(($(batches) >= b0 + 2)) && break
	sleep 0.1
done
(($(batches) >= b0 + 2)) || fail "the agent made $(($(batches) - b0)) batches in $(scaled 10)s, not 2"
curl -sf "http://127.0.0.1:$mport/metrics" >"$TMP/agent.metrics" || fail "no agent /metrics: $(tail -3 "$TMP/agent.log")"
kill -TERM $ag
wait $ag || fail "agent run failed: $(tail -5 "$TMP/agent.log")"
curl -sf "$ex/metrics" >"$TMP/exporter.metrics" || fail "no exporter /metrics"
a=$(awk -v r="id=\"$rel\"" 'index($0, "cgperf_cgroup_stacks_truncated_total{") == 1 && index($0, r) && /reason="stack_copy"/ { print $NF }' "$TMP/agent.metrics")
e=$(awk -v r="id=\"$rel\"" 'index($0, "cgperf_cgroup_stacks_truncated_total{") == 1 && index($0, r) && /reason="stack_copy"/ { print $NF }' "$TMP/exporter.metrics")
info "run: stack_copy truncations of $rel: agent /metrics ${a:-none}, exporter /metrics ${e:-none}"
# every stack of the 2 s at 99 Hz is cut (about 200); a loaded host gives the
# workload less CPU, so at least 30 of them, and the exporter agrees exactly
((${a:-0} >= 30)) || fail "agent /metrics: $(grep stacks_truncated "$TMP/agent.metrics" | head -5)"
[[ ${e:-0} == "$a" ]] || fail "exporter /metrics says ${e:-none}, the agent $a: $(grep stacks_truncated "$TMP/exporter.metrics" | head -5)"
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/exporter.metrics" >/dev/null 2>&1 || fail "promtool rejects the exporter's /metrics"
fi
exit 0
