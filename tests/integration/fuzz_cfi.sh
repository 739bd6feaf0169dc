#!/bin/bash
# libFuzzer over unwind_cfi_indirect(), the scan of a binary's .eh_frame for
# the words its CFI points at indirectly (C++ personality routines, LSDAs),
# which the DWARF unwinder runs on every binary it loads, containers'
# included (tests/fuzz/fuzz_cfi.c), for FUZZ_CFI_TIME seconds (default 10),
# seeded with the .eh_frame of real binaries: a C program, the C++ workload
# (zPLR CIEs), libstdc++. Fails on any crash, sanitizer report or property
# the target checks.
# holds: build
source "$(dirname "$0")/../lib/common.sh"
# Bulk CPU work at the lowest priority: the tests beside it (the suite runs
# several at once) keep their share; this one takes what is left.
renice -n 19 $$ >/dev/null
FUZZ_CFI_TIME=${FUZZ_CFI_TIME:-10}
command -v "${FUZZ_CC:-clang}" >/dev/null ||
	skip "clang missing: libFuzzer targets need clang and libclang-rt-14-dev (packaging/install-deps.sh)"
command -v objcopy >/dev/null || fail "objcopy missing (binutils)"
case $BUILD_DIR in
"$ROOT"/*) O=${BUILD_DIR#"$ROOT"/} ;;
*) O=$BUILD_DIR ;;
esac
make --no-print-directory -C "$ROOT" O="$O" "$O/fuzz/fuzz_cfi" >"$TMP/make.log" 2>&1 ||
	fail "cannot build fuzz_cfi: $(tail -20 "$TMP/make.log")"

corpus=$TMP/corpus
mkdir -p "$corpus" "$TMP/artifacts"
for b in /bin/true "$BUILD_DIR/workloads/cxx" /usr/lib/x86_64-linux-gnu/libstdc++.so.6; do
	[[ -f $b ]] || continue
	objcopy -O binary --only-section=.eh_frame "$b" "$TMP/eh" || fail "objcopy $b failed"
	# The target's first byte is a control byte (address alignment, bound).
	for c in '\000' '\003' '\360'; do
		{ printf "$c"; head -c 60000 "$TMP/eh"; } >"$corpus/$(basename "$b")-$(printf "$c" | od -An -tx1 | tr -d ' ')"
	done
done
nseeds=$(find "$corpus" -type f | wc -l)
((nseeds >= 6)) || fail "only $nseeds seeds"
info "$nseeds seeds"
"$BUILD_DIR/fuzz/fuzz_cfi" -max_total_time="$FUZZ_CFI_TIME" -max_len=65536 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$TMP/artifacts/" "$corpus" \
	>"$TMP/fuzz.log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' "$TMP/fuzz.log" | sed 's/^/# /'
if ((rc != 0)) || ls "$TMP/artifacts"/* >/dev/null 2>&1; then
	tail -40 "$TMP/fuzz.log" >&2
	fail "fuzz_cfi found a problem (exit $rc)"
fi
exit 0
