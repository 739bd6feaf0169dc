#!/bin/bash
# trace on a real PostgreSQL in its own cgroup under pgbench -S with a fixed
# number of transactions:
#  - sdt:postgresql:query__start hits in that cgroup = the queries pgbench ran
#    (plus the few it issues itself at connect);
#  - --latency query__start,query__done reports that many pairs;
#  - a uprobe on a function the simple protocol calls once per query counts
#    the same; exec_simple_query itself is a static function and Debian's
#    postgres is stripped (.dynsym only), so it needs the -dbgsym package:
#    without it the probe must fail with a clear message, which is checked.
# holds: pg-uprobe
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
cg_new pg
pg_start "$cg" 2
PGBIN=$PG_BIN/postgres
C=4 T=1500
want=$((C * T))
sdt="sdt:postgresql:query__start@$PGBIN"

# Probes placed before pgbench connects: backends forked later are covered.
"$AGENT" trace -G "$rel" -e "$sdt" --latency "$sdt,sdt:postgresql:query__done@$PGBIN" \
	-e "u:$PGBIN:pg_parse_query" --json -- \
	sh -c "cd '$TMP' && exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
	'$PG_BIN/pgbench' -n -S -M simple -c $C -j 2 -t $T >'$TMP/pgbench.log' 2>&1" >"$TMP/t.json" 2>"$TMP/err" ||
	fail "trace failed: $(cat "$TMP/err")"
cat "$TMP/err"
grep -E 'number of transactions actually processed|tps' "$TMP/pgbench.log" | sed 's/^/# pgbench: /'
python3 - "$TMP/t.json" "$rel" $want <<'PY' || fail "query counts do not match"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rel, want = sys.argv[2], int(sys.argv[3])
by = {}
for r in rows:
    assert r["cgroup"] == rel, f"hit outside the cgroup: {r}"
    by[r["probe"]] = r
for k, r in by.items():
    print(f"# {k}: {r['hits']} hits" + (f", {r['latency_ns']['count']} latency pairs, mean {r['latency_ns']['mean']/1e3:.1f} us, max {r['latency_ns']['max']/1e3:.1f} us" if "latency_ns" in r else ""))
qs = by["sdt:postgresql:query__start"]
pp = [r for k, r in by.items() if k.endswith(":pg_parse_query")][0]
# pgbench's own queries at start-up: a handful, not per transaction.
assert want <= qs["hits"] <= want + 20, f"query__start {qs['hits']}, want {want} (+ a few)"
assert qs["latency_ns"]["count"] == qs["hits"], "not every query__start paired with its query__done"
assert pp["hits"] == qs["hits"], f"pg_parse_query {pp['hits']} != query__start {qs['hits']}"
PY
grep -q ' 0 lost' "$TMP/err" || fail "records were lost: $(cat "$TMP/err")"

# The semaphore: without our probe the backends skip the probe site
# (query__start is guarded); the kernel raises it through ref_ctr_offset.
# exec_simple_query: static, so named only with debuginfo.
"$AGENT" trace -e "u:$PGBIN:exec_simple_query" --duration 1 >/dev/null 2>"$TMP/err"; rc=$?
if [[ $rc -eq 0 ]]; then
	info "exec_simple_query resolved (debuginfo installed)"
else
	[[ $rc -eq 2 ]] && grep -q 'exec_simple_query' "$TMP/err" || fail "exec_simple_query: rc=$rc $(cat "$TMP/err")"
	info "exec_simple_query: $(head -c 300 "$TMP/err")"
fi
exit 0
