#!/bin/bash
# With log.format json (and logfmt), everything `cgperf-agent run` writes to
# stderr is a log line in that format: at start (a probe on a binary that
# does not exist fails there), while running, at a reload that fails and at one that
# succeeds, and at stop. Nothing is printed around the log module.
source "$(dirname "$0")/../lib/common.sh"
base=$(cg_make logjson)
rel=${base#"$(cg2_mount)"}
mkdir "$base/a" || fail "cannot create a test cgroup"

config() { # FORMAT [PROBE]
	cat <<YAML
host: {name: logjson, agent_id_file: $TMP/agent-id}
cgroups: {include: ["$rel", "$rel/**"]}
counters: {events: [task-clock, context-switches]}
sampling: {enabled: false}
push: {interval: 1s, collectors: [], spool: {dir: $TMP/spool}}
metrics: {listen: "127.0.0.1:$(free_port)"}
log: {format: $1, level: debug}
YAML
	[[ -z ${2:-} ]] || echo "probes: [\"$2\"]"
}

# Each line of FILE must be JSON with level and msg, or logfmt with ts= level= msg=.
check_lines() { # FILE FORMAT WHAT
	python3 - "$1" "$2" <<'PY' || fail "$3: a stderr line outside the $2 log: $(cat "$1")"
import json, re, sys
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    n += 1
    if sys.argv[2] == "json":
        o = json.loads(line)
        assert "level" in o and "msg" in o, line
    else:
        assert re.match(r'ts=\S+ level=\w+ msg=', line), line
assert n > 0, "no log line at all"
PY
}

# logged FILE TEXT WHAT: wait until FILE has a line with TEXT (the agent
# still running), else fail with WHAT.
logged() {
	local i n
	n=$(scaled 100)
	for ((i = 0; i < n; i++)); do
		grep -q "$2" "$1" && return 0
		kill -0 $ag 2>/dev/null || break
		sleep 0.1
	done
	grep -q "$2" "$1" || fail "$3 within $(scaled 10) s: $(tail -n 5 "$1")"
}

for fmt in json logfmt; do
	# start: a probe that cannot resolve fails the start, through the log
	config $fmt "u:$TMP/no-such-binary:main" >"$TMP/bad.yaml"
	"$AGENT" run --config "$TMP/bad.yaml" --duration 1 2>"$TMP/bad-$fmt.log"
	[[ $? == 2 ]] || fail "$fmt: an unresolvable probe should exit 2: $(cat "$TMP/bad-$fmt.log")"
	check_lines "$TMP/bad-$fmt.log" $fmt "start failure"
	grep -q "no-such-binary" "$TMP/bad-$fmt.log" || fail "$fmt: the failure does not name the binary"

	# running, a reload that fails (the config turns bad), one that succeeds,
	# stop. Each step waits for the line of the one before: SIGHUP before
	# "started" (signals blocked, read through the signalfd) would kill it.
	config $fmt >"$TMP/agent.yaml"
	agent_run "$TMP/run-$fmt.log" --config "$TMP/agent.yaml" --duration "$(scaled 60)"
	logged "$TMP/run-$fmt.log" "batch queued" "$fmt: no batch while running"
	echo "counters: [" >"$TMP/agent.yaml"
	kill -HUP $ag
	logged "$TMP/run-$fmt.log" "reload failed" "$fmt: no failed reload logged"
	config $fmt >"$TMP/agent.yaml"
	kill -HUP $ag
	logged "$TMP/run-$fmt.log" "config reloaded" "$fmt: no reload logged"
	kill -TERM $ag
	wait $ag || fail "$fmt: run failed: $(cat "$TMP/run-$fmt.log")"
	check_lines "$TMP/run-$fmt.log" $fmt "run and reloads"
	grep -q "stopped" "$TMP/run-$fmt.log" || fail "$fmt: no stop logged: $(tail -n 3 "$TMP/run-$fmt.log")"
done
exit 0
