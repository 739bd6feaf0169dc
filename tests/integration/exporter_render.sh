#!/bin/bash
# exporter/render through tests/tools/render_tool, checked by the real
# consumers of its outputs:
# - pprof: `go tool pprof` reads the profile; every function's flat and cum
#   sample counts equal what the folded input says (computed here with awk,
#   "_[k]" taken off, a recursive function counted once per stack), CPU time
#   is count x period, the mappings carry their build-ids, kernel frames
#   are in [kernel.kallsyms];
# - folded: the same stacks summed, one line each, in byte order (sort);
# - svg: xmllint accepts it with hostile names and title, and a 100k-stack
#   graph too.
# RENDER_TOOL overrides the tool's path.
. "$(dirname "$0")/../lib/common.sh"

TOOL=${RENDER_TOOL:-$BUILD_DIR/tools/render_tool}
[[ -x $TOOL ]] || fail "no $TOOL (make O=${BUILD:-build} build-tests)"
command -v xmllint >/dev/null || skip "xmllint not installed (libxml2-utils)"
command -v go >/dev/null || skip "go not installed (golang-go): go tool pprof is the reference reader"
export HOME=$TMP LC_ALL=C

# Stacks as the agent writes them: comm first (or a cgroup), kernel frames
# marked _[k], unnamed frames module+0xOFF; some repeated (summed),
# recursion, UTF-8, quotes and spaces in names.
cat >"$TMP/in.folded" <<'EOF'
postgres;__libc_start_main;main;PostmasterMain;ServerLoop;PostgresMain;exec_simple_query;PortalRun;ExecScan;heap_getnextslot 40
postgres;__libc_start_main;main;PostmasterMain;ServerLoop;PostgresMain;exec_simple_query;pg_parse_query;raw_parser;base_yyparse 12
postgres;__libc_start_main;main;PostmasterMain;ServerLoop;PostgresMain;exec_simple_query;PortalRun;ExecScan;entry_SYSCALL_64_[k];do_syscall_64_[k];__x64_sys_read_[k] 7
postgres;__libc_start_main;main;PostmasterMain;ServerLoop;PostgresMain;exec_simple_query;PortalRun;ExecScan;heap_getnextslot 2
/system.slice/postgresql@15-main.service;postgres;/usr/lib/x86_64-linux-gnu/libc.so.6+0x9d3f0;memcpy 5
"quoted" & <angle>;café frame;leaf with space 3
swapper;secondary_startup_64_no_verify_[k];cpu_startup_entry_[k];do_idle_[k];default_idle_[k] 100
recursive;f;f;f 4
recursive;f;schedule 1
kworker/0:1;worker_thread_[k];schedule_[k] 6
EOF
PERIOD=10101010

# ---- folded ----------------------------------------------------------------
"$TOOL" folded <"$TMP/in.folded" >"$TMP/out.folded" || fail "render_tool folded"
awk '{ c = $NF; sub(/ [0-9]+$/, ""); n[$0] += c } END { for (s in n) print s " " n[s] }' \
	"$TMP/in.folded" | sort >"$TMP/want.folded"
diff -u "$TMP/want.folded" "$TMP/out.folded" || fail "folded output differs from the summed, sorted input"
info "folded: $(wc -l <"$TMP/out.folded") lines, summed and sorted"

# ---- pprof -----------------------------------------------------------------
"$TOOL" --period $PERIOD --time 1700000000000000000 --duration 60000000000 pprof \
	<"$TMP/in.folded" >"$TMP/p.pb.gz" || fail "render_tool pprof"
[[ $(head -c2 "$TMP/p.pb.gz" | od -An -tx1 | tr -d ' ') == 1f8b ]] || fail "pprof output is not gzip'd"

go tool pprof -symbolize=none -sample_index=samples -top -nodecount=100000 "$TMP/p.pb.gz" \
	>"$TMP/top.txt" 2>"$TMP/top.err" || { cat "$TMP/top.err"; fail "go tool pprof -top"; }
# rows: flat flat% sum% cum cum% name (the name may hold spaces)
awk 'f { name = $6; for (i = 7; i <= NF; i++) name = name " " $i; print name "\t" $1 "\t" $4 }
     /^ *flat +flat%/ { f = 1 }' "$TMP/top.txt" | sort >"$TMP/got.top"
awk '{
	c = $NF; sub(/ [0-9]+$/, "")
	n = split($0, fr, ";")
	delete seen
	for (i = 1; i <= n; i++) {
		sub(/_\[k\]$/, "", fr[i])
		if (!(fr[i] in seen)) { cum[fr[i]] += c; seen[fr[i]] = 1 }
		flat[fr[i]] += 0
	}
	flat[fr[n]] += c
} END { for (f in cum) print f "\t" flat[f] "\t" cum[f] }' "$TMP/in.folded" | sort >"$TMP/want.top"
diff -u "$TMP/want.top" "$TMP/got.top" || { cat "$TMP/top.txt"; fail "go tool pprof -top disagrees with the folded input"; }
info "pprof: go tool pprof -top matches flat and cum of $(wc -l <"$TMP/want.top") functions"
grep -q '_\[k\]' "$TMP/top.txt" && fail "a kernel frame kept its _[k] suffix in pprof"

