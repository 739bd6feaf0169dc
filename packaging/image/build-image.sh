#!/bin/sh
# build-image.sh DEBDIR: OCI images localhost/cgperf-agent:VERSION and
# localhost/cgperf-exporter:VERSION (podman build), FROM scratch: each holds
# its binary from the Debian package in DEBDIR (make deb), the shared
# libraries it loads (from this Debian host's packages, by ldd), an
# /etc/passwd with the cgperf user (uid and gid 999) and nothing else: no
# shell, no package manager. Both run as cgperf; the agent gets its
# capabilities from the runtime (--cap-add, ambient for a non-root user) and
# the host's PID and cgroup namespaces (docs/deploy.md).
set -eu
debdir=${1:?usage: build-image.sh DEBDIR}
work=$debdir/image
arch=$(dpkg --print-architecture)
rm -rf "$work"
for p in agent exporter; do
	deb=$(ls "$debdir"/cgperf-${p}_*_"$arch".deb | sort -V | tail -n1)
	ver=$(dpkg-deb -f "$deb" Version)
	root=$work/$p/rootfs
	mkdir -p "$work/$p/pkg" "$root/usr/bin" "$root/etc/cgperf" "$root/tmp" "$work/$p/state/spool" \
		"$work/$p/state/exporter"
	dpkg-deb -x "$deb" "$work/$p/pkg"
	cp "$work/$p/pkg/usr/bin/cgperf-$p" "$root/usr/bin/"
	cp "$work/$p/pkg/etc/cgperf/$p.yaml" "$root/etc/cgperf/"
	# every library the binary loads, at the path the loader looks for it,
	# and those the agent loads on first use (lib/dynlib.h: capstone for
	# annotate, libcurl to push, libmicrohttpd for /metrics) with theirs
	extra=
	if [ "$p" = agent ]; then
		for so in libcapstone.so.4 libcurl.so.4 libmicrohttpd.so.12; do
			path=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64/ { print $NF; exit }')
			[ -n "$path" ] || { echo "build-image.sh: $so not installed" >&2; exit 1; }
			extra="$extra $path $(ldd "$path" | grep -oE '/[^ ]+')"
		done
	fi
	for lib in $(ldd "$root/usr/bin/cgperf-$p" | grep -oE '/[^ ]+') $extra; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	printf 'root:x:0:0::/:/nonexistent\ncgperf:x:999:999::/var/lib/cgperf:/nonexistent\n' >"$root/etc/passwd"
	printf 'root:x:0:\ncgperf:x:999:\n' >"$root/etc/group"
	chmod 1777 "$root/tmp"
	case $p in
	agent) cmd='"run", "--config", "/etc/cgperf/agent.yaml"' ;;
	*) cmd='"--listen", "0.0.0.0:9464", "--data-dir", "/var/lib/cgperf/exporter"' ;;
	esac
	cat >"$work/$p/Containerfile" <<EOC
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 state/ /var/lib/cgperf/
USER 999:999
ENTRYPOINT ["/usr/bin/cgperf-$p"]
CMD [$cmd]
LABEL org.opencontainers.image.title="cgperf-$p" org.opencontainers.image.version="$ver"
EOC
	podman build -q --format oci -t "localhost/cgperf-$p:$ver" -f "$work/$p/Containerfile" "$work/$p" >/dev/null
	podman tag "localhost/cgperf-$p:$ver" "localhost/cgperf-$p:latest"
	echo "localhost/cgperf-$p:$ver"
done
# The runtime's default seccomp profile refuses perf_event_open without
# CAP_SYS_ADMIN: the agent's container runs with this one instead.
prof=${SECCOMP_DEFAULT:-/usr/share/containers/seccomp.json}
if [ -f "$prof" ]; then
	python3 "$(dirname "$0")/seccomp-perfmon.py" "$prof" "$work/seccomp-agent.json"
	echo "$work/seccomp-agent.json"
fi
