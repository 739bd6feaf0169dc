# Helpers of the container identity tests; source it after common.sh.
#   busybox_tree DIR     a root file system: DIR/bin/busybox (Debian's
#                        busybox-static) and sh, sleep, cat linked to it
#   busybox_tar TAR      that tree (in $TMP/img) as a tar, for `import`
#   cgroups_expect KEY VALUE JSON
#                        `cgroups --json --containers` lists a cgroup whose
#                        KEY is VALUE and whose fields include every field
#                        of the JSON object (nested objects compared whole)
#   podman_image_of IMG BINARY DEST
#                        a podman image IMG (imported, no registry) holding
#                        BINARY at DEST and the shared libraries ldd lists
#                        for it, at their paths (the root is made in $TMP/croot)
#   record_target_only SPEC PID
#                        `record --target SPEC` keeps only samples of the
#                        container's busy `sh` loop (PID), and at least half
#                        the samples its CPU time (cpu.stat) is worth at 99 Hz,
#                        however busy the machine is

busybox_tree() {
	local a
	mkdir -p "$1/bin" && cp /bin/busybox "$1/bin/" || fail "cannot make a busybox tree in $1"
	for a in sh sleep cat; do ln -sf busybox "$1/bin/$a"; done
}

busybox_tar() {
	busybox_tree "$TMP/img"
	tar -C "$TMP/img" -cf "$1" . || fail "cannot make the image tar $1"
}

podman_image_of() {
	local croot=$TMP/croot l
	mkdir -p "$croot$(dirname "$3")" && cp "$2" "$croot$3" || fail "copy $2"
	for l in $(ldd "$2" | grep -oE '/[^ ]+'); do
		mkdir -p "$croot$(dirname "$l")" && cp -L "$l" "$croot$l" || fail "copy $l"
	done
	tar -C "$croot" -cf "$TMP/croot.tar" . && podman import "$TMP/croot.tar" "$1" >/dev/null 2>&1 ||
		fail "podman import of $1"
}

cgroups_expect() {
	"$AGENT" cgroups --json --containers >"$TMP/cgroups.json" || fail "cgroups --json failed"
	python3 - "$TMP/cgroups.json" "$1" "$2" "$3" <<'PY' || fail "cgroups JSON: $(cat "$TMP/cgroups.json")"
import json, sys
doc, key, value, want = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
found = [c for c in json.load(open(doc))["cgroups"] if c.get(key) == value]
assert found, f"no cgroup with {key} {value}"
got = found[0]
bad = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
assert not bad, f"{value}: want {want}, got {bad} in {got}"
PY
}

record_target_only() {
	local kept others cg u0 u1 want
	cg=$(cg2_mount)$(sed -n 's/^0:://p' "/proc/$2/cgroup")
	[[ -r $cg/cpu.stat ]] || fail "no cpu.stat for pid $2 ($cg)"
	u0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
	"$AGENT" record --target "$1" --duration "$(scaled 2)" -o "$TMP/target.folded" \
		2>"$TMP/target.log" || fail "record --target $1 failed: $(cat "$TMP/target.log")"
	u1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
	want=$(( (u1 - u0) * 99 / 1000000 ))
	kept=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/target.folded")
	((kept >= 5 && kept * 2 >= want)) ||
		fail "record --target $1 kept $kept samples, its CPU time is worth $want: $(cat "$TMP/target.log")"
	others=$(grep -vc '^sh;' "$TMP/target.folded")
	((others == 0)) || fail "record --target $1: $others stacks from outside the container"
	info "record --target $1: $kept samples (its CPU time is worth $want), all in the container"
}

# run_agent CONFIG PORT: `cgperf-agent run --config CONFIG` in the background
# (log $TMP/run.log, PID in AG), once its /metrics on PORT answers.
run_agent() {
	"$AGENT" run --config "$1" 2>"$TMP/run.log" &
	AG=$!
	bg_track $AG
	wait_http "http://127.0.0.1:$2/metrics" "$(scaled 10)" "$TMP/run.log"
}

# wait_named NAME PORT LIMIT_MS: poll the agent's /metrics on PORT (into
# $TMP/m.txt) until a series has container_name=NAME, at most LIMIT_MS
# after the call; its first such line in NAMED_LINE, the wait in NAMED_MS.
wait_named() {
	local t0
	t0=$(date +%s%N)
	NAMED_LINE=
	while (( ($(date +%s%N) - t0) / 1000000 < $3 )); do
		curl -sf "http://127.0.0.1:$2/metrics" >"$TMP/m.txt" || true
		NAMED_LINE=$(grep -m1 "container_name=\"$1\"" "$TMP/m.txt")
		[[ -n $NAMED_LINE ]] && break
		sleep 0.2
	done
	NAMED_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
	[[ -n $NAMED_LINE ]] || fail "$1 not named on the agent's /metrics within $3 ms: $(tail -5 "$TMP/run.log")"
}
