# Exporters for integration tests; source after common.sh.
#   exp_start NAME PORT ARGS...  start cgperf-exporter on 127.0.0.1:PORT with
#                 data dir $TMP/NAME (kept across restarts) and log
#                 $TMP/NAME.log; waits for /healthz (EXP_WAIT seconds,
#                 10, scaled); its PID in EXP_PID[NAME]
#   exp_stop NAME [SIGNAL]       signal it (TERM) and reap it
#   exp_metric PORT NAME [LABEL_RE]  the sum of NAME's samples on /metrics
#                 whose labels match LABEL_RE (0 when none)
#   exp_wait_metric PORT NAME MIN SECONDS [LABEL_RE]  poll exp_metric until
#                 it is at least MIN, for at most SECONDS (scaled); prints
#                 the last value (the caller asserts on it)
#   free_ports N  N different free ports (free_port), on one line
#   exporter_up ARGS...  a test's one exporter: exp_start exporter on
#                 $ex_port (a free port unless set, so a restart keeps it);
#                 $ex is its URL, $EX_PID its PID
EXPORTER=${CGPERF_EXPORTER:-$(dirname "$AGENT")/cgperf-exporter}
[[ -x $EXPORTER ]] || fail "exporter binary $EXPORTER not built"
declare -A EXP_PID
exp_start() {
	local n=$1 p=$2
	shift 2
	"$EXPORTER" --listen "127.0.0.1:$p" --data-dir "$TMP/$n" "$@" 2>>"$TMP/$n.log" &
	EXP_PID[$n]=$!
	bg_track $!
	wait_http "http://127.0.0.1:$p/healthz" "$(scaled "${EXP_WAIT:-10}")" "$TMP/$n.log"
}
exp_stop() {
	kill -"${2:-TERM}" "${EXP_PID[$1]}"
	wait "${EXP_PID[$1]}" 2>/dev/null || true
}
exp_metric() {
	curl -sf "http://127.0.0.1:$1/metrics" | awk -v n="$2" -v re="${3:-}" '
		$1 == n || index($1, n "{") == 1 { if (re == "" || $1 ~ re) s += $NF }
		END { printf "%.17g\n", s + 0 }'
}
exp_wait_metric() {
	local v i
	for ((i = 0; i < $(scaled "$4") * 10; i++)); do
		v=$(exp_metric "$1" "$2" "${5:-}")
		awk -v v="$v" -v m="$3" 'BEGIN { exit !(v >= m) }' && break
		sleep 0.1
	done
	echo "$v"
}
free_ports() {
	local ports=() p
	while ((${#ports[@]} < $1)); do
		p=$(free_port)
		[[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
	done
	echo "${ports[*]}"
}
exporter_up() {
	ex_port=${ex_port:-$(free_port)}
	ex=http://127.0.0.1:$ex_port
	exp_start exporter "$ex_port" "$@"
	EX_PID=${EXP_PID[exporter]}
}
