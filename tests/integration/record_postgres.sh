#!/bin/bash
# record_postgres: a private PostgreSQL cluster runs inside a cgroup under a
# rate-limited select-only pgbench (pgbench itself outside the cgroup). Over
# the same 6 s, `cgperf-agent record -G CG --call-graph dwarf -F 199` and
# `perf record -a -e cpu-clock -G CG --call-graph dwarf -F 199` sample it;
# perf's samples go through `perf script` and a minimal stackcollapse written
# here. Asserts, on the two folded profiles:
#   (a) the ten hottest named leaf functions overlap in at least 7 of 10;
#   (b) the share of samples whose stack reaches PostgresMain (or main) is,
#       for the agent, at least perf's share minus a tolerance for noise;
#   (c) the agent leaves fewer frames unnamed than perf, as a share of all
#       frames.
# Sanity checks make sure nothing passes vacuously: enough samples on both
# sides, sample counts that agree, the agent's folded total equal to the
# samples it says it kept, and no lost samples.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
export LC_ALL=C

DUR=6
FREQ=199
RATE=${RECORD_PG_RATE:-6000} # pgbench -R; ~0.5 CPU of backends here
MIN_SAMPLES=300              # per tool, over DUR seconds
command -v perf >/dev/null || skip "perf not installed"
command -v python3 >/dev/null || skip "python3 not installed"

