#!/bin/bash
# 200 cgroups x 4 events counted together: every one is opened, read each
# interval, and closed; removing half of them mid-run closes exactly their fds.
source "$(dirname "$0")/../lib/common.sh"
N=200
base=$(cg_make scale)
for i in $(seq -w 1 $N); do mkdir "$base/c$i"; done
rel=${base#"$(cg2_mount)"}
ncpu=$(getconf _NPROCESSORS_ONLN)
evs=task-clock,context-switches,page-faults,cpu-migrations
want=$((N * 4 * ncpu))
# Stopped by SIGINT once both figures are read, not by a --duration a slow
# start could use up.
"$AGENT" stat --for-each-cgroup "^$rel/" -e $evs -I 250 --duration "$(scaled 60)" --json -v \
	>"$TMP/out.jsonl" 2>"$TMP/err" &
ag=$!; bg_track $ag
# perf event fds only: the others (inherited, inotify, signalfd) are no
# part of what is counted.
perf_fds() { ls -l "/proc/$ag/fd" 2>/dev/null | grep -c 'anon_inode:\[perf_event\]'; }
# The first interval printed: every event is open (and SIGINT is caught).
n=$(scaled 150)
for ((i = 0; i < n; i++)); do
	[[ -s $TMP/out.jsonl ]] && break
	kill -0 $ag 2>/dev/null || fail "agent exited: $(cat "$TMP/err")"
	sleep 0.1
done
[[ -s $TMP/out.jsonl ]] || fail "no interval printed after $(scaled 15) s: $(cat "$TMP/err")"
fds_full=$(perf_fds)
for i in $(seq -w 1 $((N / 2))); do rmdir "$base/c$i"; done
# until the removed cgroups' fds are closed (or the time is up)
for ((i = 0; i < n; i++)); do
	fds_half=$(perf_fds)
	((fds_full - fds_half >= want / 2)) && break
	sleep 0.1
done
kill -INT $ag
wait $ag || fail "agent failed: $(cat "$TMP/err")"
cat "$TMP/err"
info "perf event fds with $N cgroups: $fds_full (want >= $want); after removing $((N / 2)): $fds_half"
((fds_full >= want && fds_full <= want + 16)) || fail "fd count $fds_full, want $want + a few"
((fds_full - fds_half == want / 2)) || fail "removing $((N / 2)) cgroups closed $((fds_full - fds_half)) fds, want $((want / 2))"
python3 - "$TMP/out.jsonl" $N <<'PY' || fail "output check failed"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
per = collections.defaultdict(set)
for r in rows:
    per[r["interval"]].add((r["cgroup"], r["event"]))
    assert r["supported"], r
counts = [len(v) for _, v in sorted(per.items())]
print("# (cgroup,event) pairs per interval:", counts)
assert counts[0] == n * 4, f"first interval has {counts[0]} pairs, want {n*4}"
assert counts[-1] == n // 2 * 4, f"last interval has {counts[-1]}, want {n//2*4}"
PY
grep -q 'setup' "$TMP/err" || fail "no setup figure"
exit 0
