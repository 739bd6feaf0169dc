#!/bin/bash
# Counting many cgroups: setup time (perf_event_open for every cgroup x event
# x CPU) and the cost of one interval's reads, for 50/200/500 cgroups x 4
# events, next to `perf stat -a -G` over the same 200 cgroups in the same run.
source "$(dirname "$0")/../tests/lib/common.sh"
evs=task-clock,context-switches,page-faults,cpu-migrations
base=$(cg_make bench)
rel=${base#"$(cg2_mount)"}
ncpu=$(getconf _NPROCESSORS_ONLN)
printf '%8s %8s %12s %16s %16s %12s\n' cgroups fds setup_ms read_ms/interval max_read_ms agent_cpu_s
for n in 50 200 500; do
	for i in $(seq 1 $n); do mkdir -p "$base/c$i"; done
	/usr/bin/time -f '%U %S' -o "$TMP/time" "$AGENT" stat --for-each-cgroup "^$rel/" -e $evs \
		-I 100 --duration 3 --json -v >/dev/null 2>"$TMP/err"
	setup=$(sed -n 's/.*setup \([0-9.]*\) ms.*/\1/p' "$TMP/err")
	read=$(sed -n 's/.*read \([0-9.]*\) ms per interval (max \([0-9.]*\) ms).*/\1 \2/p' "$TMP/err")
	cpu=$(awk '{print $1 + $2}' "$TMP/time")
	printf '%8d %8d %12s %16s %16s %12s\n' $n $((n * 4 * ncpu)) "$setup" ${read:-? ?} "$cpu"
done
# perf stat over 200 cgroups: -G takes one cgroup per event, so the event
# list is repeated per cgroup, as perf requires.
groups=$(for i in $(seq 1 200); do printf '%s,' "${rel#/}/c$i"; done)
groups=${groups%,}
elist=$(for i in $(seq 1 200); do printf '%s,' $evs; done)
elist=${elist%,}
/usr/bin/time -f '%U %S %e' -o "$TMP/ptime" perf stat -a -e "$elist" -G "$groups" -I 100 -x, \
	-o "$TMP/perf.out" -- sleep 3 2>/dev/null
/usr/bin/time -f '%U %S %e' -o "$TMP/atime" "$AGENT" stat --for-each-cgroup "^$rel/c([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$" \
	-e $evs -I 100 --duration 3 --json >/dev/null 2>&1
pc=$(awk '{print $1 + $2}' "$TMP/ptime")
ac=$(awk '{print $1 + $2}' "$TMP/atime")
echo "200 cgroups x 4 events, -I 100 for 3 s: cgperf CPU ${ac}s, perf stat CPU ${pc}s, ratio cgperf/perf = $(awk -v a="$ac" -v p="$pc" 'BEGIN{ if (p > 0) printf "%.2f", a / p; else print "n/a" }')"
