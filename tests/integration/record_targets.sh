#!/bin/bash
# record: -p PID, --target SELECTOR, and short-lived processes (each exits
# long before the stacks are folded) all come out named.
source "$(dirname "$0")/../lib/common.sh"
W=$BUILD_DIR/workloads
share() { # FILE COMM PATTERN -> "named total"
	awk -v c="$2" -v p="$3" -F' ' '{ n = $NF; split($0, f, ";"); if (f[1] != c) next; t += n; if (index($0, p)) g += n }
		END { print g + 0, t + 0 }' "$1"
}

"$W/chain-fp" 10 & a=$!; bg_track $a
"$W/chain-nofp" 10 & b=$!; bg_track $b
sleep 0.2

# -p: only that process.
"$AGENT" record -g -p $a --duration 2 -o "$TMP/p.folded" 2>"$TMP/err" || fail "record -p: $(cat "$TMP/err")"
others=$(awk -F';' '$1 != "chain-fp"' "$TMP/p.folded" | wc -l)
((others == 0)) || fail "record -p $a has other processes: $(awk -F';' '$1 != "chain-fp"' "$TMP/p.folded" | head -3)"
read -r g t < <(share "$TMP/p.folded" chain-fp "main;chain_a;chain_b;chain_c;chain_leaf")
info "-p: $g of $t samples with the full chain"
((t >= 10 && g * 100 >= t * 90)) || fail "-p: $g of $t"

# --target: by comm, across the host; the other workload is left out.
"$AGENT" record -g --target comm=chain-nofp --call-graph dwarf --duration 2 -o "$TMP/t.folded" 2>"$TMP/err" ||
	fail "record --target: $(cat "$TMP/err")"
others=$(awk -F';' '$1 != "chain-nofp"' "$TMP/t.folded" | wc -l)
((others == 0)) || fail "--target kept other processes: $(awk -F';' '$1 != "chain-nofp"' "$TMP/t.folded" | head -3)"
read -r g t < <(share "$TMP/t.folded" chain-nofp "main;chain_a;chain_b;chain_c;chain_leaf")
info "--target: $g of $t samples with the full chain"
((t >= 10 && g * 100 >= t * 90)) || fail "--target: $g of $t"
"$AGENT" record --target 'bogus=1' --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "unknown selector key" "$TMP/err" || fail "bad selector: rc=$rc $(cat "$TMP/err")"

# Short-lived processes: 25 runs of 100 ms each, every one gone before folding.
# A sample counts wherever the process was in its life (exec, ld.so, the
# chain, exit): it is good when every frame is named by a symbol, by its
# module (NAME+0xOFFSET, documented for code without symbols, as ld.so's
# entry) or is a documented marker. Truly unnamed frames have their own
# bound: execve's first samples carry the old image's user registers
# ([unmapped]), and a frame-pointer walk through libc and ld.so, built
# without them, meets a bad return address. Both are start-up costs, a fixed
# CPU time per run: about 3% of the samples on a fresh idle machine, 17% of
# runs of 30 ms with a CPU hog per core (the loop's share shrinks with the
# CPU it gets); runs of 100 ms keep them under 15% there. Processes gone
# before their stacks were named would be all unnamed.
"$AGENT" record -g -F 499 -o "$TMP/s.folded" -- sh -c "for i in \$(seq 25); do '$W/chain-fp' 0.1; done" 2>"$TMP/err" ||
	fail "record short-lived: $(cat "$TMP/err")"
read -r t u c < <(awk -F';' '$1 == "chain-fp" { n = $NF; sub(/.* /, "", n); t += n; bad = 0
		for (i = 2; i <= NF; i++) if ($i ~ /^(\[unmapped\]|\[bad return address\]|\[unknown-comm\]|\/\/anon)/) bad = 1
		if (bad) u += n; if (index($0, ";main;chain_a;chain_b;chain_c;chain_leaf")) c += n }
	END { print t + 0, u + 0, c + 0 }' "$TMP/s.folded")
info "short-lived: $t samples, $((t - u)) with every frame named, $u with an unnamed frame, $c in the full chain"
((t >= 60)) || fail "short-lived: only $t samples of chain-fp"
((u * 100 <= t * 15)) || fail "short-lived processes not symbolized: $u of $t samples with an unnamed frame: $(grep '^chain-fp' "$TMP/s.folded" | grep -E '\[unmapped\]|\[bad return|//anon' | head -3)"
# The program's own code: most of each run is in its loop.
((c * 100 >= t * 50)) || fail "short-lived: the full chain in only $c of $t samples"

# Bad input: unknown event with suggestions, missing cgroup, missing pid.
"$AGENT" record -e cpu-clok --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q 'cpu-clock' "$TMP/err" || fail "unknown event: rc=$rc $(cat "$TMP/err")"
"$AGENT" record -G /no/such-$$ --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "/no/such-$$" "$TMP/err" || fail "missing cgroup: rc=$rc $(cat "$TMP/err")"
"$AGENT" record -p 999999999 --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "missing pid: rc=$rc $(cat "$TMP/err")"
"$AGENT" record --call-graph lbr --duration 1 >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "bad --call-graph accepted"
exit 0
