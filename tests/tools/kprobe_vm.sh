#!/bin/bash
# Run the kernel-probe tests on a kernel that has kprobes, when this host's
# kernel has none: Debian 12's linux-image (6.1, CONFIG_KPROBE_EVENTS,
# CONFIG_DEBUG_INFO_BTF) booted under QEMU with this host's root file system
# shared read-only over 9p, then, chrooted into it:
#   build/tests/test_probe_kernel            (test_this_host takes the kprobe branch)
#   tests/integration/trace_kprobe.sh        (counts, args by register and BTF name)
#   and the commands given as arguments, e.g.  "build/cgperf-agent trace -a -e k:vfs_read --duration 1"
# Manual, not part of `make test`: it needs qemu-system-x86 (apt), downloads
# the kernel package with apt-get download (unpacked with dpkg-deb, nothing
# installed in /boot), and takes 1-3 minutes under TCG (nested KVM hung at
# boot on this project's VM, so TCG is used).
# Everything is slow under TCG: the integration test runs with CGPERF_TIME_SCALE=5.
#
#   tests/tools/kprobe_vm.sh [COMMAND...]      (from the worktree, as root, after make build-tests)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KVER=${KVER:-6.1.0-56-amd64}
WORK=${KPROBE_VM_DIR:-/var/tmp/cgperf-kprobe-vm}
command -v qemu-system-x86_64 >/dev/null || { echo "needs qemu-system-x86 (apt-get install --no-install-recommends qemu-system-x86)" >&2; exit 77; }
command -v busybox >/dev/null || { echo "needs busybox-static" >&2; exit 77; }
mkdir -p "$WORK"
cd "$WORK"
if [[ ! -e k/boot/vmlinuz-$KVER ]]; then
	apt-get download "linux-image-$KVER" >/dev/null
	dpkg-deb -x "linux-image-${KVER}"_*.deb k
fi

# initramfs: busybox, the virtio and 9p modules (in dependency order), /init
rm -rf initrd && mkdir -p initrd/{bin,proc,sys,dev,host,mods}
cp "$(command -v busybox)" initrd/bin/busybox
mods="drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev
drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci fs/netfs/netfs fs/fscache/fscache
net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p"
for m in $mods; do cp "k/lib/modules/$KVER/kernel/$m.ko" initrd/mods/; done
cat >initrd/init <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(for m in $mods; do printf '%s ' "${m##*/}"; done); do insmod /mods/\$m.ko; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host || poweroff -f
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mount -t tmpfs tmp /host/tmp
mount -t tracefs nodev /host/sys/kernel/tracing; mount -t debugfs nodev /host/sys/kernel/debug
mount -t cgroup2 none /host/sys/fs/cgroup
echo "=== kernel \$(uname -r), kprobe PMU type \$(cat /sys/bus/event_source/devices/kprobe/type)"
chroot /host /bin/bash $WORK/run.sh
poweroff -f
EOF
chmod +x initrd/init
(cd initrd && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >../initrd.gz)

{
	echo '#!/bin/bash'
	echo 'export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root'
	echo "cd '$ROOT' || exit 1"
	echo 'echo "=== test_probe_kernel"; build/tests/test_probe_kernel 2>&1 | grep -E "OK|FAIL|PASSED|ERROR"'
	echo 'echo "=== trace_kprobe.sh"; CGPERF_TIME_SCALE=5 BUILD=build bash tests/integration/trace_kprobe.sh; echo "=== trace_kprobe.sh rc=$?"'
	for c in "$@"; do
		printf 'echo "=== %s"; %s; echo "rc=$?"\n' "$c" "$c"
	done
	echo 'echo "=== kprobe_events left: [$(cat /sys/kernel/tracing/kprobe_events)]"'
} >run.sh

timeout 900 qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 -nographic -no-reboot \
	-kernel "k/boot/vmlinuz-$KVER" -initrd initrd.gz \
	-append "console=ttyS0 panic=-1 rdinit=/init loglevel=4" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on 2>&1 |
	tr -d '\r' | sed -n '/^=== kernel/,$p'
