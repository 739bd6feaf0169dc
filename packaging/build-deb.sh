#!/bin/sh
# build-deb.sh OUTDIR: build the cgperf-agent and cgperf-exporter .deb
# packages with dpkg-buildpackage into OUTDIR (make deb: OUTDIR=build/deb).
#
# The tracked files of the tree (and uncommitted edits to them) are copied to
# OUTDIR/src, packaging/debian/ becomes debian/ there, and the packages are
# built from that copy: the source tree gets no debian/ and no build files.
# A copy that is already there is refreshed (tar keeps the files' times, and
# files deleted from the tree go), so a second `make deb` rebuilds only what
# changed, and packages built from the same files are not built again.
# VERSION=X.Y.Z builds that version instead of the one of
# packaging/debian/changelog (the upgrade test builds a second one).
set -eu
out=${1:?usage: build-deb.sh OUTDIR}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src

mkdir -p "$src"
# The tracked files, as they are in the work tree.
(cd "$top" && git ls-files -z --cached --others --exclude-standard) >"$out/files"
(cd "$top" && tar --null --ignore-failed-read -T "$out/files" -cf -) | tar -xf - -C "$src"
# A file the tree no longer has leaves the copy too: a stale source there
# would still be built (the copy's build/ and debian/ are the build's own).
tr '\0' '\n' <"$out/files" | sort >"$out/files.sorted"
(cd "$src" && find . -path ./build -prune -o -path ./debian -prune -o -type f -print |
	sed 's|^\./||' | sort | comm -23 - "$out/files.sorted" | xargs -r -d '\n' rm -f --)
# Packages of the wanted version built from exactly these files (none
# changed since that build began, none added or removed) are used as they are.
want=${VERSION:-$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)}
arch=$(dpkg --print-architecture)
if [ -f "$out/built-$want" ] && cmp -s "$out/files.sorted" "$out/built-$want" &&
	[ -f "$out/cgperf-agent_${want}_${arch}.deb" ] && [ -f "$out/cgperf-exporter_${want}_${arch}.deb" ] &&
	[ -z "$(cd "$src" && find . \( -path ./build -o -path ./debian \) -prune -o ! -type d -newer "$out/built-$want" -print | head -1)" ]; then
	for p in cgperf-agent cgperf-exporter; do echo "$out/${p}_${want}_${arch}.deb"; done
	exit 0
fi
rm -f "$out/built-$want"
: >"$out/building"
rm -rf "$src/debian"
cp -a "$src/packaging/debian" "$src/debian"
if [ -n "${VERSION:-}" ]; then
	(cd "$src" && DEBFULLNAME="cgperf maintainers" DEBEMAIL=cgperf@example.org \
		dch --newversion "$VERSION" --distribution unstable --force-distribution \
		"Build of version $VERSION." >/dev/null 2>&1)
fi
# -nc: no clean, so build/ of the copy is reused between runs.
(cd "$src" && dpkg-buildpackage -b -us -uc -nc -j"$(nproc)") >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed; see $out/build.log" >&2
	exit 1
}
ver=$(cd "$src" && dpkg-parsechangelog -S Version)
for p in cgperf-agent cgperf-exporter; do
	[ -f "$out/${p}_${ver}_${arch}.deb" ] || { echo "build-deb: no $p ${ver} package" >&2; exit 1; }
	echo "$out/${p}_${ver}_${arch}.deb"
done
# What this build was made of, stamped with the time it began.
cp "$out/files.sorted" "$out/built-$ver"
touch -r "$out/building" "$out/built-$ver"
