#!/bin/bash
# Least privilege, proven: the agent as an unprivileged user with only the
# capabilities of cgperf-agent.service (CAP_PERFMON, CAP_SYS_PTRACE,
# CAP_DAC_READ_SEARCH in the ambient and bounding sets, through setpriv; plus
# CAP_SYS_ADMIN for uprobes and USDT probes, the probes drop-in), with
# kernel.perf_event_paranoid at Debian's default (3; restored after), on a
# PostgreSQL cluster of another user (postgres) in its own cgroup under pgbench
# and on a "container" (own mount namespace and root, its binary on a tmpfs
# that only its namespace sees):
#   stat, record -g (FP) and --call-graph dwarf of the cluster, record of the
#   container (frames named through /proc/PID/root), trace (tracepoint; uprobe
#   and USDT with CAP_SYS_ADMIN added), run (pushes stacks to an exporter);
# then without each capability in turn, the agent names the missing one and
# what it is for; and that CAP_SYS_ADMIN is the uprobe PMU's own check (a
# uprobe event made by root in tracefs is counted without it).
# holds: paranoid cgperf-user sdtprobe uprobe_events pg-uprobe
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pg.sh"
command -v setpriv >/dev/null && command -v unshare >/dev/null || skip "setpriv/unshare (util-linux) missing"
W=$BUILD_DIR/workloads
U=cgpriv$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || fail "useradd $U"
par=$(cat /proc/sys/kernel/perf_event_paranoid)
TPROBE=
priv_cleanup() {
	[[ -n $TPROBE ]] && perf probe -q -d "$TPROBE" >/dev/null 2>&1
	_cleanup
	echo "$par" >/proc/sys/kernel/perf_event_paranoid
	userdel "$U" 2>/dev/null
}
trap '_pg_cleanup; priv_cleanup' EXIT
echo 3 >/proc/sys/kernel/perf_event_paranoid || fail "cannot set perf_event_paranoid"
# The binary must be reachable by that user, as /usr/bin/cgperf-agent is.
for d in "$AGENT" "$(dirname "$AGENT")" "$(dirname "$(dirname "$AGENT")")"; do
	setpriv --reuid="$U" --regid="$U" --init-groups test -x "$d" ||
		skip "$d is not reachable by an unprivileged user (build tree under a private directory)"
done
ALL=+perfmon,+sys_ptrace,+dac_read_search
as() { # as CAPS CMD...: CMD as $U with exactly CAPS
	local c=$1; shift
	setpriv --reuid="$U" --regid="$U" --init-groups --inh-caps="$c" --ambient-caps="$c" --bounding-set="$c" \
		--no-new-privs "$@"
}
out=$TMP/out; mkdir -p "$out"; chown "$U" "$out"

