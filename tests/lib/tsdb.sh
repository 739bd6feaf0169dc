# Remote_write receivers for integration tests; source after common.sh.
#   prom_start PORT   a Prometheus (no scrapes, --web.enable-remote-write-
#                     receiver) on 127.0.0.1:PORT, data in $TMP/prom; PID in PROM
#   vm_start PORT     a VictoriaMetrics on 127.0.0.1:PORT, data in $TMP/vm
#                     (kept across restarts; queries see new data at once); PID in VM
#   tsdb_value PORT QUERY   the value of QUERY's one series on the TSDB at
#                     PORT (a VictoriaMetrics is flushed first); empty if not one
for c in prometheus victoria-metrics curl python3; do
	command -v $c >/dev/null || fail "$c missing (packaging/install-deps.sh installs it)"
done
prom_start() {
	printf 'global: {scrape_interval: 1m}\nscrape_configs: []\n' >"$TMP/prom.yml"
	prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom" \
		--web.listen-address="127.0.0.1:$1" --web.enable-remote-write-receiver \
		>"$TMP/prom.log" 2>&1 &
	PROM=$!; bg_track $PROM
	wait_http "http://127.0.0.1:$1/-/ready" "$(scaled 30)" "$TMP/prom.log"
}
vm_start() {
	victoria-metrics -httpListenAddr="127.0.0.1:$1" -storageDataPath="$TMP/vm" \
		-search.latencyOffset=0s -search.disableCache >>"$TMP/vm.log" 2>&1 &
	VM=$!; bg_track $VM
	wait_http "http://127.0.0.1:$1/health" "$(scaled 30)" "$TMP/vm.log"
}
tsdb_value() {
	curl -sf "http://127.0.0.1:$1/internal/force_flush" >/dev/null 2>&1 # VictoriaMetrics only
	curl -sf "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" |
		python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "")'
}
