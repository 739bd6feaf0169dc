#!/bin/bash
# What the hand-written pprof encoder (exporter/render/render_pprof.c) saves
# over protobuf-c: tests/tools/pprof_bench builds 10k, 100k and 1M distinct
# stacks (10-30 frames, 400 names, 20 modules) and encodes each with both
# (the same interning first; protobuf-c from proto/profile.proto, structs in
# bulk arrays, strings not copied, then protobuf_c_message_pack()). CPU time
# of the encoding, peak RSS growth, bytes, then gzip of those bytes; "same"
# = byte-identical. The 10k profiles are also read by `go tool pprof -raw`
# when Go is here. Figures, not pass/fail; noisy on a shared VM (the ratios
# are from one run). Knob: BENCH_PPROF_STACKS ("10000 100000 1000000").
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
make -s -j2 O="$B" "$B/tools/pprof_bench" >/dev/null || { echo "   build failed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
"$B/tools/pprof_bench" --write "$tmp/p" ${BENCH_PPROF_STACKS:-10000 100000 1000000} | sed 's/^/   /' ||
	exit 1
if command -v go >/dev/null; then
	h=$(timeout 120 go tool pprof -raw "$tmp/p.hand.pb.gz" 2>/dev/null | md5sum)
	p=$(timeout 120 go tool pprof -raw "$tmp/p.pbc.pb.gz" 2>/dev/null | md5sum)
	n=$(timeout 120 go tool pprof -raw "$tmp/p.hand.pb.gz" 2>/dev/null | grep -Ec '^ *[0-9]+ +[0-9]+: ')
	[[ $h == "$p" && $n -gt 0 ]] && r="the same ($n samples)" || r="DIFFERENT or unreadable"
	echo "   go tool pprof -raw of the first size, hand vs protobuf-c: $r"
else
	echo "   (go not installed: the go tool pprof cross-check is left out)"
fi
