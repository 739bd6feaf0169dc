# shellcheck shell=bash
# ClickHouse servers for integration tests (source after common.sh).
#   ch_available          0 when clickhouse-server can run here, else prints why
#   ch_start NAME [SHARDS_XML]   start a server with its config and data
#                         under $TMP/ch-NAME on free ports; sets
#                         CH_HTTP[NAME], CH_TCP[NAME], CH_PID[NAME]; the
#                         optional XML is put in <remote_servers>
#   ch_stop NAME [SIG]    stop it (kill by PID with SIG, TERM by default;
#                         KILL makes an outage at once: a stopping server
#                         answers for seconds still)
#   ch_query NAME SQL     run SQL over its HTTP interface, print the answer
#   ch_shards_xml CLUSTER NAME...  a <CLUSTER> of one shard per server NAME
#                         (their TCP ports must be known: ch_ports first)
#   ch_ports NAME         pick the ports of NAME before it starts
#   ch_shared NAME        the run's shared server NAME (tests/run.sh sets
#                         $CGPERF_TEST_SHARED): started by the first test
#                         that asks, under a lock, kept for the whole run
#                         and stopped by run.sh; sets CH_HTTP[NAME] and
#                         CH_TCP[NAME]. A test on it keeps to databases of
#                         its own (ch_db) and never stops it. Without
#                         $CGPERF_TEST_SHARED, ch_start NAME.
#   ch_db NAME            a database name for NAME that no other test on a
#                         shared server uses
# Servers are killed by the EXIT trap of common.sh (their PIDs join _PIDS).
CH_SERVER=${CH_SERVER:-/usr/sbin/clickhouse-server}
declare -A CH_HTTP CH_TCP CH_PID

ch_available() {
	if [ ! -x "$CH_SERVER" ]; then
		echo "clickhouse-server not installed (packaging/install-deps.sh --test-deps)"
		return 1
	fi
	return 0
}

ch_ports() {
	[ -n "${CH_HTTP[$1]:-}" ] && return 0
	CH_HTTP[$1]=$(free_port)
	CH_TCP[$1]=$(free_port)
	while [ "${CH_TCP[$1]}" = "${CH_HTTP[$1]}" ]; do CH_TCP[$1]=$(free_port); done
}

ch_shards_xml() {
	local cluster=$1 n
	shift
	printf '<%s>' "$cluster"
	for n in "$@"; do
		ch_ports "$n"
		printf '<shard><replica><host>127.0.0.1</host><port>%s</port></replica></shard>' \
			"${CH_TCP[$n]}"
	done
	printf '</%s>' "$cluster"
}

ch_start() {
	local name=$1 shards=${2:-} dir=${_CH_DIR:-$TMP/ch-$1} i
	ch_ports "$name"
	mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/log"
	cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/log/server.log</log>
    <errorlog>$dir/log/error.log</errorlog><console>0</console></logger>
  <http_port>${CH_HTTP[$name]}</http_port>
  <tcp_port>${CH_TCP[$name]}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <remote_servers>$shards</remote_servers>
</yandex>
XML
	cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>1000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <cgperf><password>${CH_PASSWORD:-s3cret}</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></cgperf>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
XML
	# Not a job of this shell (a subshell starts it): killing it prints no
	# "Killed" line, and kill -0 sees it gone once it is.
	# A shared server (_CH_DIR set) gets a session of its own: run.sh ends
	# a test by killing its process group, and the server outlives it.
	if [[ -n ${_CH_DIR:-} ]]; then
		setsid bash -c 'echo $$ >"$1/pid"; exec "$2" --config-file="$1/config.xml" >"$1/log/stdout" 2>&1' \
			sh "$dir" "$CH_SERVER" </dev/null &
		for i in $(seq 1 50); do [[ -s $dir/pid ]] && break; sleep 0.1; done
	else
		(
			"$CH_SERVER" --config-file="$dir/config.xml" >"$dir/log/stdout" 2>&1 &
			echo $! >"$dir/pid"
		)
	fi
	CH_PID[$name]=$(cat "$dir/pid")
	[[ -n ${_CH_DIR:-} ]] || _PIDS+=("${CH_PID[$name]}")
	for i in $(seq 1 $((300 * TIME_SCALE))); do
		if curl -sf "http://127.0.0.1:${CH_HTTP[$name]}/ping" >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "${CH_PID[$name]}" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "clickhouse-server $name did not start:" >&2
	tail -20 "$dir/log/error.log" "$dir/log/stdout" >&2 2>/dev/null
	return 1
}

ch_stop() {
	local pid=${CH_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	for _ in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	CH_PID[$1]=
}

ch_shared() {
	local name=$1 dir
	if [[ -z ${CGPERF_TEST_SHARED:-} ]]; then
		ch_start "$name"
		return
	fi
	dir=$CGPERF_TEST_SHARED/ch-$name
	mkdir -p "$dir" || return 1
	# The lock is held while this test starts the server, or finds it up.
	exec {_ch_lock}>"$dir.lock"
	flock "$_ch_lock" || return 1
	if [[ -s $dir/pid && -s $dir/ports ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
		read -r "CH_HTTP[$name]" "CH_TCP[$name]" <"$dir/ports"
		if curl -sf "http://127.0.0.1:${CH_HTTP[$name]}/ping" >/dev/null 2>&1; then
			CH_PID[$name]=
			exec {_ch_lock}>&-
			return 0
		fi
		kill -KILL "$(cat "$dir/pid")" 2>/dev/null
	fi
	rm -rf "$dir/pid" "$dir/data"
	CH_HTTP[$name]= CH_TCP[$name]=
	if _CH_DIR=$dir ch_start "$name"; then
		echo "${CH_HTTP[$name]} ${CH_TCP[$name]}" >"$dir/ports"
		# Never this test's to stop: ch_stop leaves it alone.
		CH_PID[$name]=
		exec {_ch_lock}>&-
		return 0
	fi
	exec {_ch_lock}>&-
	return 1
}

ch_db() {
	if [[ -n ${CGPERF_TEST_SHARED:-} ]]; then
		printf 'cg_t%s_%s\n' "$$" "$1"
	else
		printf 'cg_%s\n' "$1"
	fi
}

ch_query() {
	curl -sS --fail-with-body "http://127.0.0.1:${CH_HTTP[$1]}/" --data-binary "$2"
}

# STORE=clickhouse runs an exporter test on a ClickHouse server (named
# "store", ch_shared), one database per exporter; STORE=sqlite (the default)
# on the data directory.
#   store_setup           start that server when STORE=clickhouse (skips
#                         the test when clickhouse-server cannot run)
#   store_args NAME       the exporter flags of exporter NAME's store
#                         (its database: ch_db NAME)
#   on_clickhouse         true when STORE=clickhouse
STORE=${STORE:-sqlite}
on_clickhouse() { [[ $STORE == clickhouse ]]; }

store_setup() {
	local why
	on_clickhouse || return 0
	why=$(ch_available) || skip "$why"
	ch_shared store || fail "clickhouse-server did not start"
	info "store: clickhouse-server on port ${CH_HTTP[store]}${CGPERF_TEST_SHARED:+ (shared by the run)}"
}

store_args() {
	on_clickhouse || return 0
	printf '%s\n' --store clickhouse --clickhouse-url "http://127.0.0.1:${CH_HTTP[store]}" \
		--clickhouse-database "$(ch_db "$1")"
}
