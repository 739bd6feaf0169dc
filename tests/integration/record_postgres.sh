#!/bin/bash
# record_postgres: a private PostgreSQL cluster runs inside a cgroup under a
# rate-limited select-only pgbench (pgbench itself outside the cgroup). Over
# the same 6 s, `cgperf-agent record -G CG --call-graph dwarf -F 199` and
# `perf record -a -e cpu-clock -G CG --call-graph dwarf -F 199` sample it;
# perf's samples go through `perf script` and a minimal stackcollapse
# (tests/lib/collapse.py). Asserts, on the two folded profiles:
#   (a) the ten hottest named leaf functions overlap in at least 7 of 10;
#   (b) the share of samples whose stack reaches PostgresMain (or main) is,
#       for the agent, at least perf's share minus 1 point (or 2.5 standard
#       errors, when a busy machine leaves fewer samples);
#   (c) the agent leaves no more frames unnamed than perf: no code address
#       that perf names is unnamed in the agent's profile, and the agent's
#       share of unnamed frames is not above perf's (beyond sampling noise).
# Sanity checks make sure nothing passes vacuously: enough samples on both
# sides, sample counts that agree (within 15%, or 3 Poisson standard
# deviations when there are fewer samples), the agent's folded total equal
# to the samples it says it kept, at most 1% lost (a busy machine can keep
# the agent off the CPU longer than its DWARF ring holds).
#
#   RECORD_PG_RATE=N   pgbench -R (default 12000, ~0.65 CPU of backends here)
#   KEEP_TMP=1         keep the profiles and perf.data in the $TMP directory
source "$(dirname "$0")/../lib/common.sh" || exit 1
source "$(dirname "$0")/../lib/pg.sh" || exit 1
export LC_ALL=C

