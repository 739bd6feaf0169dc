#!/bin/sh
# Install the Debian packages that cgperf needs to build, test and run.
# Idempotent: quiet and fast when everything is present. Needs root for apt.
#
#   packaging/install-deps.sh            build + test + run dependencies
#   packaging/install-deps.sh --build    only what `make` needs
#   packaging/install-deps.sh --deb      what `make deb` needs (build + Debian tooling)
# Every mode also makes sure of node and npm (Debian's nodejs and npm when
# either command is missing) and of web/node_modules (npm ci --ignore-scripts
# from web/package-lock.json, when the lock is newer than the install): the
# exporter's page is built from them.
set -eu

BUILD="gcc g++ make pkg-config libc6-dev libelf-dev libdw-dev libunwind-dev libtraceevent-dev libtracefs-dev
libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler libmicrohttpd-dev libsqlite3-dev
libyaml-dev zlib1g-dev libiberty-dev libsnappy-dev libjson-c-dev libcapstone-dev libbpf-dev"
# Tests and benchmarks: golang-go for `go tool pprof`, prometheus-pushgateway
# as the benchmark's reference, chromium (headless) to click through the
# flame graph SVG, libxml2-utils for xmllint (flame graph SVG),
# binutils for readelf (build ids), clang + libclang-rt for libFuzzer,
# victoria-metrics as a second remote_write receiver beside prometheus;
# clickhouse-server and clickhouse-client for the ClickHouse store's tests
# (the tests start their own servers; the package's service is not used);
# podman + runc + busybox-static + docker.io for the container identity tests
# (an image made locally from busybox, no registry).
TEST="libcmocka-dev linux-perf postgresql postgresql-contrib procps util-linux python3 time systemtap-sdt-dev
clang libclang-rt-14-dev prometheus curl
golang-go prometheus-pushgateway libxml2-utils perl binutils chromium victoria-metrics
clickhouse-server clickhouse-client podman runc busybox-static docker.io"

# make deb and the packaging tests: Debian's package tooling, pandoc for the
# man pages, systemd for systemd-analyze (units checked offline), podman and
# runc for make image, python3-kubernetes to check packaging/kubernetes/.
DEB="debhelper devscripts lintian dpkg-dev fakeroot pandoc systemd podman runc catatonit python3-kubernetes"

case "${1:-}" in
--build) want="$BUILD" ;;
--deb) want="$BUILD $DEB" ;;
*) want="$BUILD $TEST $DEB" ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: this script knows Debian (dpkg, apt) only; install by hand:" >&2
	echo "  $want" | tr '\n' ' ' >&2
	echo >&2
	exit 1
fi

missing=""
for p in $want; do
	# dpkg-query prints "install ok installed" for a fully installed package
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"ok installed") ;;
	*) missing="$missing $p" ;;
	esac
done

# The page's build (web/): node and npm. A node that came with its own npm
# (not Debian's) is fine as it is; only a missing command asks for a package.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"

# web/node_modules as web/package-lock.json pins it; npm's own record of the
# install (node_modules/.package-lock.json) newer than the lock: nothing to do.
web_deps() {
	web=$(cd "$(dirname "$0")/.." && pwd)/web
	[ -f "$web/package-lock.json" ] || return 0
	if [ -f "$web/node_modules/.package-lock.json" ] &&
		[ ! "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
		return 0
	fi
	echo "install-deps: npm ci in web/" >&2
	(cd "$web" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || {
		echo "install-deps: npm ci failed in $web" >&2
		exit 1
	}
	touch "$web/node_modules/.package-lock.json"
}

if [ -z "$missing" ]; then
	web_deps
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages:$missing" >&2
	echo "install-deps: run as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi

echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install fails for want of them.
if ! apt-get install -y -q --no-install-recommends $missing >/tmp/cgperf-apt.log 2>&1; then
	apt-get update -q >>/tmp/cgperf-apt.log 2>&1 || true
	if ! apt-get install -y -q --no-install-recommends $missing >>/tmp/cgperf-apt.log 2>&1; then
		echo "install-deps: apt-get failed; see /tmp/cgperf-apt.log" >&2
		tail -20 /tmp/cgperf-apt.log >&2
		exit 1
	fi
fi
web_deps
