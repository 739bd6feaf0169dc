#!/bin/bash
# `make` with no target, as the README's table says, builds
# build/cgperf-agent and build/cgperf-exporter, in a clean copy of the tree
# (the files of this checkout that git would keep, nothing built); a second
# `make` has nothing left to do.
source "$(dirname "$0")/../lib/common.sh"
# Bulk CPU work at the lowest priority: the tests beside it (the suite runs
# several at once) keep their share; this one takes what is left.
renice -n 19 $$ >/dev/null
need git
src=$TMP/src
mkdir -p "$src"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && tar --null -T - -cf -) | tar -C "$src" -xf - ||
	fail "cannot copy the tree"
[[ ! -e $src/build ]] || fail "the copy has a build/"
# Not the make that runs this suite: no jobserver or flags of its own.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u O -u SAN make -C "$src" "$@"; }
mk -j2 >"$TMP/make.log" 2>&1 || fail "make failed: $(tail -20 "$TMP/make.log")"
for p in cgperf-agent cgperf-exporter; do
	[[ -x $src/build/$p ]] || fail "make did not build build/$p: $(tail -5 "$TMP/make.log")"
done
"$src/build/cgperf-agent" --version >"$TMP/v" 2>&1 || fail "the agent built does not run: $(cat "$TMP/v")"
"$src/build/cgperf-exporter" --version >"$TMP/v2" 2>&1 || fail "the exporter built does not run: $(cat "$TMP/v2")"
info "built: $(ls "$src/build" | tr '\n' ' ')"
info "$(head -1 "$TMP/v"); $(head -1 "$TMP/v2")"
[[ ! -e $src/build/tests ]] || fail "make built the tests too: $(ls "$src/build/tests" | head -5)"
mk >"$TMP/make2.log" 2>&1 || fail "second make failed: $(tail -5 "$TMP/make2.log")"
grep -q "Nothing to be done for 'all'" "$TMP/make2.log" ||
	fail "a second make did something, or its goal is not all: $(tail -5 "$TMP/make2.log")"
exit 0
