#!/bin/bash
# make deb: the cgperf-agent and cgperf-exporter packages build with
# dpkg-buildpackage, lintian finds no error, and dpkg installs them (cgperf
# user, /var/lib/cgperf, conffiles, man pages), upgrades them to a second
# version keeping a changed conffile, and purges them leaving no file behind.
# The build copy (BUILD/deb) is kept between runs: a second run rebuilds only
# what changed.
# holds: dpkg cgperf-user var-lib-cgperf containerd podman
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/pkg.sh"
pkg_setup dpkg-buildpackage dh lintian dch pandoc systemd-sysusers
out=$PKG_OUT
# The container engines' state is left out: containers that other work on
# the host starts or removes meanwhile are not the package's doing. The
# other tests keep their files in their own TMP; those that use dpkg, the
# cgperf user, /var/lib/cgperf or a container engine never run beside this
# one (the holds line above).
snap() {
	find /etc /usr /var/lib /lib/systemd /opt -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \
		-o -path /var/lib/man-db -o -path /var/lib/systemd/deb-systemd-helper-masked \
		-o -path /var/lib/containers -o -path /var/lib/cni -o -path /var/lib/docker \
		-o -path /var/lib/containerd \) -prune \
		-o -print 2>/dev/null | grep -Ev '^/etc/(passwd|group|shadow|gshadow)-$' | sort
}

info "building (copy of the tree in $out/src)"
pkg_build
debs=("${PKG_DEBS[@]}")
v1=$(dpkg-deb -f "${debs[0]}" Version)

# lintian: no error; warnings are printed (groff's "cannot adjust line" for
# the wide tables of the docs is expected, see docs/deploy.md).
lintian --allow-root "${debs[@]}" >"$TMP/lintian" 2>&1
grep '^E:' "$TMP/lintian" && fail "lintian errors"
info "lintian: $(grep -c '^W:' "$TMP/lintian") warnings: $(grep '^W:' "$TMP/lintian" | awk '{print $3}' | sort | uniq -c | tr '\n' ' ')"

dpkg-deb -c "${debs[0]}" >"$TMP/agent.list"
dpkg-deb -c "${debs[1]}" >"$TMP/exporter.list"
for f in ./usr/bin/cgperf-agent ./usr/share/man/man1/cgperf-agent.1.gz ./usr/share/man/man1/cgperf-agent-record.1.gz \
	./usr/share/man/man5/cgperf-agent.yaml.5.gz ./etc/cgperf/agent.yaml ./lib/systemd/system/cgperf-agent.service \
	./usr/lib/sysusers.d/cgperf-agent.conf ./usr/lib/tmpfiles.d/cgperf-agent.conf \
	./usr/share/doc/cgperf-agent/examples/probes.conf; do
	grep -q " $f\$" "$TMP/agent.list" || fail "cgperf-agent lacks $f"
done
for f in ./usr/bin/cgperf-exporter ./usr/share/man/man1/cgperf-exporter.1.gz ./usr/share/man/man5/cgperf-exporter.yaml.5.gz \
	./etc/cgperf/exporter.yaml ./lib/systemd/system/cgperf-exporter.service; do
	grep -q " $f\$" "$TMP/exporter.list" || fail "cgperf-exporter lacks $f"
done
dpkg-deb -I "${debs[1]}" | grep -Eq 'Depends:.*lib(unwind|dw|elf|traceevent)' && fail "the exporter depends on unwinding/ELF libraries"
# the libraries the agent loads on first use (lib/dynlib.h) are not in its
# ELF NEEDED list, so shlibs cannot find them: the control file names them
adeps=$(dpkg-deb -f "${debs[0]}" Depends)
for p in libcapstone4 libcurl4 libmicrohttpd12; do
	grep -q "\b$p\b" <<<"$adeps" || fail "cgperf-agent does not depend on $p (it loads it): $adeps"
done

