#!/bin/bash
# record: the known call chain main -> chain_a -> chain_b -> chain_c -> chain_leaf
# must be complete and in order in >= 90% of the workload's samples, by frame
# pointers (FP build) and by DWARF CFI (build without frame pointers).
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
# The workload runs its seconds by the clock, under a shell that writes its
# CPU time (`times`, children's line) to $TMP/MODE.cpu.
# check MODE BIN FOLDED: the chain in >= 90% of BIN's samples, of which there
# are 60, or half what its CPU time is worth at 199 Hz when a busy host
# gave it less (at least 20, to judge a share by).
check() {
	local mode=$1 bin=$2 file=$3 cpu
	cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } }
		END { print t + 0 }' "$TMP/$mode.cpu" 2>/dev/null)
	python3 - "$file" "$(basename "$bin")" "$mode" "${cpu:-0}" <<'PY'
import sys
path, comm, mode, cpu = sys.argv[1:5]
want = ["main", "chain_a", "chain_b", "chain_c", "chain_leaf"]
total = good = 0
for line in open(path):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[0] != comm:
        continue
    n = int(count)
    total += n
    # the chain, contiguous and in this order, leaf last among user frames
    user = [f for f in frames[1:] if not f.endswith("_[k]")]
    for i in range(len(user) - len(want) + 1):
        if user[i:i + len(want)] == want:
            good += n
            break
share = good / total if total else 0
floor = max(20, min(60, float(cpu) * 199 / 2))
print(f"# {mode}: {good}/{total} samples of {comm} carry main;chain_a;chain_b;chain_c;chain_leaf ({share:.1%}); "
      f"its CPU time {float(cpu):.2f} s")
assert total >= floor, f"only {total} samples of {comm} ({float(cpu):.2f} s of CPU)"
assert share >= 0.90, f"{mode}: only {share:.1%} of samples have the full chain"
PY
}
"$AGENT" record -g -F 199 -o "$TMP/fp.folded" -v -- sh -c '"$1" 2; times >"$2"' sh "$W/chain-fp" "$TMP/fp.cpu" \
	2>"$TMP/fp.err" || fail "record -g failed: $(cat "$TMP/fp.err")"
cat "$TMP/fp.err"
check fp "$W/chain-fp" "$TMP/fp.folded" || fail "fp chain check failed"
"$AGENT" record --call-graph dwarf -F 199 -o "$TMP/dw.folded" -v -- sh -c '"$1" 2; times >"$2"' sh "$W/chain-nofp" "$TMP/dwarf.cpu" \
	2>"$TMP/dw.err" || fail "record dwarf failed: $(cat "$TMP/dw.err")"
cat "$TMP/dw.err"
check dwarf "$W/chain-nofp" "$TMP/dw.folded" || fail "dwarf chain check failed"
# Frame pointers cannot walk the build without them: the chain breaks there.
"$AGENT" record -g -F 199 -o "$TMP/fpbad.folded" -- "$W/chain-nofp" 1 2>/dev/null
if check fp-on-nofp "$W/chain-nofp" "$TMP/fpbad.folded" >/dev/null 2>&1; then
	info "note: frame pointers happened to walk the no-FP build"
fi
# Lost samples are reported, never silent: the summary line always has them.
grep -qE '[0-9]+ lost' "$TMP/dw.err" || fail "summary does not report lost samples"
# Folded format: "frames count", count an integer, no empty frames.
awk '{ if ($NF !~ /^[0-9]+$/ || $0 ~ /;;/) { print "bad line: " $0; bad = 1 } } END { exit bad }' \
	"$TMP/fp.folded" "$TMP/dw.folded" || fail "malformed folded output"
exit 0
