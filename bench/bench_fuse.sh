#!/bin/bash
# What the FUSE router costs (docs/security.md, "Binaries, libraries and
# debuginfo on FUSE"). Figures, not pass/fail; noisy on a shared VM.
#
#  1. The common case, no FUSE mount in the namespace: the per-open
#     classification (a stat of /proc/PID/ns/mnt and a cached table) and an
#     open of a binary through /proc/PID/root with and without the router,
#     from build/tests/test_fusemnt (one mountinfo read per namespace).
#  2. A file on FUSE: one helper, `cgperf-agent __read-file`, per file: its
#     exec, the open under the rootfs rules and the copy into a memfd, timed
#     here on a host binary (its stdout is not a socket, so the memfd is not
#     sent; the rest is the same work).
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
[[ -x $B/tests/test_fusemnt && -x $B/cgperf-agent ]] || { echo "   build first: make build-tests"; exit 1; }
echo "   1. common case (no FUSE here):"
"$B/tests/test_fusemnt" 2>&1 | sed -n 's/^# /      /p'
N=20
for f in /usr/bin/true /usr/bin/python3; do
	f=$(readlink -f "$f")
	[[ -f $f ]] || continue
	t0=$(date +%s%N)
	for ((i = 0; i < N; i++)); do
		"$B/cgperf-agent" __read-file --max 4294967296 0 "$f" >/dev/null 2>&1
	done
	t1=$(date +%s%N)
	echo "   2. helper for $f ($(stat -c %s "$f") bytes): $(((t1 - t0) / N / 1000)) us per file (exec + open + copy), over $N"
done