snap >"$TMP/before"
info "install $v1"
dpkg -i "${debs[@]}" >"$TMP/dpkg1" 2>&1 || { cat "$TMP/dpkg1"; fail "dpkg -i failed"; }
getent passwd cgperf | grep -q ':/var/lib/cgperf:' || fail "no cgperf system user with home /var/lib/cgperf"
[[ $(stat -c %U "/var/lib/cgperf/spool") == cgperf ]] || fail "/var/lib/cgperf/spool not owned by cgperf"
[[ $(stat -c %U:%a "/var/lib/cgperf/exporter") == cgperf:700 ]] || fail "/var/lib/cgperf/exporter not cgperf:700"
dpkg-query -W -f='${Conffiles}\n' cgperf-agent | grep -q /etc/cgperf/agent.yaml || fail "agent.yaml is not a conffile"
dpkg-query -W -f='${Conffiles}\n' cgperf-exporter | grep -q /etc/cgperf/exporter.yaml || fail "exporter.yaml is not a conffile"
man -w cgperf-agent-stat >/dev/null && man -w 5 cgperf-exporter.yaml >/dev/null || fail "man pages not found"
MANWIDTH=80 man cgperf-agent-trace 2>/dev/null | grep -q 'uprobe' || fail "cgperf-agent-trace(1) does not render"
/usr/bin/cgperf-agent run --config /etc/cgperf/agent.yaml --print-config >"$TMP/eff" 2>&1 ||
	{ cat "$TMP/eff"; fail "the packaged agent.yaml does not load"; }
grep -q /var/lib/cgperf/spool "$TMP/eff" || fail "effective config lacks the spool"

# What a running agent and exporter leave: a spooled batch, an id, a store.
echo batch >/var/lib/cgperf/spool/000001.batch
echo 0123 >/var/lib/cgperf/agent-id
port=$(free_port)
setpriv --reuid=cgperf --regid=cgperf --init-groups /usr/bin/cgperf-exporter --config /etc/cgperf/exporter.yaml \
	--listen 127.0.0.1:$port >"$TMP/exp.log" 2>&1 & ep=$!; bg_track $ep
wait_http http://127.0.0.1:$port/healthz 10 "$TMP/exp.log"
kill -TERM $ep; wait $ep 2>/dev/null
[[ -n $(ls -A /var/lib/cgperf/exporter) ]] || fail "the exporter stored nothing under /var/lib/cgperf/exporter"

# A local change to a conffile survives the upgrade.
echo "# local change" >>/etc/cgperf/agent.yaml
v2=$v1+test1
info "upgrade to $v2"
pkg_build "$v2"
debs2=("${PKG_DEBS[@]}")
dpkg --force-confold -i "${debs2[@]}" >"$TMP/dpkg2" 2>&1 || { cat "$TMP/dpkg2"; fail "upgrade failed"; }
[[ $(dpkg-query -W -f='${Version}' cgperf-agent) == "$v2" ]] || fail "cgperf-agent not at $v2"
[[ $(dpkg-query -W -f='${Version}' cgperf-exporter) == "$v2" ]] || fail "cgperf-exporter not at $v2"
grep -q '# local change' /etc/cgperf/agent.yaml || fail "upgrade lost the local conffile change"
[[ -f /var/lib/cgperf/spool/000001.batch ]] || fail "upgrade removed the spool"
rm -f "$out"/*_"$v2"_*.deb

info "purge"
dpkg --purge cgperf-agent cgperf-exporter >"$TMP/dpkg3" 2>&1 || { cat "$TMP/dpkg3"; fail "purge failed"; }
pkg_drop_user
snap >"$TMP/after"
if ! diff "$TMP/before" "$TMP/after" >"$TMP/diff"; then
	cat "$TMP/diff"
	fail "files left behind (or removed) by install + upgrade + purge"
fi
echo "PASS: pkg_deb ($v1 -> $v2 install/upgrade/purge clean, lintian without errors)"
