# Helpers of the container identity tests; source it after common.sh.
#   busybox_tree DIR     a root file system: DIR/bin/busybox (Debian's
#                        busybox-static) and sh, sleep, cat linked to it
#   busybox_tar TAR      that tree (in $TMP/img) as a tar, for `import`
#   cgroups_expect KEY VALUE JSON
#                        `cgroups --json --containers` lists a cgroup whose
#                        KEY is VALUE and whose fields include every field
#                        of the JSON object (nested objects compared whole)
#   record_target_only SPEC
#                        `record --target SPEC` keeps at least 20 samples,
#                        all of the container's busy `sh` loop

busybox_tree() {
	local a
	mkdir -p "$1/bin" && cp /bin/busybox "$1/bin/" || fail "cannot make a busybox tree in $1"
	for a in sh sleep cat; do ln -sf busybox "$1/bin/$a"; done
}

busybox_tar() {
	busybox_tree "$TMP/img"
	tar -C "$TMP/img" -cf "$1" . || fail "cannot make the image tar $1"
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
	local kept others
	"$AGENT" record --target "$1" --duration "$(scaled 2)" -o "$TMP/target.folded" \
		2>"$TMP/target.log" || fail "record --target $1 failed: $(cat "$TMP/target.log")"
	kept=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/target.folded")
	((kept >= 20)) || fail "record --target $1 kept $kept samples: $(cat "$TMP/target.log")"
	others=$(grep -vc '^sh;' "$TMP/target.folded")
	((others == 0)) || fail "record --target $1: $others stacks from outside the container"
	info "record --target $1: $kept samples, all in the container"
}
