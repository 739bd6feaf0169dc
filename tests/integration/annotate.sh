#!/bin/bash
# annotate: `cgperf-agent annotate` of a known loop (tests/workloads/hotloop:
# hotloop_sum() spends its time in one tight loop).
#   (1) -- COMMAND: the instruction percentages add up to 100 (+-0.1), the
#       loop (from its backward branch's target to the branch) carries more
#       than 80% of them, DWARF source lines are interleaved with their text,
#       and the sorted summary names the loop's lines;
#   (2) -p PID of a running process, the same checks;
#   (3) a stripped copy: the MODULE+0xOFF that record's folded stacks give
#       the loop's function is annotated, the same checks;
#   (4) a misspelled name: exit 2 with the right name suggested; a function
#       with no samples (hotloop_idle): exit 0 and a message, no listing;
#   (5) a C++ function by the demangled name record shows: listed, with
#       demangled branch targets;
#   (6) -G: a "container" (own mount namespace, chroot) whose binary exists
#       only in its root, and whose root holds its own copy of the source at
#       the path DWARF names, marked: the listing comes out, and its source
#       text is the container's copy (read through /proc/PID/root), not the
#       host's file.
source "$(dirname "$0")/../lib/common.sh" || exit 1
export LC_ALL=C

WL=$BUILD_DIR/workloads/hotloop
[[ -x $WL ]] || fail "$WL not built (make build-tests)"
[[ $AGENT == /* ]] || AGENT=$PWD/$AGENT
# DWARF names the source relative to its compile directory, the tree's root:
# run from elsewhere so that a relative name cannot resolve by accident
cd "$TMP" || fail "cannot enter $TMP"

# check_listing FILE WHAT [noloop]: the percentages of FILE's instruction
# lines add up to 100 and (unless noloop) the loop holds more than 80 of them.
check_listing() {
	local f=$1 what=$2 noloop=${3:-} res
	res=$(awk -F'\t' '
		function hex(s,   i, v) {
			v = 0; s = tolower(s); sub(/^0x/, "", s)
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		/^ *[0-9]+\.[0-9][0-9] :\t *[0-9a-f]+:\t/ {
			n++; pct[n] = $1 + 0; a = $2; gsub(/[ :]/, "", a); addr[n] = hex(a)
			ins[n] = $3; sum += pct[n]
			if (ins[n] ~ /^j/ && match(ins[n], / 0x[0-9a-f]+/)) {
				t = hex(substr(ins[n], RSTART + 1, RLENGTH - 1))
				if (t < addr[n] && !lo) { lo = t; hi = addr[n] }
			}
		}
		END {
			for (i = 1; i <= n; i++) if (addr[i] >= lo && addr[i] <= hi) loop += pct[i]
			printf "%d %.2f %.2f %x %x\n", n, sum, loop, lo, hi
		}' "$f")
	read -r n sum loop lo hi <<<"$res"
	info "$what: $n instructions, percentages sum $sum, loop $lo..$hi holds $loop%"
	((n >= 5)) || { cat "$f" >&2; fail "$what: only $n instruction lines"; }
	awk -v s="$sum" 'BEGIN { exit !(s >= 99.9 && s <= 100.1) }' ||
		fail "$what: percentages sum to $sum, not 100"
	[[ -z $noloop ]] || return 0
	[[ $lo != 0 ]] || { cat "$f" >&2; fail "$what: no backward branch found"; }
	awk -v l="$loop" 'BEGIN { exit !(l > 80) }' || { cat "$f" >&2; fail "$what: the loop holds $loop%, not > 80%"; }
}

# (1) -- COMMAND
"$AGENT" annotate -F 999 hotloop_sum -- "$WL" 2 >"$TMP/cmd.out" 2>"$TMP/cmd.err" ||
	{ cat "$TMP/cmd.err" >&2; fail "annotate -- hotloop exited with $?"; }
sed 's/^/    /' "$TMP/cmd.err"
grep -q '^ Percent |.*hotloop for cpu-clock' "$TMP/cmd.out" || fail "no header"
grep -q '<hotloop_sum>:' "$TMP/cmd.out" || fail "no symbol line"
check_listing "$TMP/cmd.out" "-- COMMAND"
grep -qP '^ +:\thotloop\.c:\d+\tacc \^= acc >> 7;' "$TMP/cmd.out" ||
	{ cat "$TMP/cmd.out" >&2; fail "the loop's source line is not interleaved"; }
sed -n '/Sorted summary/,$p' "$TMP/cmd.out" | grep -q 'hotloop.c:2[12] ' ||
	fail "the summary does not name the loop's lines"
grep -q 'samples (.*%) in hotloop_sum' "$TMP/cmd.err" || fail "no share line on stderr"
sed -n '/Sorted summary/,$p' "$TMP/cmd.out" | head -n 4 | sed 's/^/    /'

# (2) -p PID
"$WL" 30 &
wl=$!
bg_track $wl
# -p finds the binary through /proc/PID/exe: wait for the exec
for ((i = 0; i < $(scaled 10) * 10; i++)); do
	[[ $(cat /proc/$wl/comm 2>/dev/null) == hotloop ]] && break
	sleep 0.1
done
[[ $(cat /proc/$wl/comm 2>/dev/null) == hotloop ]] || fail "pid $wl is '$(cat /proc/$wl/comm 2>/dev/null)', not hotloop, after $(scaled 10)s"
"$AGENT" annotate -p $wl -F 999 hotloop_sum --duration 1 >"$TMP/pid.out" 2>"$TMP/pid.err" ||
	{ cat "$TMP/pid.err" >&2; fail "annotate -p exited with $?"; }
check_listing "$TMP/pid.out" "-p PID"
kill $wl

# (3) a stripped binary, by MODULE+0xOFF as record names its frame
cp "$WL" "$TMP/hl-stripped"
strip -s "$TMP/hl-stripped" || fail "strip failed"
"$AGENT" record -F 499 -- "$TMP/hl-stripped" 1 >"$TMP/rec.folded" 2>"$TMP/rec.err" ||
	{ cat "$TMP/rec.err" >&2; fail "record of the stripped copy failed"; }
frame=$(sort -k2 -n "$TMP/rec.folded" | tail -n1 | awk '{ n = split($1, f, ";"); print f[n] }')
[[ $frame =~ ^hl-stripped\+0x[0-9a-f]+$ ]] || { cat "$TMP/rec.folded" >&2; fail "hottest frame is '$frame'"; }
"$AGENT" annotate -F 999 "$frame" -- "$TMP/hl-stripped" 1 >"$TMP/mod.out" 2>"$TMP/mod.err" ||
	{ cat "$TMP/mod.err" >&2; fail "annotate $frame exited with $?"; }
grep -q "<$frame>:" "$TMP/mod.out" || fail "no <$frame> line"
check_listing "$TMP/mod.out" "$frame"

# (4) errors
"$AGENT" annotate -F 999 hotloop_summ -- "$WL" 0.5 >"$TMP/miss.out" 2>"$TMP/miss.err"
rc=$?
((rc == 2)) || { cat "$TMP/miss.err" >&2; fail "a missing function exits $rc, not 2"; }
grep -q "no function 'hotloop_summ'" "$TMP/miss.err" && grep -qx '    hotloop_sum' "$TMP/miss.err" ||
	{ cat "$TMP/miss.err" >&2; fail "no 'did you mean hotloop_sum'"; }
[[ -s $TMP/miss.out ]] && fail "a missing function printed a listing"
"$AGENT" annotate -F 999 hotloop_idle -- "$WL" 0.5 >"$TMP/idle.out" 2>"$TMP/idle.err"
rc=$?
((rc == 0)) || { cat "$TMP/idle.err" >&2; fail "a function without samples exits $rc, not 0"; }
grep -q 'no samples in hotloop_idle' "$TMP/idle.err" || { cat "$TMP/idle.err" >&2; fail "no 'no samples' message"; }
[[ -s $TMP/idle.out ]] && fail "a function without samples printed a listing"
# (5) C++, by the name record shows
"$AGENT" annotate -F 999 'leaf_work(int)' -- "$BUILD_DIR/workloads/cxx" 1 >"$TMP/cxx.out" 2>"$TMP/cxx.err" ||
	{ cat "$TMP/cxx.err" >&2; fail "annotate 'leaf_work(int)' exited with $?"; }
grep -q '<leaf_work(int)>:' "$TMP/cxx.out" || { cat "$TMP/cxx.out" >&2; fail "no <leaf_work(int)> listing"; }
grep -q '<leaf_work(int)+0x[0-9a-f]*>$' "$TMP/cxx.out" || fail "branch targets not demangled"
check_listing "$TMP/cxx.out" "C++ leaf_work(int)" noloop

# (6) a container's binary and source, through /proc/PID/root
command -v unshare >/dev/null && command -v readelf >/dev/null || skip "unshare or readelf missing (1-4 passed)"
root=$TMP/root
mkdir -p "$root/opt/app"
cp "$WL" "$root/opt/app/hotloop-$$"
for lib in $(ldd "$WL" | grep -oE '/[^ ]+'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
src=$(readelf --debug-dump=info "$WL" | awk -F': ' '
	/DW_AT_name/ && !name { name = $NF } /DW_AT_comp_dir/ && !dir { dir = $NF }
	END { print (name ~ /^\// ? name : dir "/" name) }')
[[ -f $src ]] || fail "DWARF names $src, which is not there"
mkdir -p "$root$(dirname "$src")"
sed 's|acc ^= acc >> 7;|acc ^= acc >> 7; /* in-root copy */|' "$src" >"$root$src"
cg_new ctr
sh -c "echo \$\$ > '$cg/cgroup.procs'; exec unshare -m --propagation private chroot '$root' /opt/app/hotloop-$$ 30" &
ctr=$!
bg_track $ctr
# sh -> unshare -> chroot -> hotloop, one PID: wait for the last exec
# (the comm is the name cut to 15 characters)
cname=hotloop-$$
cname=${cname:0:15}
for ((i = 0; i < $(scaled 10) * 10; i++)); do
	[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] && break
	sleep 0.1
done
[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] || fail "pid $ctr is '$(cat /proc/$ctr/comm 2>/dev/null)', not $cname, after $(scaled 10)s"
[[ $(readlink /proc/$ctr/root) == "$root" ]] || fail "workload not chrooted"
"$AGENT" annotate -G "$rel" -F 999 hotloop_sum --duration 1.5 >"$TMP/ctr.out" 2>"$TMP/ctr.err" ||
	{ cat "$TMP/ctr.err" >&2; fail "annotate -G (container) exited with $?"; }
kill $ctr
grep -q "Disassembly of .*/opt/app/hotloop-$$ for" "$TMP/ctr.out" || { cat "$TMP/ctr.out" >&2; fail "not the container's binary"; }
check_listing "$TMP/ctr.out" "-G container"
grep -q 'acc >> 7; /\* in-root copy \*/' "$TMP/ctr.out" ||
	{ cat "$TMP/ctr.out" >&2; fail "the source text is not the container's copy"; }
echo "PASS"
