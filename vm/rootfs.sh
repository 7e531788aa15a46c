#!/usr/bin/env bash
# vm/rootfs.sh OUT.img KERNEL_DIR: builds the guest's root filesystem image for
# `make test-vm` with mmdebstrap from the host's Debian suite, adds the kernel's
# modules (from the same linux-image package as the kernel), and packs it into
# an ext4 image with mke2fs -d (no loop mounts). The image is booted read-only
# (qemu -snapshot), once with a minimal init and once with systemd as PID 1.
set -euo pipefail
out=$1 kdir=$2
. /etc/os-release
suite=${VERSION_CODENAME:-bookworm}
mirror=${VM_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d "$(dirname "$out")/rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
# systemd + dbus: PID 1 of the systemd variant and the bus libcontainer's
# systemd cgroup driver talks to. The rest is what the end-to-end tests run.
pkgs=systemd,systemd-sysv,dbus,iproute2,iptables,nftables,util-linux,mount,kmod,busybox-static,libseccomp2,procps
mmdebstrap --variant=apt --include="$pkgs" \
	--customize-hook='systemctl --root="$1" mask serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer 2>/dev/null || true' \
	--customize-hook='echo podrun-vm > "$1/etc/hostname"; printf "127.0.0.1 localhost\n127.0.1.1 podrun-vm\n" > "$1/etc/hosts"' \
	"$suite" "$work/root" "$mirror" "deb $mirror-security $suite-security main" >"$work/mmdebstrap.log" 2>&1 || { cat "$work/mmdebstrap.log" >&2; exit 1; }
kver=$(ls "$kdir/lib/modules")
mkdir -p "$work/root/lib/modules"
cp -a "$kdir/lib/modules/$kver" "$work/root/lib/modules/"
chroot "$work/root" depmod -a "$kver"
install -m 0755 "$(dirname "$0")/guest-stub.sh" "$work/root/usr/local/sbin/podrun-vm-test"
install -m 0755 "$(dirname "$0")/guest-init.sh" "$work/root/usr/local/sbin/podrun-vm-init"
install -m 0644 "$(dirname "$0")/podrun-vm-test.service" "$work/root/etc/systemd/system/podrun-vm-test.service"
ln -sf /etc/systemd/system/podrun-vm-test.service "$work/root/etc/systemd/system/multi-user.target.wants/podrun-vm-test.service"
mkdir -p "$work/root/payload"
size=$(( $(du -sm "$work/root" | cut -f1) + 1024 ))
rm -f "$out.tmp"
mke2fs -q -t ext4 -L podrun-root -d "$work/root" "$out.tmp" "${size}M"
mv "$out.tmp" "$out"
