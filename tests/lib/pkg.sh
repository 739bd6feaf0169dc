# Helpers of the packaging tests; source it after common.sh.
#   pkg_setup TOOL...  skip unless every TOOL is there and neither package is
#                installed on this host (the tests install and purge them);
#                remember whether the cgperf user existed; move an existing
#                /var/lib/cgperf aside; at exit purge both packages, remove
#                that user if the test made it, put /var/lib/cgperf back
#   pkg_build [VERSION]  build the packages (packaging/build-deb.sh into
#                $CGPERF_DEB_DIR, default BUILD/deb, reused between runs);
#                sets PKG_DEBS (agent, exporter)
PKG_OUT=${CGPERF_DEB_DIR:-$BUILD_DIR/deb}
_pkg_had_user=0

pkg_setup() {
	local t p
	for t in "$@"; do
		command -v "$t" >/dev/null || skip "$t missing (packaging/install-deps.sh --deb installs it)"
	done
	for p in cgperf-agent cgperf-exporter; do
		dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q installed &&
			skip "$p is installed on this host: not touching it"
	done
	getent passwd cgperf >/dev/null && _pkg_had_user=1
	# State left by an agent run with the default paths (another test, a
	# user): purge would delete it, and the before/after file lists would
	# differ. Moved aside, back at exit.
	if [[ -e /var/lib/cgperf ]]; then
		mv /var/lib/cgperf "/var/lib/cgperf.aside-$$" || fail "cannot move /var/lib/cgperf aside"
		info "/var/lib/cgperf existed: moved aside for the test"
	fi
	trap _pkg_cleanup EXIT
}

pkg_drop_user() {
	((_pkg_had_user)) || { userdel cgperf 2>/dev/null; groupdel cgperf 2>/dev/null; }
	return 0
}

_pkg_cleanup() {
	_cleanup
	dpkg --purge cgperf-agent cgperf-exporter >/dev/null 2>&1
	pkg_drop_user
	[[ -e /var/lib/cgperf.aside-$$ && ! -e /var/lib/cgperf ]] && mv "/var/lib/cgperf.aside-$$" /var/lib/cgperf
	return 0
}

pkg_build() {
	# At the normal priority: on a fresh machine this is the longest test's
	# compile, which starts first (at nice 19 it took 270 s there).
	mapfile -t PKG_DEBS < <(VERSION=${1:-} "$ROOT/packaging/build-deb.sh" "$PKG_OUT")
	((${#PKG_DEBS[@]} == 2)) || fail "build-deb.sh ${1:-} made no 2 packages: ${PKG_DEBS[*]}"
}
