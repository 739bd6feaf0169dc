#!/bin/bash
# Container identity from a real dockerd (Debian's docker.io), started here
# on a socket, data root and exec root of this test, with no network setup
# (--bridge=none, --iptables=false: the machine has loopback only):
#   - cgroups: name, image and a label from GET /containers/ID/json
#   - record --target container=NAME samples that container only
#   - run (identity.docker_socket): a container started after the agent is
#     named, with its image and an allow-listed label, within one interval
# holds: containerd
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
command -v dockerd >/dev/null && command -v docker >/dev/null ||
	skip "docker.io not installed (packaging/install-deps.sh installs it)"
[[ -x /bin/busybox ]] || skip "busybox-static not installed"
D=$TMP/docker
mkdir -p "$D"
SOCK=$D/docker.sock
export DOCKER_HOST=unix://$SOCK
IMG=cgperf-busybox:test
A=cgperf-dk-$$-a
B=cgperf-dk-$$-b
DPID=
HAD_RUN=0
[[ -d /run/containerd ]] && HAD_RUN=1 # dockerd's containerd leaves state there

_docker_cleanup() {
	[[ -n $DPID ]] || return 0
	docker rm -f "$A" "$B" >/dev/null 2>&1
	kill -TERM "$DPID" 2>/dev/null
	for i in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$DPID" 2>/dev/null
	# overlay mounts of a dockerd that did not stop cleanly
	grep -o " $D/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	((HAD_RUN)) || rm -rf /run/containerd
	DPID=
}
trap '_docker_cleanup; _cleanup' EXIT

dockerd --iptables=false --ip6tables=false --bridge=none --host "unix://$SOCK" \
	--data-root "$D/root" --exec-root "$D/exec" --pidfile "$D/docker.pid" \
	--default-ulimit nofile=1024:1024 >"$D/log" 2>&1 &
DPID=$!
for i in $(seq $(( 300 * TIME_SCALE ))); do docker version >/dev/null 2>&1 && break; sleep 0.1; done
docker version >/dev/null 2>&1 || fail "dockerd did not start: $(tail -5 "$D/log")"
busybox_tar "$TMP/img.tar"
docker import --change 'CMD ["/bin/sh"]' "$TMP/img.tar" "$IMG" >/dev/null || fail "docker import failed"
RUN=(docker run -d --network none)
"${RUN[@]}" --name "$A" --label team=ops "$IMG" sh -c 'while :; do :; done' >/dev/null ||
	fail "docker run $A failed: $(tail -3 "$D/log")"
export CGPERF_DOCKER_SOCKET=$SOCK

cgroups_expect container_name "$A" "{\"runtime\": \"docker\", \"image\": \"$IMG\",
	\"labels\": {\"team\": \"ops\"}, \"identity_source\": \"docker-api\"}"
info "cgroups: $A, $IMG, team=ops from docker's API"
record_target_only "container=$A" "$(docker inspect -f '{{.State.Pid}}' "$A")"

port=$(free_port)
agent_yaml dktest "container=cgperf-dk-$$-*" "push: {interval: 2s, collectors: [], spool: {dir: $TMP/spool}}" \
	"metrics: {listen: \"127.0.0.1:$port\"}" "identity: {docker_socket: \"$SOCK\", labels: [team]}"
run_agent "$TMP/agent.yaml" "$port"
"${RUN[@]}" --name "$B" --label team=web "$IMG" sh -c 'while :; do :; done' >/dev/null ||
	fail "docker run $B failed"
# What the wait covers: the watch sees B's cgroup (the agent's loop wakes
# every 200 ms at most), the runtime cache asks dockerd (identity.timeout,
# 500 ms; dockerd answers an inspect only once the start it is doing is
# over), B is added at the next batch (2 s apart) and /metrics published
# with it. 3 s left a busy host half an interval; 5 s (15 s sanitized).
wait_named "$B" "$port" $(( 5000 * TIME_SCALE ))
line=$NAMED_LINE
[[ $line == *"image=\"$IMG\""* && $line == *'container_label_team="web"'* ]] ||
	fail "image or label missing: $line"
grep -q "container_name=\"$A\"" "$TMP/m.txt" || fail "$A (started before the agent) not on /metrics"
info "run: $B named after $NAMED_MS ms (interval 2 s): $line"
kill -TERM $AG
wait $AG || fail "agent exited with $?: $(tail -5 "$TMP/run.log")"
