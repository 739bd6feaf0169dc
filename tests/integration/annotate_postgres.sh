#!/bin/bash
# annotate_postgres: a private PostgreSQL cluster in a cgroup under
# select-only pgbench (pgbench outside the cgroup), where
# hash_search_with_hash_value (dynahash.c, in Debian's stripped postgres
# through .dynsym: exported for extensions) is hot.
# `cgperf-agent annotate -G CG hash_search_with_hash_value --duration 3`
# must list its instructions, from its first address, with percentages of
# its own samples that add up to 100 (+-0.1), and say its share on stderr.
# holds: pg-uprobe
source "$(dirname "$0")/../lib/common.sh" || exit 1
source "$(dirname "$0")/../lib/pg.sh" || exit 1
export LC_ALL=C

SYM=hash_search_with_hash_value
cg_new pg
pg_start "$cg" 1
# long enough for a slow annotate start; stopped once annotate is done
pg_bench_start "$TMP/pgbench.log" -S -c 2 -j 1 -T $(scaled 60) -R 3000
# under way once both clients' sessions are open in the cluster
for ((i = 0; i < $(scaled 20) * 5; i++)); do
	kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
	conns=$(pg_psql -Atc "select count(*) from pg_stat_activity where application_name = 'pgbench'" 2>/dev/null)
	((${conns:-0} >= 2)) && break
	sleep 0.2
done
((${conns:-0} >= 2)) || { cat "$TMP/pgbench.log" >&2; fail "pgbench has ${conns:-no} sessions open after $(scaled 20)s"; }

# the address the listing must start at, from .dynsym (nm -D)
want=""
if command -v nm >/dev/null; then
	want=$(nm -D "$PG_BIN/postgres" | awk -v s="$SYM" '$3 == s { sub(/^0+/, "", $1); print $1; exit }')
fi
timeout $(scaled 30) "$AGENT" annotate -G "$rel" -F 999 "$SYM" --duration 3 >"$TMP/ann.out" 2>"$TMP/ann.err"
rc=$?
kill "$PG_BENCH_PID" 2>/dev/null
((rc == 0)) || { cat "$TMP/ann.err" >&2; fail "annotate exited with $rc"; }
sed 's/^/    /' "$TMP/ann.err"
grep -q "<$SYM>:" "$TMP/ann.out" || { cat "$TMP/ann.out" "$TMP/ann.err" >&2; fail "no <$SYM> listing"; }
res=$(awk -F'\t' '/^ *[0-9]+\.[0-9][0-9] :\t *[0-9a-f]+:\t/ {
		n++; s += $1; if ($1 + 0 > 0) hot++; if (n == 1) { a = $2; gsub(/[ :]/, "", a); first = a }
	} END { printf "%d %.2f %d %s\n", n, s, hot, first }' "$TMP/ann.out")
read -r n sum hot first <<<"$res"
info "$SYM: $n instructions from $first, $hot with samples, percentages sum $sum"
((n >= 50)) || fail "only $n instructions listed"
((hot >= 1)) || fail "no instruction has samples"
awk -v s="$sum" 'BEGIN { exit !(s >= 99.9 && s <= 100.1) }' || fail "percentages sum to $sum, not 100"
[[ -z $want || $first == "$want" ]] || fail "listing starts at $first, .dynsym says $want"
grep -q "samples (.*%) in $SYM" "$TMP/ann.err" || fail "no share line on stderr"
sed -n '/Sorted summary/,$p' "$TMP/ann.out" | head -n 4 | sed 's/^/    /'
echo "PASS"
