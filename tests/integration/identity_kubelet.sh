#!/bin/bash
# Pod labels from the kubelet's /pods (issue 13, optional): the kubelet is
# not in Debian, so a small local TLS server stands in for it here (python3
# http.server with ssl, a self-signed certificate made with openssl in this
# test, a bearer token it checks, a PodList fixture). It is only that: the
# real kubelet's authorization (RBAC on nodes/proxy) is not exercised.
#   - cgroups --json (CGPERF_KUBELET_*): a pod's cgroups get its name,
#     namespace and labels from the list, matched by the UID in the path
#     (also a static pod's 32-hex UID); a wrong token or an unchecked
#     certificate gives no labels and no failure
#   - run with identity.kubelet_*: a CRI-O container (config.json) keeps
#     its own name and labels, gets its pod's other labels, and the
#     allow-list picks which reach /metrics
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/containers.sh"
need openssl python3
base=$(cg_make kube)
rel=${base#"$(cg2_mount)"}
U1=3f2a9c0b-1d4e-4a5b-8c6d-7e8f9a0b1c2d
U2=6f1c2e3d4b5a69788796a5b4c3d2e1f0
CID=$(printf 'kube-%s' $$ | sha256sum | cut -c1-64)
P1=$base/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${U1//-/_}.slice
P2=$base/kubepods.slice/kubepods-pod$U2.slice
mkdir -p "$P1/crio-$CID.scope" "$P2" || fail "cannot make the pod cgroups"
_kube_cleanup() { rmdir "$P1/crio-$CID.scope" "$P1" "$P2" "$base/kubepods.slice/kubepods-besteffort.slice" \
	"$base/kubepods.slice" 2>/dev/null; }
trap '_kube_cleanup; _cleanup' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 \
	-subj /CN=kubelet -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || fail "openssl req failed"
echo "tok-$$-secret" >"$TMP/token"
python3 - "$TMP/pods.json" "$U1" "$U2" <<'PY' || fail "cannot write the fixture"
import json, sys
pod = lambda uid, name, ns, labels: {"metadata": {"name": name, "namespace": ns, "uid": uid,
    "labels": labels, "managedFields": [{"fieldsV1": {"f:spec": {"f:containers": {"k:{}": {
    "f:env": {"k:{}": {"f:valueFrom": {"f:fieldRef": {"f:fieldPath": {}}}}}}}}}}]},
    "spec": {"containers": [{"name": "app"}]}, "status": {"phase": "Running"}}
json.dump({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [
    pod(sys.argv[2].upper(), "web-0", "shop", {"app": "web", "team": "db", "pod-template-hash": "5d9"}),
    pod(sys.argv[3], "etcd-node1", "kube-system", {"tier": "control-plane"})]}, open(sys.argv[1], "w"))
PY
kport=$(free_port)
python3 - "$kport" "$TMP" <<'PY' >"$TMP/kubelet.log" 2>&1 &
import http.server, ssl, sys
port, d = int(sys.argv[1]), sys.argv[2]
token = open(d + "/token").read().strip()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer " + token
        code = 404 if self.path != "/pods" else 200 if ok else 401
        body = open(d + "/pods.json", "rb").read() if code == 200 else b"{}"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, fmt, *a):
        print(fmt % a, flush=True)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/cert.pem", d + "/key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PY
bg_track $!
URL=https://127.0.0.1:$kport
for ((i = 0; i < $(scaled 100); i++)); do curl -sf --cacert "$TMP/cert.pem" -H "Authorization: Bearer $(cat "$TMP/token")" \
	"$URL/pods" >/dev/null && break; sleep 0.1; done
curl -sf --cacert "$TMP/cert.pem" -H "Authorization: Bearer $(cat "$TMP/token")" "$URL/pods" >/dev/null ||
	fail "the stand-in kubelet does not answer: $(cat "$TMP/kubelet.log")"

# 1. cgroups: names and labels from the list, by UID
kube_cgroups() { # OUT TOKEN CA
	CGPERF_KUBELET_URL=$URL CGPERF_KUBELET_TOKEN_FILE=$2 CGPERF_KUBELET_CA_FILE=$3 \
		"$AGENT" cgroups --json --containers "$rel" >"$1" || fail "cgroups --json failed"
}
kube_cgroups "$TMP/c1.json" "$TMP/token" "$TMP/cert.pem"
echo wrong >"$TMP/bad"
kube_cgroups "$TMP/c2.json" "$TMP/bad" "$TMP/cert.pem"
kube_cgroups "$TMP/c3.json" "$TMP/token" ""
python3 - "$TMP" "$CID" "$U2" <<'PY' || fail "cgroups JSON: $(cat "$TMP/c1.json")"
import json, sys
d, cid, u2 = sys.argv[1:]
def cgs(n):
    return json.load(open("%s/c%d.json" % (d, n)))["cgroups"]
ok = [c for c in cgs(1) if c.get("pod_name") == "web-0"]
ctr = [c for c in ok if cid in c["path"]]
assert ctr, cgs(1)
for c in ok:
    assert c["namespace"] == "shop" and c["labels"] == {"app": "web", "team": "db", "pod-template-hash": "5d9"}, c
static = [c for c in cgs(1) if c.get("pod_name") == "etcd-node1"]
assert static and static[0]["labels"] == {"tier": "control-plane"}, cgs(1)
for n in (2, 3):
    assert not [c for c in cgs(n) if "labels" in c or "pod_name" in c], cgs(n)
PY
grep -q '"GET /pods HTTP/1.1" 401' "$TMP/kubelet.log" || fail "the wrong token was not refused: $(cat "$TMP/kubelet.log")"
info "cgroups: web-0 (shop) and the static pod etcd-node1 named and labelled from /pods; wrong token or unchecked certificate: no labels"

# 2. run: the CRI-O container's own name and labels, its pod's labels, the allow-list
d=$TMP/root/run/containers/storage/overlay-containers/$CID/userdata
mkdir -p "$d"
cat >"$d/config.json" <<JSON
{"ociVersion": "1.0.2-dev", "annotations": {"io.kubernetes.container.name": "app",
 "io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "shop",
 "io.kubernetes.cri-o.ImageName": "quay.io/example/web:1", "io.kubernetes.cri-o.ContainerType": "container",
 "io.kubernetes.cri-o.Labels": "{\"app\": \"own\", \"io.kubernetes.pod.uid\": \"$U1\"}"}}
JSON
port=$(free_port)
cat >"$TMP/agent.yaml" <<YAML
host: {name: kubetest, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel/**"]}
counters: {events: [task-clock]}
sampling: {enabled: false}
push: {interval: 1s, collectors: ["http://127.0.0.1:1/api/v1/push"], spool: {dir: $TMP/spool}}
metrics: {listen: "127.0.0.1:$port"}
identity: {root: "$TMP/root", labels: [app, team], kubelet_url: "$URL",
           kubelet_token_file: "$TMP/token", kubelet_ca_file: "$TMP/cert.pem"}
YAML
run_agent "$TMP/agent.yaml" "$port"
wait_named app "$port" $(( 5000 * TIME_SCALE ))
for i in $(seq $(( 20 * TIME_SCALE ))); do
	[[ $NAMED_LINE == *container_label_team=* ]] && break
	sleep 0.2
	wait_named app "$port" 1000
done
line=$NAMED_LINE
[[ $line == *'pod_name="web-0"'*'namespace="shop"'* ]] || fail "no pod: $line"
[[ $line == *'container_label_app="own"'* ]] || fail "the container's own label lost to the pod's: $line"
[[ $line == *'container_label_team="db"'* ]] || fail "no pod label from the kubelet: $line"
[[ $line != *pod_template_hash* ]] || fail "a label outside the allow-list: $line"
info "run: $line"
kill -TERM $AG
wait $AG || fail "agent exited with $?: $(tail -3 "$TMP/run.log")"
