#!/bin/bash
# `run` with cgroups chosen by identity (issue 13): cgroups.include
# ["container=NAME"] and a config probe u:cgticker:cgperf_tick whose binary
# exists only inside that podman container's image (a static program built
# here, copied into the image; not in the host's PATH or anywhere on the
# host the agent would look). At the agent's start the container's cgroup
# waits for podman's answer; the probe is resolved among its processes once
# the runtime has answered, and the container's ticks (50 a second) are
# counted on the exporter's /metrics. Without that wait the agent stops at "bad probe".
# Then a second agent, started before its container exists: the probe waits
# for its binary, and is placed once the container runs (hits counted).
# holds: podman
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
source "$(dirname "$0")/../lib/exporter.sh"
command -v podman >/dev/null || skip "podman not installed (packaging/install-deps.sh installs it)"
command -v runc >/dev/null || skip "runc not installed"
command -v cc >/dev/null || skip "no C compiler for the test program"
[[ -x /bin/busybox ]] || skip "busybox-static not installed"
IMG=localhost/cgperf-ticker:$$
C=cgperf-rpc-$$
C2=cgperf-rpc-$$-late
PODRUN=(podman run -d --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

_podman_cleanup() {
	podman rm -f -t 0 "$C" >/dev/null 2>&1
	podman rm -f -t 0 "$C2" >/dev/null 2>&1
	podman rmi -f "$IMG" >/dev/null 2>&1
}
trap '_podman_cleanup; _cleanup' EXIT

cat >"$TMP/ticker.c" <<'C'
#include <unistd.h>
__attribute__((noinline)) int cgperf_tick(int i) { return i * 3; }
int main(void)
{
	volatile int s = 0;
	for (int i = 0;; i++) {
		s += cgperf_tick(i);
		usleep(20000);
	}
}
C
cc -static -O1 -o "$TMP/cgticker" "$TMP/ticker.c" || fail "cannot build the ticker"
busybox_tree "$TMP/img"
cp "$TMP/cgticker" "$TMP/img/bin/cgticker"
tar -C "$TMP/img" -cf "$TMP/img.tar" . || fail "cannot make the image tar"
podman import --change 'CMD ["/bin/cgticker"]' "$TMP/img.tar" "$IMG" >/dev/null ||
	fail "podman import failed"
"${PODRUN[@]}" --name "$C" "$IMG" /bin/cgticker >/dev/null || fail "podman run $C failed"
command -v cgticker >/dev/null && fail "a cgticker in PATH would hide what is tested"

exporter_up
# agent_config NAME PORT: the config of an agent following container NAME
agent_config() {
	agent_yaml rpctest "" "cgroups: {include: [\"container=$1\"], containers_only: true}" \
		'probes: [{spec: "u:cgticker:cgperf_tick"}]' "metrics: {listen: \"127.0.0.1:$2\"}" \
		'identity: {podman_socket: ""}'
}

# wait_hits NAME: until the exporter counts 50 ticks of container NAME (1 s
# of ticks; the rest of the bound is podman's answer, the probe's placing at
# a batch and the push, slower on a busy host)
wait_hits() {
	hits=0
	for i in $(seq $(( 60 * TIME_SCALE ))); do
		sleep 0.5
		curl -sf "$ex/metrics" >"$TMP/m.txt" || continue
		hits=$(awk -v n="container_name=\"$1\"" '/^cgperf_probe_hits_total\{/ && /cgperf_tick/ && index($0, n) { s += $NF } END { print s + 0 }' "$TMP/m.txt")
		((hits >= 50)) && break
	done
	((hits >= 50)) || fail "u:cgticker:cgperf_tick counted $hits hits in $1: $(grep probe_hits "$TMP/m.txt" | head -3; tail -5 "$TMP/run.log")"
}

port=$(free_port)
agent_config "$C" "$port"
run_agent "$TMP/agent.yaml" "$port"
wait_hits "$C"
info "run, cgroups by container=$C: u:cgticker:cgperf_tick resolved in the container, $hits hits"
kill -TERM $AG
wait $AG || fail "agent exited with $?: $(tail -5 "$TMP/run.log")"

# the container after the agent
port=$(free_port)
agent_config "$C2" "$port"
run_agent "$TMP/agent.yaml" "$port"
grep -q "probe waits for its binary" "$TMP/run.log" || fail "no wait logged: $(tail -3 "$TMP/run.log")"
"${PODRUN[@]}" --name "$C2" "$IMG" /bin/cgticker >/dev/null || fail "podman run $C2 failed"
wait_hits "$C2"
grep -q "probe placed" "$TMP/run.log" || fail "no placement logged: $(tail -3 "$TMP/run.log")"
info "run, container=$C2 started after the agent: the probe placed, $hits hits"
kill -TERM $AG
wait $AG || fail "agent exited with $?: $(tail -5 "$TMP/run.log")"