DUR=6
FREQ=199
RATE=${RECORD_PG_RATE:-12000}
# per tool, over DUR seconds: ~700 here; a busy machine gives the backends
# less CPU, so fewer (the bounds below widen with the sampling noise)
MIN_SAMPLES=200
need perf python3
cg_new pg
rel=${rel#/}

pg_start "$cg" 5

# Select-only at a fixed rate (-R), as in stat_postgres: the work done in the
# window is set by the schedule, not by the CPU left over, and the two vCPUs
# are not saturated (measured: ~0.65 CPU of backends, ~0.35 of pgbench, the
# host half busy), so both profilers see the same load. The rate is as high
# as that allows because every sample counts in (a): ~700 samples in 6 s at
# 199 Hz. pgbench runs past the window on both sides: the window starts 2 s
# after its 4 clients have connected (its -R schedule runs from its start:
# what it fell behind while connecting, it catches up at full speed first).
pg_bench_start "$TMP/pgbench.log" -S -c 4 -j 2 -T $((DUR + 6)) -R "$RATE"
for ((i = 0; i < $(scaled 10) * 10; i++)); do
	kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
	conns=$(pg_psql -Atc "select count(*) from pg_stat_activity where application_name = 'pgbench'" 2>/dev/null)
	((${conns:-0} >= 4)) && break
	sleep 0.1
done
((${conns:-0} >= 4)) || { cat "$TMP/pgbench.log" >&2; fail "pgbench has ${conns:-no} of 4 sessions open after $(scaled 10)s"; }
sleep 2 # the catch-up, before the window
kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
grep -qx "$PG_BENCH_PID" "$cg/cgroup.procs" && fail "pgbench $PG_BENCH_PID runs inside $cg"
nprocs=$(wc -l <"$cg/cgroup.procs")
((nprocs >= 5)) || fail "only $nprocs processes in $cg (want postmaster + 4 backends)"

# perf wants its event before -G (one cgroup per event) and -G needs -a.
perf record -e cpu-clock -G "$rel" -a --call-graph dwarf -F "$FREQ" -o "$TMP/perf.data" \
	-- sleep "$DUR" >"$TMP/perf-record.out" 2>&1 &
perf_pid=$!
bg_track "$perf_pid"
timeout $((DUR + $(scaled 60))) "$AGENT" record -G "$rel" --call-graph dwarf -F "$FREQ" --duration "$DUR" \
	-o "$TMP/cg.folded" -v >"$TMP/agent.out" 2>"$TMP/agent.err"
arc=$?
wait "$perf_pid"
prc=$?

if ((arc != 0)); then
	sed 's/^/    agent: /' "$TMP/agent.err" | tail -n 20 >&2
	fail "agent exited with $arc"
fi
((prc == 0)) || { sed 's/^/    perf record: /' "$TMP/perf-record.out" >&2; fail "perf record exited with $prc"; }
sed 's/^/    /' "$TMP/agent.err"
sed -n 's/^\[ perf record: \(Captured.*\) \]$/    perf record: \1/p' "$TMP/perf-record.out"

wait "$PG_BENCH_PID"
brc=$?
((brc == 0)) || { tail -n 20 "$TMP/pgbench.log" >&2; fail "pgbench exited with $brc"; }
info "cgroup /$rel: $nprocs processes, pgbench -S -c 4 -j 2 -R $RATE: tps $(awk '/^tps/ { print $3; exit }' "$TMP/pgbench.log")"

perf script -i "$TMP/perf.data" >"$TMP/perf.script" 2>"$TMP/perf-script.err" ||
	{ sed 's/^/    perf script: /' "$TMP/perf-script.err" | tail -n 20 >&2; fail "perf script failed"; }

python3 "$ROOT/tests/lib/collapse.py" "$TMP/perf.dsos" "$TMP/perf.addrs" "$TMP/perf.markers" \
	<"$TMP/perf.script" >"$TMP/perf.folded" || fail "collapsing perf script output failed"

# Alias table: several symbols often share one address (__libc_recv, __recv,
# recv) and each tool keeps its own pick (the agent: global over weak over
# local, then the fewest underscores; perf: another). Every function symbol
# of the DSOs perf saw, from the file and from its separate debuginfo found by
# build-id (where both tools get their names), maps to one canonical name per
# (DSO, address), so a leaf compares as the same function in both profiles.
while read -r dso; do
	files=("$dso")
	bid=$(readelf -n "$dso" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[[ -n $bid && -r /usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug ]] &&
		files+=("/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug")
	for f in "${files[@]}"; do
		readelf -sW --dyn-syms "$f" 2>/dev/null
		readelf -sW --syms "$f" 2>/dev/null
	done | awk -v d="$dso" '$4 == "FUNC" || $4 == "IFUNC" { print d, $2, $8 }'
done <"$TMP/perf.dsos" >"$TMP/aliases"

python3 - "$TMP" "$MIN_SAMPLES" <<'EOF'
import math, re, sys
from collections import Counter, defaultdict
tmp, min_samples = sys.argv[1], int(sys.argv[2])
fails = []

def load(path):
    stacks = []
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, cnt = line.rpartition(" ")
        if not stack or not cnt.isdigit():
            sys.exit(f"{path}:{n}: not a folded line: {line!r}")
        stacks.append((stack.split(";"), int(cnt)))
    return stacks

ours, perf = load(f"{tmp}/cg.folded"), load(f"{tmp}/perf.folded")

# canonical alias name: the sorted-first name at each (dso, address)
by_addr = defaultdict(set)
for line in open(f"{tmp}/aliases"):
    f = line.split()
    if len(f) == 3 and int(f[1], 16) != 0:
        by_addr[(f[0], int(f[1], 16))].add(f[2].split("@")[0])
canon = {}
for names in by_addr.values():
    c = sorted(names)[0]
    for n in names:
        if canon.setdefault(n, c) != c:
            canon[n] = None  # aliases differ between DSOs: leave the name as it is
def canonical(name):
    return name if name.endswith("_[k]") else (canon.get(name) or name)

def unnamed(frame):
    return "+0x" in frame or frame.startswith("[unknown") or frame.startswith("[unmapped")

def summary(stacks):
    s = dict(total=0, leaves=Counter(), unnamed_leaves=0, reach=0, frames=0, unnamed_frames=0)
    for fr, c in stacks:
        s["total"] += c
        body = fr[1:]  # fr[0] is the comm
        if not body:
            continue
        if unnamed(body[-1]):
            s["unnamed_leaves"] += c
        else:
            s["leaves"][canonical(body[-1])] += c
        if "PostgresMain" in body or "main" in body:
            s["reach"] += c
        s["frames"] += len(body) * c
        s["unnamed_frames"] += sum(1 for f in body if unnamed(f)) * c
    return s

O, P = summary(ours), summary(perf)

kept = lost = None
for line in open(f"{tmp}/agent.err"):
    m = re.search(r"(\d+) samples in [0-9.]+ s, (\d+) kept, (\d+) lost", line)
    if m:
        kept, lost = int(m.group(2)), int(m.group(3))
if kept is None:
    fails.append("no summary line on the agent's stderr")
else:
    if kept != O["total"]:
        fails.append(f"agent says {kept} samples kept, its folded stacks sum to {O['total']}")
    if lost * 100 > kept:
        fails.append(f"agent lost {lost} samples, {kept} kept")

print(f"# samples: agent {O['total']}, perf {P['total']} "
      f"({(O['total'] - P['total']) * 100 / max(P['total'], 1):+.1f}%)")
if P["total"] < min_samples:
    fails.append(f"perf has only {P['total']} samples (< {min_samples}): too few to compare; "
                 "did the load run in the cgroup?")
if O["total"] < min_samples:
    fails.append(f"agent has only {O['total']} samples (< {min_samples})")
# Same event, frequency, cgroup and 6 s: only the tens of ms by which the
# windows differ and Poisson noise (~4% at 700) separate the counts: 15%,
# or 3 standard deviations of the difference when fewer samples make that
# more (a busy machine: ~24% at 300).
if P["total"] and O["total"]:
    tol = max(0.15, 3 * math.sqrt(1 / O["total"] + 1 / P["total"]))
    if abs(O["total"] - P["total"]) > tol * P["total"]:
        fails.append(f"sample counts differ by more than {tol * 100:.0f}%: agent {O['total']}, perf {P['total']}")

# (a) ten hottest leaves, by samples then name. Unnamed leaves are left out
# on both sides: perf lumps them all into one "[unknown]", the agent keeps
# them apart by address, so neither is a function to compare ((c) covers
# them). The two tools take different samples (separate timers), so below
# the first few ranks the order is noise: the 10th leaf has ~6 samples and a
# dozen others 3-6. A leaf therefore counts as shared when it is in the other
# top 10 or the other side's count for it is within two Poisson standard
# deviations of that side's 10th count (c - 2*sqrt(c), at least 1). A leaf
# named differently, or missing, on one side is still not shared.
def top(leaves, n=10):
    return sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

to, tp = top(O["leaves"]), top(P["leaves"])
def shared(a, b_leaves, b_top):
    cut = b_top[-1][1] if b_top else 1
    band = max(1.0, cut - 2 * math.sqrt(cut))
    bset = {k for k, _ in b_top}
    return {k for k, _ in a if k in bset or b_leaves.get(k, 0) >= band}
s_op = shared(to, P["leaves"], tp)
s_po = shared(tp, O["leaves"], to)
strict = len({k for k, _ in to} & {k for k, _ in tp})
overlap = min(len(s_op), len(s_po))
print("# ten hottest named leaves (samples, share of all samples; "
      "* in the other top 10, ~ within its noise band):")
print(f"#   {'agent':<46}  {'perf':<46}")
def cell(t, i, s, other_top, tot):
    if i >= len(t):
        return ""
    k, v = t[i]
    mark = "*" if k in {x for x, _ in other_top} else ("~" if k in s else " ")
    return f"{mark}{k[:32]:<32} {v:4d} {v * 100 / max(tot, 1):5.1f}%"
for i in range(10):
    print(f"#   {cell(to, i, s_op, tp, O['total']):<46}  {cell(tp, i, s_po, to, P['total']):<46}")
print(f"#   unnamed leaves: agent {O['unnamed_leaves']} samples, perf {P['unnamed_leaves']}")
print(f"# (a) top-10 overlap {overlap}/10 (strict {strict}/10; agent's in perf's {len(s_op)}, "
      f"perf's in agent's {len(s_po)})")
if len(to) < 10 or len(tp) < 10:
    fails.append(f"fewer than 10 named leaves (agent {len(to)}, perf {len(tp)})")
elif overlap < 7:
    fails.append(f"(a) the ten hottest leaves overlap in {overlap} < 7")

# (b) stacks that reach PostgresMain (backends) or main (postmaster and
# auxiliary processes). Both tools copy the same 8 KiB of user stack, so the
# stacks that cannot get that far are the same for both; the agent's DWARF
# unwinding must do no worse than perf's. The two tools take different
# samples, so the shares are two independent estimates of one proportion,
# ~99.5% here: the binomial standard error sqrt(p(1-p)/N) is ~0.3 point at
# N ~ 700, ~0.4 for the difference, so 1 point is ~2.5 standard deviations,
# while an agent that lost one stack in 50 still fails. With fewer samples
# (a busy machine) the tolerance is 2.5 standard errors of the difference.
so = O["reach"] * 100 / max(O["total"], 1)
sp = P["reach"] * 100 / max(P["total"], 1)
pp = (O["reach"] + P["reach"]) / max(O["total"] + P["total"], 1)
se = 100 * math.sqrt(max(pp * (1 - pp), 0.005 * 0.995) * (1 / max(O["total"], 1) + 1 / max(P["total"], 1)))
tol_b = max(1.0, 2.5 * se)
print(f"# (b) reach PostgresMain or main: agent {O['reach']}/{O['total']} = {so:.2f}%, "
      f"perf {P['reach']}/{P['total']} = {sp:.2f}% ({so - sp:+.2f} points, tolerance {tol_b:.2f})")
if so < sp - tol_b:
    fails.append(f"(b) agent reaches PostgresMain/main in {so:.2f}% of samples, perf in {sp:.2f}% "
                 f"(tolerance {tol_b:.2f} points)")

# (c) unnamed frames: the agent's "module+0xOFFSET", "[unknown..." or
# "[unmapped..." against perf's "[unknown]", as a share of all frames (the
# comm is not a frame). Both tools name frames from the same sources (the
# file's .symtab/.dynsym, debuginfo by build-id), so on this host their
# shares differ by sampling noise (which stacks got sampled), ~0.5 point
# between runs. Two checks:
#  - exact: no code address (module, file offset) that perf names is left
#    unnamed by the agent (perf prints file offsets for user frames, as the
#    agent's module+0xOFFSET does);
#  - statistical: the agent's share is not above perf's by more than 1.5
#    points (3 standard deviations of that noise), widened as 1/sqrt(N)
#    when a busy machine leaves fewer than ~700 samples.
markers = int(open(f"{tmp}/perf.markers").read().split()[0])
perf_addr = {}
for line in open(f"{tmp}/perf.addrs"):
    b, a, s = line.split(" ", 2)
    perf_addr[(b, int(a, 16))] = s.strip()
ours_unnamed = set()
for fr, _ in ours:
    for f in fr[1:]:
        m = re.fullmatch(r"(.+)\+0x([0-9a-fA-F]+)", f)
        if m and not m.group(1).startswith("["):
            ours_unnamed.add((m.group(1), int(m.group(2), 16)))
missed = sorted((k, perf_addr[k]) for k in ours_unnamed if perf_addr.get(k, "[unknown]") != "[unknown]")
both = sum(1 for k in ours_unnamed if perf_addr.get(k) == "[unknown]")
perf_unknown = sum(1 for s in perf_addr.values() if s == "[unknown]")
uo = O["unnamed_frames"] * 100 / max(O["frames"], 1)
up = P["unnamed_frames"] * 100 / max(P["frames"], 1)
print(f"# (c) unnamed frames: agent {O['unnamed_frames']}/{O['frames']} = {uo:.2f}%, "
      f"perf {P['unnamed_frames']}/{P['frames']} = {up:.2f}% ({uo - up:+.2f} points; "
      f"agent {'fewer' if uo < up else 'NOT fewer'})")
print(f"#     frames per sample: agent {O['frames'] / max(O['total'], 1):.2f}, "
      f"perf {P['frames'] / max(P['total'], 1):.2f}; perf end-of-chain markers dropped: {markers} "
      f"(with them perf's share would be "
      f"{(P['unnamed_frames'] + markers) * 100 / max(P['frames'] + markers, 1):.2f}%)")
print(f"#     distinct addresses: agent leaves {len(ours_unnamed)} unnamed ({both} unknown to perf "
      f"too, {len(ours_unnamed) - both - len(missed)} not sampled by perf), perf {perf_unknown} "
      f"unknown; named by perf but not by the agent: {len(missed)}")
for (b, a), s in missed[:10]:
    print(f"#       {b}+0x{a:x}: perf says {s}")
if missed:
    fails.append(f"(c) the agent leaves {len(missed)} addresses unnamed that perf names")
tol_c = max(1.5, 1.5 * math.sqrt(700 / max(min(O["total"], P["total"]), 1)))
if uo > up + tol_c:
    fails.append(f"(c) agent leaves {uo:.2f}% of frames unnamed, perf {up:.2f}% (tolerance {tol_c:.2f} points)")

for f in fails:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if fails else 0)
EOF
rc=$?
((rc == 0)) || fail "profiles disagree (KEEP_TMP=1 keeps them in $TMP)"
info "ok"
