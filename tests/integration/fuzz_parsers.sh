#!/bin/bash
# libFuzzer, briefly, over the parsers of bytes the agent does not control
# (tests/fuzz/): ELF symbols with symtab's .eh_frame_hdr (fuzz_symtab), USDT
# notes and argument specs (fuzz_usdt), the DWARF unwinder's load of
# .eh_frame_hdr and libunwind's lookup in it (fuzz_ehhdr), and the YAML
# configuration (fuzz_config), what container runtimes leave on disk:
# config.json annotations, podman's containers.json, unit files
# (fuzz_runtime). FUZZ_PARSERS_TIME seconds each (default 5),
# seeded with real files: the USDT workload, the C++ workload, a C chain
# with and without frame pointers, a stripped copy (.dynsym only); for the
# config, the shipped and the documented example files. Fails on any
# crash, sanitizer report or property a target checks. A longer run:
# make fuzz-parsers FUZZ_TIME=300.
source "$(dirname "$0")/../lib/common.sh"
T=${FUZZ_PARSERS_TIME:-5}
command -v "${FUZZ_CC:-clang}" >/dev/null ||
	skip "clang missing: libFuzzer targets need clang and libclang-rt-14-dev (packaging/install-deps.sh)"
case $BUILD_DIR in
"$ROOT"/*) O=${BUILD_DIR#"$ROOT"/} ;;
*) O=$BUILD_DIR ;;
esac
targets="fuzz_symtab fuzz_usdt fuzz_ehhdr fuzz_config fuzz_runtime"
make --no-print-directory -C "$ROOT" O="$O" $(printf "$O/fuzz/%s " $targets) \
	"$O/workloads/sdtprobe" "$O/workloads/cxx" "$O/workloads/chain-fp" "$O/workloads/chain-nofp" \
	>"$TMP/make.log" 2>&1 || fail "cannot build the fuzz targets: $(tail -20 "$TMP/make.log")"

# ELF seeds, each under 64 KiB (the run's -max_len).
elf=$TMP/seeds-elf
mkdir -p "$elf"
for b in sdtprobe cxx chain-fp chain-nofp; do
	cp "$BUILD_DIR/workloads/$b" "$elf/$b"
done
strip -o "$elf/sdtprobe-stripped" "$elf/sdtprobe" || fail "strip failed"
for f in "$elf"/*; do
	(($(stat -c %s "$f") <= 65536)) || fail "seed $f over 64 KiB"
done
# fuzz_ehhdr: 8 control bytes (where the IP falls) before the file.
eh=$TMP/seeds-ehhdr
mkdir -p "$eh"
for f in "$elf"/*; do
	for c in '\000\020\000\000\000\000\000\000' '\100\021\000\000\000\000\000\000'; do
		{ printf "$c"; cat "$f"; } >"$eh/$(basename "$f")-$(printf "$c" | od -An -tx1 -N2 | tr -d ' ')"
	done
done
cfg=$TMP/seeds-config
mkdir -p "$cfg"
cp "$ROOT/packaging/run-default.yaml" "$ROOT/tests/data/agent-example.yaml" "$cfg/"
rt=$TMP/seeds-runtime
mkdir -p "$rt"
cp "$ROOT"/tests/data/runtime/*.json "$ROOT"/tests/data/runtime/systemd/* "$rt/"

run() { # target corpus...
	local t=$1
	shift
	mkdir -p "$TMP/artifacts-$t" "$TMP/corpus-$t"
	"$BUILD_DIR/fuzz/$t" -max_total_time="$T" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$TMP/artifacts-$t/" "$TMP/corpus-$t" "$@" \
		>"$TMP/$t.log" 2>&1
	local rc=$?
	echo "# $t: $(grep -E '^stat::number_of_executed_units' "$TMP/$t.log" | awk '{print $2}') runs," \
		"$(grep -E '^stat::new_units_added' "$TMP/$t.log" | awk '{print $2}') new units," \
		"peak $(grep -E '^stat::peak_rss_mb' "$TMP/$t.log" | awk '{print $2}') MB"
	if ((rc != 0)) || ls "$TMP/artifacts-$t"/* >/dev/null 2>&1; then
		tail -40 "$TMP/$t.log" >&2
		mkdir -p "$BUILD_DIR/fuzz/found"
		cp "$TMP/artifacts-$t"/* "$BUILD_DIR/fuzz/found/" 2>/dev/null
		fail "$t found a problem (exit $rc); its input is in $BUILD_DIR/fuzz/found/"
	fi
}
run fuzz_symtab "$elf"
run fuzz_usdt "$elf"
run fuzz_ehhdr "$eh"
run fuzz_config "$cfg"
TMPDIR=$TMP run fuzz_runtime "$rt" # its fake host root goes under $TMP
exit 0
