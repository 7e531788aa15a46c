#!/usr/bin/env bash
# vm/run.sh [minimal] [systemd]: the VM test tier (`make test-vm`). Boots
# Debian's cloud kernel (linux-image-cloud-amd64, from apt) in qemu on a root
# filesystem built with mmdebstrap, with the pure cgroup v2 hierarchy, once per
# variant:
#   minimal  a shell script as PID 1 (podrun picks the cgroupfs driver)
#   systemd  systemd as PID 1, the tests running in a service unit as a CI
#            step does (podrun picks the systemd driver)
# and runs a subset of the end-to-end tests in it (VM_TESTS overrides the
# -run pattern). Everything goes under _output/vm: the kernel and the root
# filesystem image are kept there between runs (rebuilt when vm/ changes),
# the per-run payload disk is removed at the end. Needs root (mmdebstrap,
# chroot) and the Debian packages it installs below.
set -euo pipefail
cd "$(dirname "$0")/.."
out=_output/vm
variants=${*:-minimal systemd}
# The tests that touch cgroups, OOM kills, shareProcessNamespace, probes,
# lifecycle hooks, graceful delete, crash recovery and the network.
tests=${VM_TESTS:-'^(TestCgroups.*|TestShareProcessNamespace|TestLivenessExecProbeRestartsTheContainer|TestReadinessProbeTogglesReady|TestHTTPAndTCPProbesReachThePod|TestLifecycleHooks|TestDeleteIsGracefulThenForceful|TestDeleteAfterSupervisorCrashReleasesEverything|TestInitContainersRunInOrderAndShareAnEmptyDir|TestAppContainersRunTogetherAndShareTheNetwork|TestNetworkPodsReachEachOtherAndReportTheirAddresses|TestNetworkHostPortPublishesAContainerPort|TestNetworkForwardDropHost)$'}
# KVM when this machine offers it, else qemu's software emulation (TCG).
if [ -z "${VM_ACCEL:-}" ]; then
	VM_ACCEL=tcg,thread=multi
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then VM_ACCEL=kvm; fi
fi
accel=$VM_ACCEL
mem=${VM_MEM:-3072}
timeout=${VM_TIMEOUT:-1800}

# The build tags the Makefile sets, for `go test -c` when run by hand.
export GOFLAGS=${GOFLAGS:--tags=containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper,seccomp}

log() { echo "test-vm: $*" >&2; }

missing=""
for p in qemu-system-x86 mmdebstrap e2fsprogs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
	log "installing:$missing"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
mkdir -p "$out"

# The kernel: the package linux-image-cloud-amd64 depends on, unpacked.
kpkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
[ -n "$kpkg" ] || { log "apt knows no linux-image-cloud-amd64 (apt-get update?)"; exit 1; }
kdir=$out/kernel
if [ "$(cat "$kdir/.pkg" 2>/dev/null)" != "$kpkg" ]; then
	log "unpacking $kpkg"
	rm -rf "$kdir" "$out/deb"
	mkdir -p "$kdir" "$out/deb"
	(cd "$out/deb" && apt-get download "$kpkg" >/dev/null 2>&1)
	dpkg-deb -x "$out"/deb/*.deb "$kdir"
	rm -rf "$out/deb"
	echo "$kpkg" >"$kdir/.pkg"
fi
vmlinuz=$(ls "$kdir"/boot/vmlinuz-*)

# The root filesystem, rebuilt when the kernel or the guest's scripts change.
stamp=$(cat "$kdir/.pkg" vm/rootfs.sh vm/guest-init.sh vm/guest-stub.sh vm/podrun-vm-test.service | sha256sum | cut -c1-16)
if [ "$(cat "$out/rootfs.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$out/rootfs.img" ]; then
	log "building the root filesystem with mmdebstrap"
	rm -f "$out/rootfs.img" "$out/rootfs.stamp"
	vm/rootfs.sh "$out/rootfs.img" "$kdir"
	echo "$stamp" >"$out/rootfs.stamp"
fi

# The payload: podrun, the end-to-end test binary, the test image, the pattern.
payload=$out/payload
trap 'rm -rf "$payload" "$out/payload.img"' EXIT
rm -rf "$payload" && mkdir -p "$payload"
bin=${VM_PODRUN:-bin/podrun}
cp "$bin" "$payload/podrun"
cp "$(dirname "$bin")/podrun-shim" "$payload/podrun-shim" # the CLI runs it from its own directory
cp _output/busybox.tar "$payload/busybox.tar"
go test -c -o "$payload/integration.test" ./integration
cp vm/guest-test.sh "$payload/guest-test.sh"
# Software emulation runs the guest several times slower: stretch the tests' waits.
scale=1
case $accel in tcg*) scale=${VM_SCALE:-4} ;; esac
printf "VM_TESTS='%s'\nVM_SCALE=%s\n" "$tests" "$scale" >"$payload/env"
mke2fs -q -t ext4 -L podrun-payload -d "$payload" "$out/payload.img" $(( $(du -sm "$payload" | cut -f1) + 64 ))M

rc=0
for v in $variants; do
	case $v in
	minimal) init="init=/usr/local/sbin/podrun-vm-init" ;;
	systemd) init="" ;;
	*) log "unknown variant $v (minimal, systemd)"; exit 2 ;;
	esac
	log "booting $v ($accel)"
	start=$(date +%s)
	set +e
	cpu=qemu64
	[ "$accel" != kvm ] || cpu=host
	timeout "$timeout" qemu-system-x86_64 -machine q35 -accel "$accel" -cpu "$cpu" -smp 2 -m "$mem" \
		-nographic -no-reboot -nic none \
		-kernel "$vmlinuz" \
		-append "root=/dev/nvme0n1 rw console=ttyS0 panic=-1 no_timer_check quiet systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all podrun.variant=$v $init" \
		-drive file="$out/rootfs.img",if=none,id=root,format=raw,snapshot=on -device nvme,drive=root,serial=root \
		-drive file="$out/payload.img",if=none,id=payload,format=raw,readonly=on -device nvme,drive=payload,serial=payload \
		</dev/null 2>&1 | sed -u 's/\r$//' | tee "$out/$v.log"
	set -e
	took=$(( $(date +%s) - start ))
	if grep -q '^PODRUN-VM-RESULT rc=0' "$out/$v.log"; then
		log "$v: passed in ${took}s (log: $out/$v.log)"
	else
		log "$v: FAILED after ${took}s ($(grep -o 'PODRUN-VM-RESULT.*' "$out/$v.log" || echo no result); log: $out/$v.log)"
		rc=1
	fi
done
exit $rc