go tool pprof -symbolize=none -raw "$TMP/p.pb.gz" >"$TMP/raw.txt" 2>&1 || fail "go tool pprof -raw"
grep -q '^samples/count cpu/nanoseconds' "$TMP/raw.txt" || fail "sample types are not samples/count cpu/nanoseconds"
grep -q '^PeriodType: cpu nanoseconds' "$TMP/raw.txt" || fail "period type: $(grep Period "$TMP/raw.txt")"
grep -q "^Period: $PERIOD\$" "$TMP/raw.txt" || fail "period: $(grep Period "$TMP/raw.txt")"
grep -q '^Duration: 1m0s' "$TMP/raw.txt" || fail "duration: $(grep Duration "$TMP/raw.txt")"
total=$(awk '{ s += $NF } END { print s }' "$TMP/in.folded")
read -r got_n got_ns < <(awk '/^Samples:/ { f = 1; next } /^Locations/ { f = 0 }
	f && /:/ { n += $1; ns += $2 } END { print n, ns }' "$TMP/raw.txt")
[[ $got_n == "$total" ]] || fail "samples in -raw: $got_n, want $total"
[[ $got_ns == $((total * PERIOD)) ]] || fail "cpu ns in -raw: $got_ns, want $((total * PERIOD))"
grep -Eq '^[0-9]+: 0x0/0x0/0x0 \[kernel\.kallsyms\] +\[FN\]' "$TMP/raw.txt" ||
	fail "no [kernel.kallsyms] mapping: $(sed -n '/^Mappings/,$p' "$TMP/raw.txt")"
# render_tool's lookup: PATH+0xOFF is in PATH, build-id "b1d" + length of PATH
grep -Eq '^[0-9]+: 0x0/0x0/0x0 /usr/lib/x86_64-linux-gnu/libc\.so\.6 b1d35 \[FN\]' "$TMP/raw.txt" ||
	fail "no libc mapping with its build-id: $(sed -n '/^Mappings/,$p' "$TMP/raw.txt")"
# the kernel's schedule is in the kernel mapping: its location says M=<id>
kid=$(sed -n 's/^\([0-9]*\): 0x0\/0x0\/0x0 \[kernel\.kallsyms\].*/\1/p' "$TMP/raw.txt")
grep -Eq "^ +[0-9]+: 0x0 M=$kid schedule " "$TMP/raw.txt" || fail "schedule_[k] is not a location of [kernel.kallsyms]"
grep -Eq "^ +[0-9]+: 0x0 schedule " "$TMP/raw.txt" || fail "user schedule lost its own location (no mapping)"
info "pprof: types, period, duration, $total samples, $got_ns ns, mappings with build-ids"

# ---- svg -------------------------------------------------------------------
printf '%s\n' \
	$'/system.slice/we"ird \\name\x01.service;<script>alert(1)</script>;a&b;caf\xc3\xa9;\xff\xfe;]]>;\xef\xbf\xbe 5' \
	$'k_[k];lib.so+0x1f;\xe2\x82\xac 3' >"$TMP/hostile.folded"
"$TOOL" --title $'t <"&\'>\x02 \xff' --subtitle ']]> <!--' svg <"$TMP/hostile.folded" >"$TMP/hostile.svg" ||
	fail "render_tool svg"
xmllint --noout "$TMP/hostile.svg" || fail "xmllint rejects the SVG of hostile names"
frames=$(grep -c '^<g class="f">' "$TMP/hostile.svg")
[[ $frames == 11 ]] || fail "hostile SVG has $frames frames, want 11 (all + 7 + 3)"
info "svg: hostile names and title pass xmllint, $frames frames"

"$TOOL" svg <"$TMP/in.folded" >"$TMP/pg.svg" && xmllint --noout "$TMP/pg.svg" || fail "postgres-like SVG"

"$TOOL" bench >"$TMP/bench.txt" || fail "render_tool bench"
sed 's/^/# /' "$TMP/bench.txt"
# the bench's own stacks as folded text, then as SVG: large, still well-formed
"$TOOL" --stacks 20000 bench >/dev/null || fail "bench 20k"
awk 'BEGIN { srand(7); for (s = 0; s < 100000; s++) { line = "comm" s % 3
	for (d = 1; d < 30; d++) line = line ";fn_" d "_" int(rand() * (2 + d))
	print line ";leaf" s " " 1 + s % 5 } }' >"$TMP/big.folded"
"$TOOL" svg <"$TMP/big.folded" >"$TMP/big.svg" || fail "render_tool svg (100k stacks)"
xmllint --noout --huge "$TMP/big.svg" || fail "xmllint rejects the 100k-stack SVG"
info "svg: 100k stacks of depth 30, $(wc -c <"$TMP/big.svg") bytes, $(grep -c '^<g class="f">' "$TMP/big.svg") frames drawn, well-formed"
echo "PASS"
