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
# lifecycle hooks, crash recovery and the network, sized for CI under software
# emulation: the cgroup ones in both variants (they differ by driver), the
# others shared out between them. VM_TESTS (a -run pattern) overrides both.
# Not TestReadinessProbeTogglesReady: an exec probe must succeed within its
# 1s timeout, and each exec re-executes podrun in the container, which took
# longer under emulation on a loaded host (the HTTP/TCP probes do not exec).
common='TestCgroups.*|TestShareProcessNamespace'
tests_minimal='TestInitContainersRunInOrderAndShareAnEmptyDir|TestHTTPAndTCPProbesReachThePod|TestNetworkPodsReachEachOtherAndReportTheirAddresses|TestNetworkHostPortPublishesAContainerPort'
tests_systemd='TestLivenessExecProbeRestartsTheContainer|TestLifecycleHooks|TestDeleteAfterSupervisorCrashReleasesEverything|TestNetworkForwardDropHost'
# Left out of the VM (-test.skip; VM_SKIP overrides): the 10m-CPU pod of
# TestCgroupsPodAndContainerValues, whose containers start in minutes at 1% of
# an emulated CPU; its other cases check the same cgroup v2 values.
skip=${VM_SKIP-'^TestCgroupsPodAndContainerValues$/^seed-guaranteed$'}
# KVM when this machine offers one that runs the guest, else qemu's software
# emulation (TCG): decided once qemu is installed, below.
mem=${VM_MEM:-3072}
timeout=${VM_TIMEOUT:-3600}

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

# KVM when it runs a guest here, else software emulation. /dev/kvm is not
# enough: some hypervisors' nested KVM refuses an MSR that qemu sets for
# -cpu host (IA32_ARCH_CAPABILITIES, 0x10a: qemu aborts), or stops the guest
# early with "KVM internal error ... emulation failure" and qemu waits on it
# for ever. So the kernel is booted once with no root file system: a KVM
# that works gets it to its panic in a few seconds (qemu exits, -no-reboot).
kvm_cpu=host
kvm_boots() {
	local out rc=0
	out=$(timeout 20 qemu-system-x86_64 -machine q35 -accel kvm -cpu "$1" -m 256 -nographic -no-reboot -nic none \
		-kernel "$vmlinuz" -append "console=ttyS0 panic=-1" </dev/null 2>&1) || rc=$?
	[ "$rc" -eq 0 ] && grep -aq 'Kernel panic' <<<"$out"
}

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
if [ -z "${VM_ACCEL:-}" ]; then
	VM_ACCEL=tcg,thread=multi
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		for c in host host,-arch-capabilities; do
			if kvm_boots "$c"; then
				VM_ACCEL=kvm kvm_cpu=$c
				log "KVM runs the guest with -cpu $c"
				break
			fi
		done
		[ "$VM_ACCEL" = kvm ] || log "/dev/kvm does not run a guest here: software emulation"
	fi
