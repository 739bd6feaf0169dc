#!/bin/bash
# libFuzzer over wire_decode(), the batch decoder and validator every push
# body goes through in cgperf-exporter (tests/fuzz/fuzz_wire.c), for a
# bounded time (FUZZ_TIME seconds, default 20), then over what the exporter
# does with a decoded batch: totals, /metrics text and the stack renderers
# (tests/fuzz/fuzz_ingest.c, FUZZ_INGEST_TIME, default 15; both at once), from a seed
# corpus of valid batches: fuzz_wire's own seeds plus gen_batch's (every
# item kind, hostile names, gzip, a stack of WIRE_STACK_MAX frames). Fails on
# any crash, leak, sanitizer report or property a target checks (see their
# headers).
# holds: build
source "$(dirname "$0")/../lib/common.sh"
# Bulk CPU work at the lowest priority: the tests beside it (the suite runs
# several at once) keep their share; this one takes what is left.
renice -n 19 $$ >/dev/null
FUZZ_TIME=${FUZZ_TIME:-20}
FUZZ_INGEST_TIME=${FUZZ_INGEST_TIME:-15}
GEN=$BUILD_DIR/tools/gen_batch
[[ -x $GEN ]] || fail "$GEN not built (make O=${BUILD:-build} build-tests)"

command -v "${FUZZ_CC:-clang}" >/dev/null ||
	skip "clang missing: libFuzzer targets need clang and libclang-rt-14-dev (packaging/install-deps.sh)"
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
	'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n > 1000; }' \
	>"$TMP/probe.c"
"${FUZZ_CC:-clang}" -fsanitize=fuzzer,address,undefined -o "$TMP/probe" "$TMP/probe.c" \
	>"$TMP/probe.log" 2>&1 ||
	skip "clang cannot link -fsanitize=fuzzer (libclang-rt-14-dev missing?): $(head -c 200 "$TMP/probe.log")"

# The Makefile's own rules (flags, sources) build the target and its seeder.
case $BUILD_DIR in
"$ROOT"/*) O=${BUILD_DIR#"$ROOT"/} ;;
*) O=$BUILD_DIR ;;
esac
make -j2 --no-print-directory -C "$ROOT" O="$O" "$O/fuzz/fuzz_wire" "$O/fuzz/fuzz_wire-seeds" "$O/fuzz/fuzz_ingest" \
	>"$TMP/make.log" 2>&1 || fail "cannot build the fuzz targets: $(tail -20 "$TMP/make.log")"

corpus=$TMP/corpus
mkdir -p "$corpus" "$TMP/artifacts"
"$BUILD_DIR/fuzz/fuzz_wire-seeds" "$corpus" || fail "fuzz_wire-seeds failed"
"$GEN" seeds "$corpus" >/dev/null || fail "gen_batch seeds failed"
"$GEN" --cgroups 4 --stacks 30 --depth 24 --counters 10 write "$corpus/gen-bench-small" ||
	fail "gen_batch write failed"
"$GEN" --cgroups 4 --stacks 30 --depth 24 --counters 10 --gzip write "$corpus/gen-bench-small.gz" ||
	fail "gen_batch write --gzip failed"
nseeds=$(find "$corpus" -type f | wc -l)
((nseeds >= 12)) || fail "only $nseeds seeds"
# Every seed must be a valid batch, or the fuzzer starts from noise.
for f in "$corpus"/*; do
	"$AGENT" wire-dump "$f" >/dev/null 2>"$TMP/dump.err" ||
		fail "seed $(basename "$f") does not decode: $(head -c 300 "$TMP/dump.err")"
done
info "$nseeds valid seeds"

# fuzz NAME SECONDS: run $BUILD_DIR/fuzz/NAME over a copy of the corpus
fuzz() {
	local name=$1 secs=$2 rc runs
	mkdir -p "$TMP/corpus-$name" "$TMP/artifacts-$name"
	cp "$corpus"/* "$TMP/corpus-$name/"
	# One worker on one core: the machine is shared. -max_len covers every seed.
	"$BUILD_DIR/fuzz/$name" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$TMP/artifacts-$name/" "$TMP/corpus-$name" \
		>"$TMP/$name.log" 2>&1
	rc=$?
	grep -E '^(stat::peak_rss_mb|#[0-9]+.*DONE)' "$TMP/$name.log" | sed "s/^/# $name: /"
	if ((rc != 0)) || compgen -G "$TMP/artifacts-$name/*" >/dev/null; then
		tail -n 60 "$TMP/$name.log" >&2
		ls -l "$TMP/artifacts-$name" >&2
		# keep what reproduces it
		mkdir -p "$BUILD_DIR/fuzz/crashes" && cp "$TMP/artifacts-$name"/* "$BUILD_DIR/fuzz/crashes/" 2>/dev/null
		fail "$name found a problem (rc=$rc); inputs copied to $BUILD_DIR/fuzz/crashes/"
	fi
	grep -q 'INITED' "$TMP/$name.log" || fail "$name did not load the corpus"
	runs=$(awk '/^stat::number_of_executed_units/ { print $NF }' "$TMP/$name.log")
	[[ -n $runs ]] && ((runs > 1000)) || fail "$name ran only '${runs}' inputs: $(tail -5 "$TMP/$name.log")"
	info "$name: $runs inputs in ${secs}s, no finding"
}
# Side by side, at the lowest priority: each target has what the tests
# running beside it leave of a core (more than the 1000 inputs asked for;
# `make fuzz` fuzzes for longer); a finding fails in fuzz() (the one in the
# background: its exit status).
fuzz fuzz_ingest "$FUZZ_INGEST_TIME" &
bg=$!
fuzz fuzz_wire "$FUZZ_TIME"
wait $bg || fail "fuzz_ingest failed (see above)"
exit 0
