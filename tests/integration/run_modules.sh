#!/bin/bash
# cgperf-agent run: every pushed stack carries, per frame, the binary it was
# found in (path as the process saw it, build-id as `readelf -n` reads it,
# [kernel.kallsyms] for kernel frames, none for the comm frame), on a real
# PostgreSQL under pgbench; and binaries no process maps any more are
# dropped: N short-lived processes, each running its own copy of a binary,
# leave the agent's object count near where it was instead of N higher.
# holds: pg-uprobe
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
W=$BUILD_DIR/workloads
N=30
[[ -x $W/spin ]] || fail "workload $W/spin not built"
command -v readelf >/dev/null || fail "readelf (binutils) missing"
cg_new mod
pg_start "$cg" 1
port=$(free_port)
mport=$(free_port)
[[ $mport != "$port" ]] || mport=$(free_port)
mkdir -p "$TMP/fc" "$TMP/bin"
python3 "$ROOT/tests/lib/fake_collector.py" --dir "$TMP/fc" --port $port >"$TMP/fc.log" 2>&1 &
FC=$!; bg_track $FC
for ((i = 0; i < $(scaled 50); i++)); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
	sleep 0.1
done
cat >"$TMP/agent.yaml" <<YAML
host: {name: test-host, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock]}
sampling: {frequency: 499, call_graph: dwarf}
push: {interval: 1s, collectors: ["http://127.0.0.1:$port/api/v1/push"], timeout: 2s, spool: {dir: $TMP/spool}}
metrics: {listen: "127.0.0.1:$mport"}
log: {level: debug}
YAML
# The agent's object figures from its /metrics: "OBJECTS DROPPED", once the
# first batch is out.
objects() {
	curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk '
		/^cgperf_agent_symbol_objects\{/ { o = $2 }
		/^cgperf_agent_symbol_objects_dropped_total\{/ { d = $2 }
		END { if (o != "" && d != "") print o, d }'
}
# The agent's batch count on its /metrics (0 when none yet).
batches() {
	curl -fsS "http://127.0.0.1:$mport/metrics" 2>/dev/null |
		awk '/^cgperf_agent_batches_total\{/ { n = $2 } END { print n + 0 }'
}
# N copies of one binary: N inodes, N objects for the agent.
for i in $(seq $N); do cp "$W/spin" "$TMP/bin/spin-$i"; done

pg_bench_start "$TMP/pgbench.log" -n -S -c 2 -j 1 -T 60 -R 1500
agent_run "$TMP/run.log" --config "$TMP/agent.yaml"
for ((i = 0; i < $(scaled 100); i++)); do
	base=$(objects) && [[ -n $base ]] && break
	sleep 0.2
done
[[ -n $base ]] || fail "no object figures on /metrics: $(tail -n 5 "$TMP/run.log")"
# The base: the count once it holds still from one batch to the next (the
# server's and pgbench's backends all mapped).
b=$(batches)
for ((i = 0; i < $(scaled 100); i++)); do
	sleep 0.2
	(($(batches) > b)) || continue
	b=$(batches)
	now=$(objects)
	[[ ${now% *} == "${base% *}" ]] && break
	base=$now
done
# One copy at a time, each a short-lived process in the followed cgroup.
for i in $(seq $N); do
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 0.25' sh "$cg" "$TMP/bin/spin-$i" ||
		fail "copy $i did not run"
	objects >>"$TMP/during"
done
# Exited processes are forgotten two intervals (1 s each) after their exit;
# wait until the count is back down, or long enough to know it is not.
for ((i = 0; i < $(scaled 75); i++)); do
	last=$(objects)
	read -r o d <<<"$last"
	((o <= ${base% *} + 2)) && break
	sleep 0.2
done
kill -TERM $ag
wait $ag || fail "run failed: $(tail -n 20 "$TMP/run.log")"
grep -v 'level=debug' "$TMP/run.log" | head -20
echo "$base" "$last" "$(sort -n "$TMP/during" | tail -n1)" >"$TMP/objects"

# The agent flushed its queue before it exited; a batch the collector was
# still writing when the agent gave up on it may land a moment later.
queued=$(sed -n 's/.*msg="batch queued" seq=\([0-9]*\).*/\1/p' "$TMP/run.log")
for ((i = 0; i < $(scaled 50); i++)); do
	missing=0
	for s in $queued; do [[ -e $TMP/fc/body-$s ]] || missing=$((missing + 1)); done
	((missing == 0)) && break
	grep -q 'still spooled' "$TMP/run.log" && break
	sleep 0.1
done
((missing == 0)) || info "$missing queued batches not received (spooled at the stop)"
for f in "$TMP"/fc/body-*; do "$AGENT" wire-dump "$f"; done >"$TMP/batches.jsonl" ||
	fail "a received batch does not decode"
pg_bid=$(readelf -n "$PG_BIN/postgres" | awk '/Build ID:/ { print $3 }')
spin_bid=$(readelf -n "$W/spin" | awk '/Build ID:/ { print $3 }')
libc=$(awk '$6 ~ /\/libc[.-]/ { print $6; exit }' "/proc/$PG_PID/maps")
libc_bid=$(readelf -n "$libc" | awk '/Build ID:/ { print $3 }')
kbid=$(perf buildid-list -k 2>/dev/null) # what perf reads from /sys/kernel/notes
info "postgres $pg_bid, spin $spin_bid, $libc $libc_bid, kernel ${kbid:-?}"
[[ -n $pg_bid && -n $spin_bid ]] || fail "readelf found no build-ids"

python3 - "$TMP/batches.jsonl" "$TMP/objects" "$PG_BIN/postgres" "$pg_bid" "$TMP/bin/spin-" \
	"$spin_bid" "$libc" "$libc_bid" "$kbid" $N <<'PY' || fail "modules or object counts wrong"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pg, pg_bid, spin_prefix, spin_bid, libc, libc_bid, kbid = sys.argv[3:10]
n = int(sys.argv[10])

stacks = frames = pg_frames = k_frames = libc_frames = 0
spin_paths = set()
for r in rows:
    mods = r["modules"]
    for p in r["profiles"]:
        assert len(p["folded"]) == len(p["frame_modules"])
        for line, fm in zip(p["folded"], p["frame_modules"]):
            names = line.rsplit(" ", 1)[0].split(";")
            stacks += 1
            assert len(fm) == len(names), f"{len(fm)} modules for {len(names)} frames: {line}"
            assert fm[0] == 0, f"the comm frame has a module: {line} {fm}"
            for name, m in zip(names[1:], fm[1:]):
                frames += 1
                mod = mods[m - 1] if m else None
                if name.endswith("_[k]"):
                    assert mod and mod["path"] == "[kernel.kallsyms]", f"kernel frame {name} in {mod}"
                    if kbid:
                        assert mod["build_id"] == kbid, f"kernel build-id {mod['build_id']} != {kbid}"
                    k_frames += 1
                m2 = re.match(r"(.*)\+0x[0-9a-f]+$", name)
                if m2 and m2.group(1) == "postgres":
                    assert mod and mod["path"] == pg, f"{name} in {mod}, not {pg}"
                    assert mod["build_id"] == pg_bid, f"postgres build-id {mod['build_id']} != {pg_bid}"
                    pg_frames += 1
                if mod and mod["path"] == pg:
                    assert mod["build_id"] == pg_bid
                if mod and mod["path"] == libc:
                    assert mod["build_id"] == libc_bid, f"libc build-id {mod['build_id']} != {libc_bid}"
                    libc_frames += 1
                if mod and mod["path"].startswith(spin_prefix):
                    assert mod["build_id"] == spin_bid
                    spin_paths.add(mod["path"])
                if name == "main" and line.startswith("spin-"):
                    assert mod and mod["path"].startswith(spin_prefix), f"spin's main in {mod}"
print(f"# {len(rows)} batches, {stacks} stacks, {frames} frames: {pg_frames} postgres+0x.., "
      f"{libc_frames} in libc, {k_frames} kernel; {len(spin_paths)} of {n} spin copies seen")
assert pg_frames > 100 and libc_frames > 0, "too few postgres or libc frames to judge"
# Every copy was sampled, so every copy was an object at some point.
assert len(spin_paths) >= 0.8 * n, f"only {len(spin_paths)} copies sampled"

b_obj, b_drop, l_obj, l_drop, peak, _ = (int(x) for x in open(sys.argv[2]).read().split())
print(f"# objects: {b_obj} before the copies, peak {peak} while they ran, {l_obj} after; "
      f"{l_drop - b_drop} dropped")
# Without dropping the count would end at the base + n or more.
assert l_obj <= b_obj + n // 4, f"objects grew from {b_obj} to {l_obj} with {n} copies run"
assert l_drop - b_drop >= 0.9 * len(spin_paths), \
    f"only {l_drop - b_drop} objects dropped after {len(spin_paths)} copies were sampled"
PY
exit 0
