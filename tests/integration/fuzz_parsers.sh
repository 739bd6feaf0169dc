#!/bin/bash
# libFuzzer, briefly, over the parsers of bytes the agent does not control
# (tests/fuzz/): ELF symbols with symtab's .eh_frame_hdr (fuzz_symtab), USDT
# notes and argument specs (fuzz_usdt), the DWARF unwinder's load of
# .eh_frame_hdr and libunwind's lookup in it (fuzz_ehhdr), the YAML
# configuration (fuzz_config), JIT perf maps, /tmp/perf-PID.map
# (fuzz_perfmap), and what container runtimes leave on disk: config.json
# annotations, podman's containers.json, unit files (fuzz_runtime).
# FUZZ_PARSERS_TIME seconds each (default 5; two targets at a time), seeded with
# real files: the USDT workload, the C++ workload, a C chain with and
# without frame pointers, a stripped copy (.dynsym only); for the config,
# the shipped and the documented example files and the k: probe forms; for the perf map, the
# lines V8 and the JVM write and some that perfmap.c must skip; for the
# runtimes, tests/data/runtime/. Fails on any
# crash, sanitizer report or property a target checks. A longer run:
# make fuzz-parsers FUZZ_TIME=300.
# holds: build
source "$(dirname "$0")/../lib/common.sh"
# Bulk CPU work at the lowest priority: the tests beside it (the suite runs
# several at once) keep their share; this one takes what is left.
renice -n 19 $$ >/dev/null
T=${FUZZ_PARSERS_TIME:-5}
command -v "${FUZZ_CC:-clang}" >/dev/null ||
	skip "clang missing: libFuzzer targets need clang and libclang-rt-14-dev (packaging/install-deps.sh)"
case $BUILD_DIR in
"$ROOT"/*) O=${BUILD_DIR#"$ROOT"/} ;;
*) O=$BUILD_DIR ;;
esac
targets="fuzz_symtab fuzz_usdt fuzz_ehhdr fuzz_config fuzz_perfmap fuzz_runtime"
make -j2 --no-print-directory -C "$ROOT" O="$O" $(printf "$O/fuzz/%s " $targets) \
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
# kernel probes: every form of the k: grammar (probe_spec.c)
cat >"$cfg/kprobes.yaml" <<'EOF'
probes:
  - spec: "k:tcp_sendmsg size"
    hist: size
  - "k:vfs_read+0x10 %di n=+8(%si):u32 f=-0x10(%rdi):s64 arg2:x32"
  - spec: "k:do_sys_openat2 dfd=%di:s32 +0(filename)"
    latency_end: "k:do_sys_openat2%return $retval:s64 ret=%ax"
  - "k:foo.isra.0 arg5 %r15:u8"
EOF
pm=$TMP/seeds-perfmap
mkdir -p "$pm"
printf '%s\n' "7f3a1c001000 1c0 LazyCompile:*handler /srv/app/index.js:12:30" \
	"7f3a1c0011c0 40 Builtin:ArgumentsAdaptorTrampoline" \
	"7f3a1c002000 a0 Interpreter:foo" >"$pm/v8.map"
printf '%s\n' "00007f5b2d1e4a20 000000000000009c Ljava/lang/String;::hashCode" \
	"7f5b2d1e4b00 80 Interpreter" >"$pm/jvm.map"
# skipped or odd lines: no size, size 0, a range past 2^64, no name, CR, garbage
printf '1000 10 a\r\n2000 0 zero\nffffffffffffff00 200 wraps\n3000 10 \nzz 10 bad\n4000 8' >"$pm/odd.map"
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
# pair T1 C1 T2 C2: two targets side by side. The suite runs one test at a
# time on this 2-core machine, so each still has a core for its T seconds;
# a finding fails in run() (the one in the background: its exit status).
pair() {
	run "$1" "$2" &
	local bg=$!
	run "$3" "$4"
	wait $bg || fail "$1 failed (see above)"
}
pair fuzz_symtab "$elf" fuzz_usdt "$elf"
pair fuzz_ehhdr "$eh" fuzz_config "$cfg"
TMPDIR=$TMP pair fuzz_perfmap "$pm" fuzz_runtime "$rt" # fuzz_runtime's fake host root goes under $TMP
exit 0
