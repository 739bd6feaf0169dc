#!/bin/bash
# `make run`: cgperf-exporter and cgperf-agent run side by side on this host.
# The exporter keeps its store in $RUN_DIR/exporter and listens on
# $RUN_LISTEN; the agent (packaging/run-default.yaml) profiles every cgroup
# and pushes to it every 10 s. Ctrl-C (or SIGTERM) stops both, by PID.
#
#   O=build RUN_DIR=run-data RUN_LISTEN=127.0.0.1:9464 packaging/run-local.sh
set -u
cd "$(dirname "$0")/.."
O=${O:-build}
RUN_DIR=${RUN_DIR:-run-data}
RUN_LISTEN=${RUN_LISTEN:-127.0.0.1:9464}
AGENT=$O/cgperf-agent
EXPORTER=$O/cgperf-exporter
CONFIG=packaging/run-default.yaml

for b in "$AGENT" "$EXPORTER"; do
	[[ -x $b ]] || { echo "run: $b is not built (make O=$O)" >&2; exit 1; }
done
if [[ $(id -u) -ne 0 ]]; then
	echo "run: the agent needs root (perf_event_open on cgroups): sudo make run" >&2
	exit 1
fi
mkdir -p "$RUN_DIR/exporter" "$RUN_DIR/spool" || exit 1

# The default file names 127.0.0.1:9464 and run-data/: point it elsewhere
# when asked to.
if [[ $RUN_LISTEN != 127.0.0.1:9464 || $RUN_DIR != run-data ]]; then
	host=${RUN_LISTEN%:*}
	[[ -z $host || $host == 0.0.0.0 ]] && host=127.0.0.1
	sed -e "s#http://127.0.0.1:9464/#http://$host:${RUN_LISTEN##*:}/#" \
		-e "s#run-data/#$RUN_DIR/#g" "$CONFIG" >"$RUN_DIR/agent.yaml"
	CONFIG=$RUN_DIR/agent.yaml
fi
base=http://${RUN_LISTEN/#:/127.0.0.1:}
base=${base/0.0.0.0:/127.0.0.1:}

EX= AG=
stop() {
	trap '' INT TERM
	echo
	echo "run: stopping" >&2
	[[ -n $AG ]] && kill -TERM "$AG" 2>/dev/null
	[[ -n $AG ]] && wait "$AG" 2>/dev/null
	[[ -n $EX ]] && kill -TERM "$EX" 2>/dev/null
	[[ -n $EX ]] && wait "$EX" 2>/dev/null
	exit 0
}
trap stop INT TERM

# Each in its own session, out of the terminal's reach: Ctrl-C comes to this
# shell only, and the trap stops the agent first (its last batch still finds
# the exporter), then the exporter, with SIGTERM, by PID.
setsid "$EXPORTER" --listen "$RUN_LISTEN" --data-dir "$RUN_DIR/exporter" 2>>"$RUN_DIR/exporter.log" &
EX=$!
for _ in $(seq 50); do
	curl -sf "$base/healthz" >/dev/null 2>&1 && break
	kill -0 "$EX" 2>/dev/null || break
	sleep 0.1
done
if ! curl -sf "$base/healthz" >/dev/null 2>&1; then
	echo "run: cgperf-exporter did not start; $RUN_DIR/exporter.log says:" >&2
	tail -n 5 "$RUN_DIR/exporter.log" >&2
	stop
fi

setsid "$AGENT" run --config "$CONFIG" 2>>"$RUN_DIR/agent.log" &
AG=$!
sleep 1
if ! kill -0 "$AG" 2>/dev/null; then
	echo "run: cgperf-agent run did not start; $RUN_DIR/agent.log says:" >&2
	tail -n 5 "$RUN_DIR/agent.log" >&2
	AG=
	stop
fi

cat <<EOF
cgperf is running: exporter pid $EX, agent pid $AG (config $CONFIG).
The agent pushes every 10 s; the first data shows after the first push.

  $base/                               the explorer: series, flame graphs, top, diff (docs/ui.md)
  $base/index                          hosts, cgroups and containers, with links
  $base/metrics                        per-cgroup counters for Prometheus
  $base/api/v1/stacks?format=svg       flame graph of the whole host
  $base/api/v1/stacks?format=svg&cgroup=/system.slice
  $base/api/v1/stacks?format=pprof     for go tool pprof -http=: FILE
  $base/api/v1/targets                 agents and cgroups known

Logs: $RUN_DIR/exporter.log, $RUN_DIR/agent.log. Store: $RUN_DIR/exporter.
Ctrl-C stops both.
EOF

# Either one ending on its own ends the run.
while kill -0 "$EX" 2>/dev/null && kill -0 "$AG" 2>/dev/null; do
	sleep 1 &
	wait $! 2>/dev/null
done
echo "run: $(kill -0 "$EX" 2>/dev/null && echo cgperf-agent || echo cgperf-exporter) exited; see $RUN_DIR/*.log" >&2
stop
