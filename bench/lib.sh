# Shared by the benches; source it first: it sources tests/lib/common.sh.
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/../tests/lib/common.sh" || exit 1

# cpu_run OUT CMD...: run CMD, write "user_s sys_s maxrss_kb wall_s" (its
# rusage and wall time, bench/cpu_run.py) to OUT; returns CMD's exit status.
cpu_run() { python3 "$BENCH_DIR/cpu_run.py" "$@"; }
# cpu_of OUT: user + system seconds of a cpu_run OUT file.
cpu_of() { awk '{ printf "%.6f", $1 + $2 }' "$1"; }
