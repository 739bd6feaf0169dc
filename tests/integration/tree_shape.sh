#!/bin/bash
# The shape the tree promises a newcomer (docs/architecture.md), checked so
# that it stays: no C source or header over 1000 lines, no function over 150
# lines (a function runs from a '{' in column 0 to the next '}' in column 0,
# as kernel style writes them), cgperf-exporter linking none of the
# agent's perf, ELF, DWARF, unwinding, disassembly or BTF libraries, and
# cgperf-agent linking none of those it loads on first use.
source "$(dirname "$0")/../lib/common.sh"
MAX_FILE=1000
MAX_FUNC=150

cd "$ROOT" || fail "cannot enter $ROOT"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find lib wire cgroup agent exporter tests bench -name '*.[ch]' 2>/dev/null)
fi
((${#files[@]} > 50)) || fail "found only ${#files[@]} C files under $ROOT"

long=$(for f in "${files[@]}"; do
	n=$(wc -l <"$f")
	((n > MAX_FILE)) && echo "  $f: $n lines"
done)
[ -z "$long" ] || fail "files over $MAX_FILE lines:
$long"

funcs=$(awk -v max="$MAX_FUNC" '
	FNR == 1 { start = 0 }
	/^\{/ && !start { start = FNR; next }
	/^\}/ && start {
		if (FNR - start + 1 > max)
			printf "  %s:%d: %d lines\n", FILENAME, start, FNR - start + 1
		start = 0
	}' "${files[@]}")
[ -z "$funcs" ] || fail "functions over $MAX_FUNC lines:
$funcs"
info "${#files[@]} C files: none over $MAX_FILE lines, no function over $MAX_FUNC lines"

EXPORTER=$BUILD_DIR/cgperf-exporter
[ -x "$EXPORTER" ] || fail "$EXPORTER not built"
needed=$(readelf -d "$EXPORTER" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "readelf shows no NEEDED entries for $EXPORTER"
for lib in libunwind libdw libelf libtraceevent libtracefs libcapstone libbpf; do
	if grep -q "^$lib[.-]" <<<"$needed"; then
		fail "cgperf-exporter links $lib: $(tr '\n' ' ' <<<"$needed")"
	fi
done
info "cgperf-exporter links: $(tr '\n' ' ' <<<"$needed")"

# What only some agent commands use is loaded by its first user
# (lib/dynlib.h), so that stat and record do not pay for it at start.
AGENT=$BUILD_DIR/cgperf-agent
[ -x "$AGENT" ] || fail "$AGENT not built"
needed=$(readelf -d "$AGENT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "readelf shows no NEEDED entries for $AGENT"
for lib in libcurl libmicrohttpd libcapstone; do
	if grep -q "^$lib[.-]" <<<"$needed"; then
		fail "cgperf-agent links $lib (it is loaded on first use): $(tr '\n' ' ' <<<"$needed")"
	fi
done
info "cgperf-agent links: $(tr '\n' ' ' <<<"$needed")"
echo "PASS"
