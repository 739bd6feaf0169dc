#!/bin/bash
# Label cardinality stays bounded (issue 13): 1000 CRI-O containers (their
# config.json annotations, as CRI-O writes them, in a host root given by
# identity.root) with 20 labels each, one cgroup each. With identity.labels
# [app], the agent's /metrics names all 1000 (container_name, pod_name,
# namespace) and carries container_label_app and no other label of theirs;
# the exporter it pushes to, at --max-series 4000, takes every batch (no 429)
# and holds the 1000 cgroups' series, each with container_label_app and no
# other container label.
# holds: cgroups-1000
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
source "$(dirname "$0")/../lib/exporter.sh"
N=1000
base=$(cg_make card)
rel=${base#"$(cg2_mount)"}
python3 - "$TMP/root" "$base" $N <<'PY' || fail "cannot make the fake containers"
import hashlib, json, os, sys
root, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    cid = hashlib.sha256(b"c%d" % i).hexdigest()
    labels = {"app": "app%d" % (i % 10)}
    labels.update({"l%02d" % k: "v%d-%d" % (i, k) for k in range(19)})
    ann = {
        "io.kubernetes.container.name": "c%d" % i,
        "io.kubernetes.pod.name": "pod-%d" % i,
        "io.kubernetes.pod.namespace": "ns%d" % (i % 7),
        "io.kubernetes.cri-o.ImageName": "quay.io/example/img:%d" % (i % 3),
        "io.kubernetes.cri-o.ContainerType": "container",
        "io.kubernetes.cri-o.Labels": json.dumps(labels),
    }
    d = os.path.join(root, "run/containers/storage/overlay-containers", cid, "userdata")
    os.makedirs(d)
    json.dump({"ociVersion": "1.0.2-dev", "annotations": ann}, open(os.path.join(d, "config.json"), "w"))
    os.mkdir(os.path.join(base, "crio-%s.scope" % cid))
PY
exporter_up --max-series 4000
port=$(free_port)
agent_yaml cardtest "$rel/**" "push: {interval: 2s, collectors: [\"$ex/api/v1/push\"], spool: {dir: $TMP/spool}}" \
	"metrics: {listen: \"127.0.0.1:$port\"}" "identity: {root: \"$TMP/root\", labels: [app]}"
run_agent "$TMP/agent.yaml" "$port"
check() { # FILE: how many of the N containers are named, and label trouble
	python3 - "$1" $N <<'PY'
import re, sys
names, bad = set(), []
for line in open(sys.argv[1]):
    if not line.startswith("cgperf_cgroup_perf_events_total{"):
        continue
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
    extra = [k for k in labels if k.startswith("container_label_") and k != "container_label_app"]
    if extra:
        bad.append(extra)
    if labels.get("container_name", "").startswith("c"):
        i = int(labels["container_name"][1:])
        ok = (labels.get("pod_name") == "pod-%d" % i and labels.get("namespace") == "ns%d" % (i % 7)
              and labels.get("container_label_app", "app%d" % (i % 10)) == "app%d" % (i % 10))
        if ok:
            names.add(i)
        else:
            bad.append(labels)
print(len(names), len(bad))
PY
}
named=0
for i in $(seq $(( 30 * TIME_SCALE ))); do
	curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/m.txt" || true
	read -r named bad < <(check "$TMP/m.txt")
	(( bad == 0 )) || fail "$bad series with labels outside the allow-list or wrong names"
	(( named == N )) && break
	sleep 1
done
(( named == N )) || fail "$named of $N containers named on the agent's /metrics: $(tail -3 "$TMP/run.log")"
labels=$(grep -m1 'container_name="c1"' "$TMP/m.txt")
[[ $labels == *'container_label_app="app1"'* ]] || fail "no container_label_app: $labels"
info "agent: $N containers named, 20 labels each, one (app) on /metrics: $labels"
for i in $(seq $(( 20 * TIME_SCALE ))); do
	curl -sf "$ex/metrics" >"$TMP/em.txt" || true
	n=$(grep -c '^cgperf_cgroup_perf_events_total{.*container_name="c[0-9]*"' "$TMP/em.txt")
	(( n == N )) && break
	sleep 1
done
(( n == N )) || fail "exporter holds $n of $N named cgroups: $(tail -3 "$TMP/exporter.log")"
read -r en ebad < <(check "$TMP/em.txt")
(( ebad == 0 && en == N )) || fail "exporter: $en of $N named as the agent names them, $ebad with labels outside the allow-list"
napp=$(grep -c '^cgperf_cgroup_perf_events_total{.*container_label_app="app[0-9]"' "$TMP/em.txt")
(( napp == N )) || fail "exporter: $napp of $N cgroups carry container_label_app"
grep -q 'cgperf_agent_push_rejected_total{[^}]*} 0' <(curl -sf "http://127.0.0.1:$port/metrics") ||
	fail "the exporter refused batches (429 at --max-series 4000?)"
series=$(grep -c '^cgperf_' "$TMP/em.txt")
info "exporter: $n named cgroups with container_label_app only, $series series in all, under --max-series 4000"
kill -TERM $AG
for i in $(seq $(( 100 * TIME_SCALE ))); do kill -0 $AG 2>/dev/null || break; sleep 0.1; done
kill -0 $AG 2>/dev/null && fail "agent still running 10 s after SIGTERM: $(tail -3 "$TMP/run.log")"
wait $AG || fail "agent exited with $?: $(tail -3 "$TMP/run.log")"
