#!/bin/bash
# Container identity from a real podman (issue 13): an image made here from
# Debian's busybox-static (podman import, no registry), containers started
# with labels.
#   - cgroups --json: name, image and a label through podman's API service
#     (started here on a socket of this test); name and image from podman's
#     store when no API service runs
#   - record --target container=NAME samples that container's busy loop only
#   - record --per-cgroup and trace --stacks name the container and its image
#     in its cgroup frame
#   - run, selecting cgroups by image and excluding one container by name: a
#     container started after the agent shows up with its name, image and an
#     allow-listed label (and not the other) on the agent's /metrics and the
#     exporter's /metrics,
#     /api/v1/targets and page, within one push interval of podman's answer
#     (3 s allowed for that); the excluded one does not; the exporter
#     restarted keeps the image (its SQLite store)
# holds: podman
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
command -v podman >/dev/null || skip "podman not installed (packaging/install-deps.sh installs it)"
command -v runc >/dev/null || skip "runc not installed"
[[ -x /bin/busybox ]] || skip "busybox-static not installed"
source "$(dirname "$0")/../lib/exporter.sh"
IMG=localhost/cgperf-busybox:test
A=cgperf-id-$$-a
B=cgperf-id-$$-b
SOCK=$TMP/podman.sock
PODRUN=(podman run -d --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

_podman_cleanup() {
	# one at a time: podman stops at a name it does not know
	podman rm -f -t 0 "$A" >/dev/null 2>&1
	podman rm -f -t 0 "$B" >/dev/null 2>&1
}
trap '_podman_cleanup; _cleanup' EXIT

if ! podman image exists "$IMG"; then
	busybox_tar "$TMP/img.tar"
	podman import --change 'CMD ["/bin/sh"]' "$TMP/img.tar" "$IMG" >/dev/null ||
		fail "podman import failed"
fi
"${PODRUN[@]}" --name "$A" --label team=db --label tier=gold "$IMG" \
	sh -c 'while :; do :; done' >/dev/null || fail "podman run $A failed"

# 1. cgroups, without and with the API service
CGPERF_PODMAN_SOCKET=$TMP/none.sock "$AGENT" cgroups --json --containers >"$TMP/c0.json" ||
	fail "cgroups --json failed"
podman system service --time=0 "unix://$SOCK" 2>"$TMP/podsvc.log" &
bg_track $!
for ((i = 0; i < $(scaled 10) * 10; i++)); do [[ -S $SOCK ]] && break; sleep 0.1; done
[[ -S $SOCK ]] || fail "podman system service did not create $SOCK in $(scaled 10)s: $(cat "$TMP/podsvc.log")"
export CGPERF_PODMAN_SOCKET=$SOCK
"$AGENT" cgroups --json --containers >"$TMP/c1.json" || fail "cgroups --json failed"
"$AGENT" cgroups --containers --labels >"$TMP/c1.txt" || fail "cgroups failed"
python3 - "$TMP/c0.json" "$TMP/c1.json" "$A" "$IMG" <<'PY' || fail "cgroups JSON: $(cat "$TMP/c0.json" "$TMP/c1.json")"
import json, sys
store, api, name, img = sys.argv[1:]
def find(path):
    for c in json.load(open(path))["cgroups"]:
        if c.get("container_name") == name:
            return c
    raise SystemExit(f"{name} not in {path}")
s, a = find(store), find(api)
assert s["runtime"] == "podman" and s["image"] == img, s
assert s["identity_source"] == "podman-store" and "labels" not in s, s
assert a["image"] == img and a["labels"] == {"team": "db", "tier": "gold"}, a
assert a["identity_source"] == "podman-api", a
PY
grep -q "$A .*$IMG" "$TMP/c1.txt" || fail "text listing lacks name and image: $(cat "$TMP/c1.txt")"
grep -q "label team=db" "$TMP/c1.txt" || fail "--labels lacks team=db: $(cat "$TMP/c1.txt")"
info "cgroups: $A, $IMG, labels team/tier (API); name and image from the store without it"

# 2. record --target container=NAME
record_target_only "container=$A" "$(podman inspect -f '{{.State.Pid}}' "$A")"
"$AGENT" record --target "container=nosuch-$$" --duration 1 -o "$TMP/none.folded" 2>/dev/null ||
	fail "record with an unmatched target failed"
[[ ! -s $TMP/none.folded ]] || fail "container=nosuch-$$ kept samples"
# its per-cgroup frame names it as stat does, then the image
"$AGENT" record --target "container=$A" --per-cgroup --duration 1 -o "$TMP/pc.folded" 2>"$TMP/pc.err" ||
	fail "record --per-cgroup failed: $(cat "$TMP/pc.err")"
grep -q "^podman:[0-9a-f]\{12\} $A ($IMG);" "$TMP/pc.folded" ||
	fail "record's cgroup frame lacks name and image: $(cut -d';' -f1 "$TMP/pc.folded" | sort -u)"
info "record --per-cgroup: $(cut -d';' -f1 "$TMP/pc.folded" | sort -u | head -1)"
# trace --stacks names it the same way in its cgroup frame (the busy loop
# is preempted: sched_switch fires in it)
acg=$(sed -n 's/^0:://p' "/proc/$(podman inspect -f '{{.State.Pid}}' "$A")/cgroup")
"$AGENT" trace -G "$acg" -e sched:sched_switch --stacks --duration 1 >"$TMP/tr.txt" 2>&1 ||
	fail "trace --stacks failed: $(tail -3 "$TMP/tr.txt")"
grep -q "^sched:sched_switch;podman:[0-9a-f]\{12\} $A ($IMG);" "$TMP/tr.txt" ||
	fail "trace --stacks cgroup frame lacks name and image: $(grep '^sched' "$TMP/tr.txt" | cut -d';' -f1-2 | sort -u | head -3)"
info "trace --stacks: $(grep -m1 '^sched:' "$TMP/tr.txt" | cut -d';' -f1-2)"

# 3. run: a container started after the agent, named within one interval
# of podman's answer
exporter_up
port=$(free_port)
interval=2
agent_yaml idtest "" \
	"cgroups: {include: [\"image=*/cgperf-busybox:*\"], exclude: [\"container=$A\"], containers_only: true}" \
	"push: {interval: ${interval}s, collectors: [\"$ex/api/v1/push\"], spool: {dir: $TMP/spool}}" \
	"metrics: {listen: \"127.0.0.1:$port\"}" "identity: {podman_socket: \"$SOCK\", labels: [team]}"
run_agent "$TMP/agent.yaml" "$port"
# B must come after the agent's start (its first scan of the cgroups)
for ((i = 0; i < $(scaled 10) * 10; i++)); do
	grep -q 'msg=started' "$TMP/run.log" && break
	sleep 0.1
done
grep -q 'msg=started' "$TMP/run.log" || fail "agent not started after $(scaled 10)s: $(tail -5 "$TMP/run.log")"
"${PODRUN[@]}" --name "$B" --label team=web --label secret=x "$IMG" \
	sh -c 'while :; do :; done' >/dev/null || fail "podman run $B failed"
# A push interval after podman's API has answered for B; that answer is
# podman's own work (a second idle, more on a busy machine): 3 s for it.
wait_named "$B" "$port" $(( (interval + 3) * 1000 * TIME_SCALE ))
line=$NAMED_LINE
# Named from podman's state files when its API is slow to answer (a loaded
# machine, over identity.timeout); the API, asked again with backoff (1 s,
# then 2 s), brings the labels: wait for them that long.
for ((i = 0; i < $(scaled 8) * 4; i++)); do
	[[ $line == *'container_label_team="web"'* ]] && break
	sleep 0.25
	line=$(curl -sf "http://127.0.0.1:$port/metrics" | grep -m1 "container_name=\"$B\"")
done
[[ $line == *"image=\"$IMG\""* ]] || fail "no image label: $line"
[[ $line == *'container_label_team="web"'* ]] || fail "no allow-listed label: $line"
[[ $line != *secret* ]] || fail "a label outside the allow-list: $line"
grep -q "container_name=\"$A\"" "$TMP/m.txt" && fail "$A is excluded by container=$A but on /metrics"
info "agent /metrics named $B after $NAMED_MS ms (interval ${interval}s): $line"

# the exporter, after the next push
for i in $(seq $(( 20 * TIME_SCALE ))); do
	curl -sf "$ex/metrics" >"$TMP/em.txt" || true
	grep -q "container_name=\"$B\".*image=\"$IMG\"" "$TMP/em.txt" && break
	sleep 0.5
done
grep -q "container_name=\"$B\"" "$TMP/em.txt" || fail "exporter /metrics lacks $B: $(grep cpu "$TMP/em.txt" | head -3)"
grep -q "container_name=\"$B\".*image=\"$IMG\"" "$TMP/em.txt" || fail "exporter /metrics lacks the image of $B: $(grep "$B" "$TMP/em.txt" | head -2)"
# the agent's allow-list decides which container labels travel: team does,
# secret does not
eline=$(grep -m1 "container_name=\"$B\"" "$TMP/em.txt")
[[ $eline == *'container_label_team="web"'* ]] || fail "exporter /metrics lacks the allow-listed label: $eline"
grep "container_name=\"$B\"" "$TMP/em.txt" | grep -q secret && fail "exporter /metrics has a label outside the allow-list: $eline"
curl -sf "$ex/api/v1/targets" >"$TMP/t.json" || fail "no /api/v1/targets"
python3 - "$TMP/t.json" "$B" "$IMG" <<'PY' || fail "targets: $(head -c 2000 "$TMP/t.json")"
import json, sys
d = json.load(open(sys.argv[1]))
text = json.dumps(d)
assert sys.argv[2] in text and sys.argv[3] in text
PY
curl -sf "$ex/index" >"$TMP/page.html" || fail "no page"
grep -q "$B" "$TMP/page.html" && grep -q "$IMG" "$TMP/page.html" ||
	fail "page's Containers table lacks $B or its image"
info "exporter: /metrics, /api/v1/targets and the page show $B and $IMG"

# SIGTERM: the agent stops (its lookup thread joined) and exits 0
kill -TERM $AG
for i in $(seq $(( 50 * TIME_SCALE ))); do kill -0 $AG 2>/dev/null || break; sleep 0.1; done
kill -0 $AG 2>/dev/null && fail "agent still running 5 s after SIGTERM: $(tail -5 "$TMP/run.log")"
wait $AG || fail "agent exited with $?: $(tail -5 "$TMP/run.log")"

# the exporter restarted on its data dir (no agent pushes any more): the
# image comes back from the SQLite store
exp_stop exporter
exporter_up
curl -sf "$ex/metrics" >"$TMP/em2.txt" || fail "no /metrics after a restart"
grep -q "container_name=\"$B\".*image=\"$IMG\"" "$TMP/em2.txt" ||
	fail "/metrics lost the image of $B across a restart: $(grep "$B" "$TMP/em2.txt" | head -2)"
curl -sf "$ex/api/v1/targets" >"$TMP/t2.json" || fail "no /api/v1/targets after a restart"
grep -q "$IMG" "$TMP/t2.json" || fail "/api/v1/targets lost $IMG across a restart: $(head -c 1500 "$TMP/t2.json")"
info "exporter restarted: /metrics and /api/v1/targets keep $IMG from the store"
