#!/bin/bash
# The packages' systemd units: `systemd-analyze verify` clean, exposure of
# cgperf-exporter.service 2.5 or lower (offline), the agent's capabilities
# exactly CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH; then both
# services' command lines run as the units run them (no systemd PID 1 here:
# setpriv with the unit's user and capabilities): the agent pushes to the
# exporter, reloads on SIGHUP (ExecReload), and both stop on SIGTERM.
# holds: dpkg cgperf-user var-lib-cgperf
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pkg.sh"
pkg_setup dpkg-buildpackage systemd-analyze setpriv
pkg_build
debs=("${PKG_DEBS[@]}")
dpkg -i "${debs[@]}" >"$TMP/dpkg" 2>&1 || { cat "$TMP/dpkg"; fail "dpkg -i failed"; }

U=/lib/systemd/system
systemd-analyze verify --man=no $U/cgperf-agent.service $U/cgperf-exporter.service >"$TMP/verify" 2>&1 ||
	{ cat "$TMP/verify"; fail "systemd-analyze verify"; }
[[ -s $TMP/verify ]] && { cat "$TMP/verify"; fail "systemd-analyze verify is not silent"; }
for u in agent exporter; do
	systemd-analyze security --offline=true $U/cgperf-$u.service >"$TMP/sec-$u" 2>&1
	x=$(sed -n 's/.*Overall exposure level for cgperf-'$u'.service: \([0-9.]*\).*/\1/p' "$TMP/sec-$u")
	[[ -n $x ]] || { cat "$TMP/sec-$u"; fail "no exposure level for cgperf-$u"; }
	info "cgperf-$u.service exposure $x"
	eval "exp_$u=$x"
done
awk -v x="$exp_exporter" 'BEGIN { exit !(x <= 2.5) }' || fail "cgperf-exporter exposure $exp_exporter > 2.5"
prop() { sed -n "s/^$2=//p" $U/$1 | tr ' ' '\n' | sort | tr '\n' ' '; }
want="CAP_DAC_READ_SEARCH CAP_PERFMON CAP_SYS_PTRACE "
[[ $(prop cgperf-agent.service AmbientCapabilities) == "$want" ]] || fail "agent ambient caps: $(prop cgperf-agent.service AmbientCapabilities)"
[[ $(prop cgperf-agent.service CapabilityBoundingSet) == "$want" ]] || fail "agent bounding set differs"
[[ -z $(prop cgperf-exporter.service CapabilityBoundingSet | tr -d " ") ]] || fail "exporter has capabilities"
grep -q '^User=cgperf$' $U/cgperf-agent.service && grep -q '^User=cgperf$' $U/cgperf-exporter.service || fail "not User=cgperf"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' $U/cgperf-agent.service || fail "no SIGHUP ExecReload"

# The command lines, as the units run them, on a free port.
port=$(free_port)
sed "s/127.0.0.1:9464/127.0.0.1:$port/" /etc/cgperf/exporter.yaml >"$TMP/exporter.yaml"
sed -e "s/127.0.0.1:9464/127.0.0.1:$port/" -e 's/interval: 10s/interval: 1s/' /etc/cgperf/agent.yaml >"$TMP/agent.yaml"
chmod 644 "$TMP"/*.yaml; chmod 755 "$TMP"
setpriv --reuid=cgperf --regid=cgperf --init-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
	/usr/bin/cgperf-exporter --config "$TMP/exporter.yaml" >"$TMP/exp.log" 2>&1 & ep=$!; bg_track $ep
wait_http http://127.0.0.1:$port/healthz "$(scaled 10)" "$TMP/exp.log"
caps=+perfmon,+sys_ptrace,+dac_read_search
setpriv --reuid=cgperf --regid=cgperf --init-groups --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps \
	--no-new-privs /usr/bin/cgperf-agent run --config "$TMP/agent.yaml" >"$TMP/agent.log" 2>&1 & ap=$!; bg_track $ap
ok=0
for i in $(seq 1 $(scaled 40)); do
	curl -fsS http://127.0.0.1:$port/metrics 2>/dev/null | grep -q '^cgperf_cgroup_cpu' && { ok=1; break; }
	sleep 0.5
done
((ok)) || { tail -20 "$TMP/agent.log"; fail "no per-cgroup CPU metric pushed by the agent as cgperf"; }
grep -Ei 'permission|EPERM|EACCES|capab' "$TMP/agent.log" && fail "the agent as cgperf logged permission errors"
echo "# reload" >>"$TMP/agent.yaml"
kill -HUP $ap
# the reload comes after the interval's last batch: wait for its log line
for ((i = 0; i < $(scaled 20) * 10; i++)); do
	grep -q 'msg="config reloaded"\|msg="reload failed' "$TMP/agent.log" && break
	kill -0 $ap 2>/dev/null || break
	sleep 0.1
done
kill -0 $ap || { tail "$TMP/agent.log"; fail "the agent died on SIGHUP"; }
grep -q 'msg="config reloaded"' "$TMP/agent.log" ||
	{ tail "$TMP/agent.log"; fail "no 'config reloaded' in the agent's log $(scaled 20)s after SIGHUP"; }
kill -TERM $ap $ep; wait $ap; ra=$?; wait $ep; re=$?
((ra == 0 && re == 0)) || fail "exit status on SIGTERM: agent $ra, exporter $re"
echo "PASS: pkg_units (verify clean, exporter exposure $exp_exporter, agent $exp_agent; both run as cgperf)"