cg=$(cg_make pg)
_CG_MADE+=("$cg") # cg_make ran in a $(...) subshell: register it here too
rel=${cg#"$(cg2_mount)"/}

pg_start "$cg"
pg_bench_init 5

# Select-only at a fixed rate (-R), as in stat_postgres: the work done in the
# window is set by the schedule, not by what CPU is left over, and the two
# vCPUs are not saturated, so both profilers see the same load. pgbench runs
# past the window on both sides.
pg_bench_start "$TMP/pgbench.log" -S -c 4 -j 2 -T $((DUR + 6)) -R "$RATE"
sleep 2
kill -0 "$PG_BENCH_PID" 2>/dev/null || { cat "$TMP/pgbench.log" >&2; fail "pgbench died early"; }
grep -qx "$PG_BENCH_PID" "$cg/cgroup.procs" && fail "pgbench $PG_BENCH_PID runs inside $cg"
nprocs=$(wc -l <"$cg/cgroup.procs")
((nprocs >= 5)) || fail "only $nprocs processes in $cg (want postmaster + 4 backends)"

# perf wants its event before -G (one cgroup per event) and -G needs -a.
perf record -e cpu-clock -G "$rel" -a --call-graph dwarf -F "$FREQ" -o "$TMP/perf.data" \
	-- sleep "$DUR" >"$TMP/perf-record.out" 2>&1 &
perf_pid=$!
bg_track "$perf_pid"
timeout $((DUR + 60)) "$AGENT" record -G "$rel" --call-graph dwarf -F "$FREQ" --duration "$DUR" \
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

# A minimal stackcollapse of `perf script` output: a header line per sample
# ("comm pid [cpu] time: period event:"), then one frame per line,
# "addr sym+off (dso)", leaf first, then a blank line. Output is
# "comm;root;...;leaf COUNT", the symbol's "+0x.." stripped, kernel frames
# (dso [kernel.kallsyms]) suffixed _[k] as the agent does, and any unknown
# symbol "[unknown]". perf ends a DWARF-unwound chain that it cut short
# (the 8 KiB stack copy ran out) with a pseudo-frame at ffffffffffffffff: it is
# a marker, not a frame (the agent simply stops there), so it is dropped;
# keeping it would hand the agent a free win in (c). The user-space DSOs seen
# are written to ARGV[2] for the alias table below.
cat >"$TMP/collapse.py" <<'EOF'
import re, sys
from collections import Counter
head = re.compile(r"^(\S.*?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?\d+\.\d+:")
frame = re.compile(r"^\s+([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$")
out, dsos = Counter(), set()
comm, frames = None, []

def flush():
    global comm, frames
    if comm is not None:
        out[";".join([comm] + frames[::-1])] += 1
    comm, frames = None, []

for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush()
        continue
    if not line[0].isspace():
        flush()
        m = head.match(line)
        comm = (m.group(1) if m else line.split()[0]).replace(" ", "_").replace(";", ":")
        continue
    m = frame.match(line)
    if not m or comm is None:
        continue
    addr, sym, dso = m.groups()
    if int(addr, 16) == 0xffffffffffffffff:
        continue
    if sym.startswith("[unknown]") or not sym:
        sym = "[unknown]"
    else:
        sym = re.sub(r"\+0x[0-9a-fA-F]+$", "", sym)
    if dso.startswith("[kernel"):
        sym += "_[k]"
    elif dso.startswith("/"):
        dsos.add(dso)
    frames.append(sym.replace(";", ":").replace(" ", "_"))
flush()
for k, v in sorted(out.items()):
    print(k, v)
with open(sys.argv[1], "w") as f:
    f.write("".join(d + "\n" for d in sorted(dsos)))
EOF
python3 "$TMP/collapse.py" "$TMP/perf.dsos" <"$TMP/perf.script" >"$TMP/perf.folded" ||
	fail "collapsing perf script output failed"

# Alias table: several symbols often share one address (__send, __libc_send,
# send) and each tool keeps its own pick. Map every exported name of the DSOs
# perf saw to one canonical name per (DSO, address) so a leaf compares as the
# same function in both profiles. Names that are ambiguous across DSOs are
# left alone.
if command -v nm >/dev/null; then
	while read -r dso; do
		nm -D --defined-only "$dso" 2>/dev/null | awk -v d="$dso" '$2 ~ /^[TtWwi]$/ { print d, $1, $3 }'
		nm --defined-only "$dso" 2>/dev/null | awk -v d="$dso" '$2 ~ /^[TtWwi]$/ { print d, $1, $3 }'
	done <"$TMP/perf.dsos" >"$TMP/aliases"
else
	: >"$TMP/aliases"
fi

python3 - "$TMP/cg.folded" "$TMP/perf.folded" "$TMP/aliases" "$TMP/agent.err" "$MIN_SAMPLES" <<'EOF'
import math, re, sys
from collections import Counter, defaultdict
ours_path, perf_path, alias_path, agent_err, min_samples = sys.argv[1:6]
min_samples = int(min_samples)
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

ours, perf = load(ours_path), load(perf_path)

# canonical alias name: per (dso, address) the sorted-first name
by_addr = defaultdict(set)
for line in open(alias_path):
    f = line.split()
    if len(f) == 3:
        by_addr[(f[0], f[1])].add(f[2].split("@")[0])
canon = {}
for names in by_addr.values():
    c = sorted(names)[0]
    for n in names:
        if canon.setdefault(n, c) != c:
            canon[n] = None  # conflicting: leave the name as it is
def canonical(name):
    if name.endswith("_[k]"):
        return name
    return canon.get(name) or name

def unnamed(frame):
    return "+0x" in frame or frame.startswith("[unknown") or frame.startswith("[unmapped")

def summary(stacks):
    total = sum(c for _, c in stacks)
    leaves, unnamed_leaves = Counter(), 0
    reach = frames = unnamed_frames = 0
    for fr, c in stacks:
        body = fr[1:]  # fr[0] is comm
        if not body:
            continue
        if unnamed(body[-1]):
            unnamed_leaves += c
        else:
            leaves[canonical(body[-1])] += c
        if "PostgresMain" in body or "main" in body:
            reach += c
        frames += len(body) * c
        unnamed_frames += sum(1 for f in body if unnamed(f)) * c
    return dict(total=total, leaves=leaves, unnamed_leaves=unnamed_leaves,
                reach=reach, frames=frames, unnamed_frames=unnamed_frames)

O, P = summary(ours), summary(perf)

kept = lost = None
for line in open(agent_err):
    m = re.search(r"(\d+) samples in [0-9.]+ s, (\d+) kept, (\d+) lost", line)
    if m:
        kept, lost = int(m.group(2)), int(m.group(3))
if kept is None:
    fails.append("no summary line on the agent's stderr")
else:
    if kept != O["total"]:
        fails.append(f"agent says {kept} samples kept, its folded stacks sum to {O['total']}")
    if lost:
        fails.append(f"agent lost {lost} samples")

print(f"# samples: agent {O['total']}, perf {P['total']} "
      f"({(O['total'] - P['total']) * 100 / max(P['total'], 1):+.1f}%)")
if P["total"] < min_samples:
    fails.append(f"perf has only {P['total']} samples (< {min_samples}): too few to compare, "
                 "was the load running in the cgroup?")
if O["total"] < min_samples:
    fails.append(f"agent has only {O['total']} samples (< {min_samples})")
# Same event, same frequency, same cgroup, same 6 s: only the ~tens of ms by
# which the windows differ and Poisson noise separate the counts.
if P["total"] and abs(O["total"] - P["total"]) > 0.15 * P["total"]:
    fails.append(f"sample counts differ by more than 15%: agent {O['total']}, perf {P['total']}")

# (a) ten hottest leaves. Unnamed leaves are left out on both sides: perf
# lumps every one into a single "[unknown]" bucket, the agent keeps them
# apart by address, so neither is a function to compare; (c) covers them.
# Ranks are by samples, then name; a leaf also counts as shared when it ties
# the other side's 10th count, since which of equal counts makes the cut is
# arbitrary.
def top(leaves, n=10):
    return sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

to, tp = top(O["leaves"]), top(P["leaves"])
def shared(a, b_leaves, b_top):
    cut = b_top[-1][1] if len(b_top) == 10 else 1
    bset = {k for k, _ in b_top}
    return [k for k, _ in a if k in bset or b_leaves.get(k, 0) >= max(cut, 1)]
s_op = shared(to, P["leaves"], tp)
s_po = shared(tp, O["leaves"], to)
overlap = min(len(s_op), len(s_po))
print("# ten hottest named leaves (samples, % of all samples; * = also in the other top 10):")
print(f"#   {'agent':<44} {'perf':<44}")
for i in range(10):
    def cell(t, s, tot):
        if i >= len(t):
            return ""
        k, v = t[i]
        return f"{'*' if k in s else ' '}{k[:30]:<30} {v:4d} {v * 100 / max(tot, 1):4.1f}%"
    print(f"#   {cell(to, s_op, O['total']):<44} {cell(tp, s_po, P['total']):<44}")
print(f"# unnamed leaves: agent {O['unnamed_leaves']} samples, perf {P['unnamed_leaves']} samples")
print(f"# (a) overlap of the top 10: {overlap}/10 (agent in perf's {len(s_op)}, perf in agent's {len(s_po)})")
if len(to) < 10 or len(tp) < 10:
    fails.append(f"fewer than 10 named leaves (agent {len(to)}, perf {len(tp)})")
elif overlap < 7:
    fails.append(f"(a) the ten hottest leaves overlap in {overlap} < 7")

# (b) stacks that reach PostgresMain (backends) or main (postmaster and
# auxiliary processes). Both tools copy the same 8 KiB of user stack, so the
# stacks that cannot get that far are the same for both; the agent's
# unwinding must be no worse than perf's. The two tools still take different
# samples (separate timers, phases tens of ms apart): the shares are two
# independent estimates of one proportion, ~1 point apart by chance at a
# few hundred samples where the proportion is ~95% (binomial standard error
# sqrt(p(1-p)/N) ~ 1 point each), hence a 1-point tolerance. It must not be
# wider: a systematic loss of one stack in 50 has to fail.
so = O["reach"] * 100 / max(O["total"], 1)
sp = P["reach"] * 100 / max(P["total"], 1)
print(f"# (b) samples reaching PostgresMain or main: agent {O['reach']}/{O['total']} = {so:.2f}%, "
      f"perf {P['reach']}/{P['total']} = {sp:.2f}% ({so - sp:+.2f} points)")
if so < sp - 1.0:
    fails.append(f"(b) agent reaches PostgresMain/main in {so:.2f}% of samples, perf in {sp:.2f}% "
                 "(tolerance 1 point)")

# (c) unnamed frames: the agent's "module+0xOFFSET" / "[unknown..." against
# perf's "[unknown]", as a share of all frames (the comm is not a frame).
uo = O["unnamed_frames"] * 100 / max(O["frames"], 1)
up = P["unnamed_frames"] * 100 / max(P["frames"], 1)
print(f"# (c) unnamed frames: agent {O['unnamed_frames']}/{O['frames']} = {uo:.2f}%, "
      f"perf {P['unnamed_frames']}/{P['frames']} = {up:.2f}%")
print(f"#     frames per sample: agent {O['frames'] / max(O['total'], 1):.1f}, "
      f"perf {P['frames'] / max(P['total'], 1):.1f}")
if not uo < up:
    fails.append(f"(c) agent leaves {uo:.2f}% of frames unnamed, perf {up:.2f}%: not fewer")

for f in fails:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if fails else 0)
EOF
rc=$?
((rc == 0)) || { KEEP_TMP=${KEEP_TMP:-}; fail "profiles disagree (files in $TMP if KEEP_TMP=1)"; }
info "ok"
