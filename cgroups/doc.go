// Package cgroups gives a pod the cgroups the kubelet would give it on a node:
// a pod-level cgroup sized from the pod's effective requests and limits, and
// one child per container with the container's own values. It works through
// runc's cgroups manager (github.com/opencontainers/cgroups): the fs driver on
// cgroup v1 and hybrid hosts, fs2 on v2, and the systemd driver where
// containerd and the kubelet would use it (DefaultDriver) or on request.
//
// Layout: <parent>/pod<uid>/<container-id>, parent "/podrun" by default. The
// parent is created on first use and, like the kubelet's kubepods, kept by
// DestroyPod (pods come and go concurrently; removing a shared parent would
// race with the next CreatePod); DestroyParent removes it. Paths are absolute:
// a relative cgroup path would land below the caller's own cgroup. Under the
// systemd driver the names are the kubelet's: podrun.slice and
// podrun-pod<uid>.slice (with '-' in the UID escaped to '_'), containers in
// podrun-<id>.scope. The systemd driver is exercised by `make test-vm`
// (systemd as PID 1 on cgroup v2, in qemu); this development host has no systemd.
//
// Values (pkg/kubelet/cm/helpers_linux.go and
// pkg/kubelet/kuberuntime/kuberuntime_container_linux.go):
//   - PodResources: cpu.shares from the pod's cpu request (min 2, max
//     262144), cfs quota from its cpu limit over a 100ms period (min 1ms),
//     memory limit from its memory limit, with the QoS rules deciding what is
//     set; hugetlb limits from the hugepage requests; pids limit from the
//     caller (0 = unlimited, podrun's default, as the kubelet's --pod-max-pids=-1).
//     Whatever a pod does not limit is written as unlimited (-1 / "max"), which
//     is what a fresh cgroup holds anyway and makes CreatePod converge when the
//     cgroup already exists.
//   - ContainerResources: the kubelet's per-container values; the container's
//     memory+swap limit equals its memory limit (the kubelet's NoSwap) where
//     the host accounts swap, and on v2 memory.oom.group=1 (the kubelet's
//     default) so that the OOM killer takes the whole container.
//   - cgroup v2: cpu.weight from cpu.shares with the formula of
//     opencontainers/cgroups v0.0.4 (ConvertCPUSharesToCgroupV2Value, the
//     quadratic-in-log2 mapping runc and crun adopted after kubernetes#131216:
//     2→1, 1024→100, 262144→10000), for the pod and the containers alike;
//     cpu.max "<quota> <period>" or "max <period>"; memory.max; pids.max.
//   - Hugepages are limited only where the manager can write them: every host
//     page size is limited, to 0 unless requested, as the kubelet does. On a
//     hybrid host whose hugetlb controller sits on the v2 mount only, the v1 fs
//     manager cannot, and (like the kubelet) podrun leaves hugetlb alone.
//   - Devices: the pod cgroup skips device rules (as the kubelet's pod cgroups
//     do); each container gets runc's default rules (DefaultDeviceRules).
//
// Teardown: DestroyPod kills what is left (cgroup.kill on v2, freeze/SIGKILL/
// thaw on v1, through pidfds so that a recycled pid is never hit), waits for
// the processes to leave, removes the children and then the pod cgroup in
// every hierarchy, and retries EBUSY until a deadline. It needs only the
// parent and the UID, so it works after a supervisor crash.
//
// On cgroup v2 the parent's controllers are enabled in each ancestor's
// cgroup.subtree_control, so podrun must not run inside a cgroup namespace
// whose root holds processes (the kernel refuses controllers there).
package cgroups
