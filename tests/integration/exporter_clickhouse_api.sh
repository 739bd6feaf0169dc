#!/bin/bash
# The exporter's API and render tests on the ClickHouse store: every
# endpoint that works on SQLite answers the same on ClickHouse.
# exporter_api.sh (stacks in every format and selection, /metrics,
# targets, the index page, expiry) and exporter_pprof.sh (pprof with its
# mappings and build-ids, folded, SVG) run again with STORE=clickhouse,
# each on a clickhouse-server it starts and stops. Skips only when
# clickhouse-server is not installed.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/clickhouse.sh"
why=$(ch_available) || skip "$why"
dir=$(dirname "$0")
for t in exporter_api exporter_pprof; do
	info "--- STORE=clickhouse $t.sh"
	STORE=clickhouse bash "$dir/$t.sh" || fail "$t.sh on the ClickHouse store"
done
exit 0
