#!/bin/sh
# Runs from the payload disk inside the `make test-vm` guest (both variants): loads the kernel
# modules pods need, gives the guest an uplink address (a dummy interface
# with a default route, so pods have a host IP; no traffic leaves the VM),
# prints `podrun info`, runs the chosen end-to-end tests from the payload
# disk and ends with a line the host script reads.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /payload/env
variant=$(sed -n 's/.*podrun\.variant=\([a-z]*\).*/\1/p' /proc/cmdline)
echo "podrun-vm: variant $variant, kernel $(uname -r), PID 1 $(cat /proc/1/comm)"
for m in overlay bridge br_netfilter veth dummy nf_tables nf_nat nf_conntrack nft_chain_nat nft_masq nft_nat \
	nft_fib_ipv4 nft_ct nft_compat nf_conntrack_netlink ip_tables iptable_filter iptable_nat xt_conntrack xt_comment; do
	modprobe -q "$m" || echo "podrun-vm: modprobe $m failed"
done
ip link set lo up
ip link add pho-uplink type dummy
ip addr add 10.218.253.1/24 dev pho-uplink
ip link set pho-uplink up
ip route add default via 10.218.253.254 dev pho-uplink
cd /payload
echo "podrun-vm: podrun info"
./podrun info
# Where a pod's processes live: the supervisor (its own scope under systemd),
# the shareProcessNamespace holder (the sandbox cgroup), the containers.
echo "podrun-vm: where a pod's processes live"
mkdir -p /tmp/vmcheck
P="/payload/podrun --root /tmp/vmcheck/root --run-root /tmp/vmcheck/run"
$P load -i busybox.tar --tag busybox:1.28 >/dev/null
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: where}\nspec:\n  shareProcessNamespace: true\n  containers:\n  - {name: c, image: busybox:1.28, command: [sleep, "3600"]}\n' >/tmp/vmcheck/p.yaml
check_rc=0
if [ "$variant" = systemd ]; then
	# As a CI step: apply from a service unit of its own, which systemd stops
	# (killing whatever is left in it) once apply returns. The pod must live on.
	systemd-run --quiet --wait --collect --unit=podrun-vm-step $P apply /tmp/vmcheck/p.yaml --wait --timeout 5m || check_rc=1
	sleep 2
	phase=$($P get where -o jsonpath='{.status.phase}')
	if [ "$phase" = Running ] && kill -0 "$(cat /tmp/vmcheck/run/pods/*/supervisor.pid)"; then
		echo "podrun-vm: the pod outlived the unit that applied it (phase $phase, supervisor alive)"
	else
		echo "podrun-vm: FAIL: the pod did not outlive the unit that applied it (phase $phase)"
		check_rc=1
	fi
	# The services owner (cluster DNS, Service rules) must outlive it too.
	owner=$(cat /tmp/vmcheck/run/services/owner.pid 2>/dev/null)
	if [ -n "$owner" ] && kill -0 "$owner" && ! grep -q podrun-vm-step "/proc/$owner/cgroup"; then
		echo "podrun-vm: the services owner outlived the unit too ($(cat /proc/$owner/cgroup))"
	else
		echo "podrun-vm: FAIL: the services owner did not outlive the unit that applied the pod"
		check_rc=1
	fi
else
	$P apply /tmp/vmcheck/p.yaml --wait --timeout 5m || check_rc=1
fi
echo "this script: $(cat /proc/self/cgroup)"
for pid in $(cat /tmp/vmcheck/run/pods/*/supervisor.pid); do echo "supervisor $pid: $(cat /proc/$pid/cgroup)"; done
for f in $(find /sys/fs/cgroup -path '*podrun*' -name cgroup.procs); do
	procs=""
	for pid in $(cat "$f"); do procs="$procs $pid($(cat /proc/$pid/comm 2>/dev/null))"; done
	[ -z "$procs" ] || echo "$(dirname "$f"):$procs"
done
$P delete where --grace-period 1
rm -rf /tmp/vmcheck
eval "tests=\$VM_TESTS_$variant"
echo "podrun-vm: go test -run '$tests' -skip '$VM_SKIP'"
start=$(date +%s)
PODRUN_TEST_NET=10.218 PODRUN_BIN=/payload/podrun PODRUN_TEST_IMAGE=/payload/busybox.tar PODRUN_TEST_TIMEOUT_SCALE=$VM_SCALE \
	./integration.test -test.v -test.count=1 -test.timeout 55m -test.run "$tests" -test.skip "$VM_SKIP" 2>&1
rc=$?
[ "$check_rc" -eq 0 ] || rc=1
echo "podrun-vm: tests took $(( $(date +%s) - start ))s"
echo "PODRUN-VM-RESULT rc=$rc"
exit $rc
