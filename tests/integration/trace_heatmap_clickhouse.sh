#!/bin/bash
# trace_heatmap.sh's run + exporter part with the exporter on a ClickHouse
# server: /api/v1/heatmap answers from the ClickHouse store as from SQLite.
STORE=clickhouse exec bash "$(dirname "$0")/trace_heatmap.sh" "$@"