cg=$(cg_make pg); _CG_MADE+=("$cg"); rel=${cg#"$(cg2_mount)"}
pg_start "$cg" 2
PGBIN=$PG_BIN/postgres
# (long enough for a slow machine; killed at exit)
pg_bench_start "$TMP/pgbench.log" -n -S -M simple -c 4 -j 2 -T "$(scaled 180)" -R 8000
# The "container": its own mount namespace whose root is a tmpfs that only it
# sees (pivot_root, as runc does), its own cgroup.
root=$TMP/root
mkdir -p "$root"
libs=$(ldd "$W/chain-nofp" | grep -oE '/[^ ]+' | tr '\n' ' ')
ccg=$(cg_make ctr); crel=${ccg#"$(cg2_mount)"}
sh -c "echo \$\$ > '$ccg/cgroup.procs'; exec unshare -m --propagation private sh -c '
	mount -t tmpfs ctr $root && mkdir -p $root/opt/app $root/old &&
	cp $W/chain-nofp $root/opt/app/ctrchain-$$ &&
	for l in $libs; do mkdir -p $root\$(dirname \$l) && cp -L \$l $root\$l || exit 1; done &&
	cd $root && pivot_root . old && exec /opt/app/ctrchain-$$ $(scaled 120)'" &
ctr=$!; bg_track $ctr
# one PID from sh to the container's binary: wait for that last exec (the
# comm is the name cut to 15 characters), and for pgbench's 4 sessions
cname=ctrchain-$$
cname=${cname:0:15}
for ((i = 0; i < $(scaled 20) * 10; i++)); do
	conns=$(pg_psql -Atc "select count(*) from pg_stat_activity where application_name = 'pgbench'" 2>/dev/null)
	[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] && ((${conns:-0} >= 4)) && break
	kill -0 $ctr 2>/dev/null || fail "the container exited"
	sleep 0.1
done
[[ $(cat /proc/$ctr/comm 2>/dev/null) == "$cname" ]] ||
	fail "pid $ctr is '$(cat /proc/$ctr/comm 2>/dev/null)', not $cname, after $(scaled 20)s"
((${conns:-0} >= 4)) || { tail "$TMP/pgbench.log"; fail "pgbench has ${conns:-no} of 4 sessions open after $(scaled 20)s"; }
[[ -e $root/opt/app/ctrchain-$$ ]] && fail "the container's binary is visible on the host"

# --- with the unit's capabilities: everything works
as $ALL "$AGENT" stat -G "$rel" -e task-clock --duration 1 >"$TMP/stat" 2>&1 || { cat "$TMP/stat"; fail "stat as $U"; }
tc=$(awk '/task-clock/ { gsub(",", "", $1); print int($1); exit }' "$TMP/stat")
((tc > 0)) || { cat "$TMP/stat"; fail "stat counted no task-clock in the PostgreSQL cgroup"; }
info "stat: task-clock $tc msec in $rel"

as $ALL "$AGENT" record -G "$rel" -g -F 199 --duration 2 -o "$out/fp.folded" >"$TMP/rfp" 2>&1 || { cat "$TMP/rfp"; fail "record -g as $U"; }
as $ALL "$AGENT" record -G "$rel" --call-graph dwarf -F 199 --duration 2 -o "$out/dw.folded" -v >"$TMP/rdw" 2>&1 ||
	{ cat "$TMP/rdw"; fail "record dwarf as $U"; }
for f in fp dw; do
	n=$(awk '{ s += $NF } END { print s + 0 }' "$out/$f.folded")
	named=$(awk '/PostgresMain|ServerLoop|PostmasterMain/ { s += $NF } END { print s + 0 }' "$out/$f.folded")
	info "record ($f): $n samples of postgres, $named through PostgresMain/ServerLoop"
	((n >= 20 && named * 2 >= n)) || { head "$out/$f.folded"; fail "record ($f) of postgres: $named of $n named"; }
done
as $ALL "$AGENT" record -G "$crel" --call-graph dwarf -F 199 --duration 1.5 -o "$out/ctr.folded" >"$TMP/rctr" 2>&1 ||
	{ cat "$TMP/rctr"; fail "record of the container as $U"; }
grep -q "ctrchain-$$.*chain_leaf" "$out/ctr.folded" || { head "$out/ctr.folded"; fail "container frames not named"; }

as $ALL,+sys_admin "$AGENT" trace -G "$rel" -e "sdt:postgresql:query__start@$PGBIN" -e "u:$PGBIN:pg_parse_query" \
	-e sched:sched_switch --duration 1.5 --json >"$out/t.json" 2>"$TMP/trace" || { cat "$TMP/trace"; fail "trace as $U"; }
python3 - "$out/t.json" <<'PY' || fail "trace hits"
import json, sys
h = {}
for r in (json.loads(l) for l in open(sys.argv[1])):
    k = r["probe"].split(":")[-1]
    h[k] = h.get(k, 0) + r["hits"]
print("# trace hits:", h)
assert all(h.get(k, 0) > 0 for k in ("query__start", "pg_parse_query", "sched_switch")), h
PY

port=$(free_port)
"$BUILD_DIR/cgperf-exporter" --listen 127.0.0.1:$port --data-dir "$TMP/exp" >"$TMP/exp.log" 2>&1 & ep=$!; bg_track $ep
wait_http http://127.0.0.1:$port/healthz "$(scaled 10)" "$TMP/exp.log"
cat >"$out/agent.yaml" <<EOT
host: { agent_id_file: $out/agent-id }
cgroups: { include: ["$rel"] }
sampling: { call_graph: dwarf }
push: { interval: 1s, collectors: ["http://127.0.0.1:$port/api/v1/push"], spool: { dir: $out/spool } }
EOT
chown "$U" "$out/agent.yaml"
# (setpriv itself in the background, so $ap is the agent's PID)
setpriv --reuid="$U" --regid="$U" --init-groups --inh-caps=$ALL --ambient-caps=$ALL --bounding-set=$ALL --no-new-privs \
	"$AGENT" run --config "$out/agent.yaml" >"$TMP/run.log" 2>&1 & ap=$!; bg_track $ap
ok=0
for i in $(seq 1 $(scaled 30)); do
	curl -fsS "http://127.0.0.1:$port/api/v1/stacks?format=folded" 2>/dev/null | grep -q PostgresMain && { ok=1; break; }
	sleep 0.5
done
((ok)) || { tail "$TMP/run.log"; fail "run as $U pushed no PostgreSQL stacks"; }
kill -TERM $ap; wait $ap || fail "run as $U exited $?"
info "stat, record (fp, dwarf, container), trace (tracepoint), run: all work as $U with $ALL; usdt, uprobe with +sys_admin"

# --- without each capability: the agent names it
as +sys_ptrace,+dac_read_search "$AGENT" stat -G "$rel" --duration 0.5 >"$TMP/np" 2>&1 && fail "stat without CAP_PERFMON succeeded"
grep -q CAP_PERFMON "$TMP/np" || { cat "$TMP/np"; fail "no CAP_PERFMON in the error"; }
as +perfmon,+sys_ptrace "$AGENT" trace -G "$rel" -e sched:sched_switch --duration 0.5 >"$TMP/nd" 2>&1 &&
	fail "tracepoint without CAP_DAC_READ_SEARCH succeeded"
grep -q CAP_DAC_READ_SEARCH "$TMP/nd" || { cat "$TMP/nd"; fail "no CAP_DAC_READ_SEARCH in the error"; }
as +perfmon,+dac_read_search "$AGENT" record -G "$crel" --call-graph dwarf -F 199 --duration 1 -o "$out/np.folded" >"$TMP/nt" 2>&1
grep -q 'CAP_SYS_PTRACE is missing' "$TMP/nt" || { cat "$TMP/nt"; fail "record without CAP_SYS_PTRACE does not say so"; }
grep -q "ctrchain-$$.*chain_leaf" "$out/np.folded" && fail "container frames named without CAP_SYS_PTRACE?"
as $ALL "$AGENT" trace -G "$rel" -e "u:$PGBIN:pg_parse_query" --duration 0.5 >"$TMP/ns" 2>&1 &&
	fail "uprobe without CAP_SYS_ADMIN succeeded (the unit could drop the probes drop-in)"
grep -q CAP_SYS_ADMIN "$TMP/ns" || { cat "$TMP/ns"; fail "no CAP_SYS_ADMIN in the uprobe error"; }

# --- why CAP_SYS_ADMIN: the check is the uprobe PMU's, not the uprobe's.
# Linux 6.16 (ba677dbe77af, "perf: Revert to requiring CAP_SYS_ADMIN for
# uprobes", also in the stable kernels) made perf_uprobe_event_init() ask
# capable(CAP_SYS_ADMIN) again instead of perfmon_capable(). The same
# function as a uprobe event that root defined in tracefs (perf probe) is an
# ordinary tracepoint to perf_event_open, and the agent counts it with the
# unit's three capabilities: every one of 100 calls.
command -v perf >/dev/null && perf --version >/dev/null 2>&1 || fail "perf missing (linux-perf)"
TPROBE=cgpriv:f$$
perf probe -q -x "$W/sdtprobe" -a "$TPROBE=fire" >"$TMP/pp" 2>&1 || { cat "$TMP/pp"; fail "perf probe failed"; }
# sdtprobe as trace's command (its own output dropped): started once the
# event is open, traced until it exits (-a: wherever it runs)
as $ALL "$AGENT" trace -a -e "$TPROBE" --json -- sh -c 'exec "$0" 100 >/dev/null' "$W/sdtprobe" \
	>"$out/tp.json" 2>"$TMP/tp" ||
	{ cat "$TMP/tp"; fail "trace of a tracefs uprobe as $U"; }
hits=$(python3 -c 'import json, sys; print(sum(json.loads(l)["hits"] for l in open(sys.argv[1])))' "$out/tp.json")
((hits == 100)) || { cat "$TMP/tp" "$out/tp.json"; fail "tracefs uprobe as $U: $hits hits of 100"; }
info "a root-made tracefs uprobe ($TPROBE on fire) counted $hits/100 as $U with $ALL: only the uprobe PMU wants CAP_SYS_ADMIN"
echo "PASS: privilege (as $U with CAP_PERFMON+CAP_SYS_PTRACE+CAP_DAC_READ_SEARCH, paranoid 3; each missing one named)"