fi
accel=$VM_ACCEL

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
qemu_pids=()
cleanup() {
	# No qemu outlives the run, even when it is interrupted or fails.
	local pf
	for pf in "$out"/*.qemu.pid; do
		[ -f "$pf" ] || continue
		kill "$(cat "$pf")" 2>/dev/null || true
		rm -f "$pf"
	done
	rm -rf "$payload" "$out/payload.img"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$payload" && mkdir -p "$payload"
bin=${VM_PODRUN:-bin/podrun}
cp "$bin" "$payload/podrun"
cp "$(dirname "$bin")/podrun-shim" "$(dirname "$bin")/podrun-image" "$payload/" # the CLI runs them from its own directory
cp _output/busybox.tar "$payload/busybox.tar"
go test -c -o "$payload/integration.test" ./integration
cp vm/guest-test.sh "$payload/guest-test.sh"
# Software emulation runs the guest several times slower: stretch the tests' waits.
scale=1
case $accel in tcg*) scale=${VM_SCALE:-4} ;; esac
{
	printf "VM_TESTS_minimal='%s'\n" "${VM_TESTS:-^($common|$tests_minimal)\$}"
	printf "VM_TESTS_systemd='%s'\n" "${VM_TESTS:-^($common|$tests_systemd)\$}"
	printf "VM_SKIP='%s'\nVM_SCALE=%s\n" "$skip" "$scale"
} >"$payload/env"
mke2fs -q -t ext4 -L podrun-payload -d "$payload" "$out/payload.img" $(( $(du -sm "$payload" | cut -f1) + 64 ))M

# boot VARIANT: one VM, its console in $out/VARIANT.log, its wall time in
# $out/VARIANT.time; succeeds when the guest's tests passed.
boot() {
	local v=$1 init cpu=qemu64 start took
	case $v in
	minimal) init="init=/usr/local/sbin/podrun-vm-init" ;;
	systemd) init="" ;;
	esac
	[ "$accel" != kvm ] || cpu=$kvm_cpu
	start=$(date +%s)
	rm -f "$out/$v.log"
	# Both variants boot the one root image: snapshot=on keeps it unchanged,
	# so they can run at the same time.
	timeout "$timeout" qemu-system-x86_64 -machine q35 -accel "$accel" -cpu "$cpu" -smp "$smp" -m "$mem" \
		-nographic -no-reboot -nic none -pidfile "$out/$v.qemu.pid" \
		-kernel "$vmlinuz" \
		-append "root=/dev/nvme0n1 rw console=ttyS0 panic=-1 no_timer_check quiet systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all podrun.variant=$v $init" \
		-drive file="$out/rootfs.img",if=none,id=root,format=raw,snapshot=on -device nvme,drive=root,serial=root \
		-drive file="$out/payload.img",if=none,id=payload,format=raw,readonly=on -device nvme,drive=payload,serial=payload \
		</dev/null 2>&1 | sed -u 's/\r$//' >"$out/$v.log" || true
	rm -f "$out/$v.qemu.pid"
	took=$(( $(date +%s) - start ))
	echo "$took" >"$out/$v.time"
	grep -q '^PODRUN-VM-RESULT rc=0' "$out/$v.log"
}

# report VARIANT RC: the verdict, and the log's essentials (podrun info, the
# tests' results; all of it on failure).
report() {
	local v=$1 rc=$2 took
	took=$(cat "$out/$v.time" 2>/dev/null || echo "?")
	if [ "$rc" -eq 0 ]; then
		sed -n '/^podrun-vm:/,$p' "$out/$v.log" | grep -E '^(podrun-vm|  |Warning|podrun |---|=== RUN|ok|PASS|FAIL|PODRUN-VM)|cgroup|supervisor' >&2 || true
		log "$v: passed in ${took}s (log: $out/$v.log)"
	else
		cat "$out/$v.log" >&2
		log "$v: FAILED after ${took}s ($(grep -o 'PODRUN-VM-RESULT.*' "$out/$v.log" || echo no result); log: $out/$v.log)"
	fi
}

for v in $variants; do
	case $v in minimal | systemd) ;; *) log "unknown variant $v (minimal, systemd)"; exit 2 ;; esac
done
# The variants run side by side when the host has two cores per VM to give,
# one after the other otherwise (VM_PARALLEL=0/1 forces it).
nv=$(echo $variants | wc -w)
parallel=${VM_PARALLEL:-}
if [ -z "$parallel" ]; then
	parallel=0
	[ "$(nproc)" -lt $(( 2 * nv )) ] || parallel=1
fi
smp=${VM_SMP:-2}
rc=0
all_start=$(date +%s)
if [ "$parallel" = 1 ] && [ "$nv" -gt 1 ]; then
	declare -A pid
	for v in $variants; do
		log "booting $v ($accel, alongside the others)"
		boot "$v" & pid[$v]=$!
	done
	for v in $variants; do
		r=0
		wait "${pid[$v]}" || r=$?
		report "$v" "$r"
		[ "$r" -eq 0 ] || rc=1
	done
else
	for v in $variants; do
		log "booting $v ($accel)"
		r=0
		boot "$v" || r=$?
		report "$v" "$r"
		[ "$r" -eq 0 ] || rc=1
	done
fi
log "all variants ($variants): $(( $(date +%s) - all_start ))s$( for v in $variants; do printf ', %s %ss' "$v" "$(cat "$out/$v.time" 2>/dev/null)"; done)"
exit $rc
