package cgroups

import (
	"fmt"
	"sort"
	"strings"

	cg "github.com/opencontainers/cgroups"
	devices "github.com/opencontainers/cgroups/devices/config"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's constants (pkg/kubelet/cm/helpers_linux.go); the share bounds
// are the kernel's.
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	MilliCPUToCPU  = 1000
	QuotaPeriod    = 100000 // µs: the CFS period the kubelet uses (100ms)
	MinQuotaPeriod = 1000   // µs: the smallest quota the kubelet writes (1ms)
)

// Resources are the values written to one cgroup. A zero field is not set: the
// cgroup keeps what it inherits (no limit).
type Resources struct {
	CPUShares uint64           // cpu.shares on v1; cpu.weight on v2 through CPUWeight; 0 = unset
	CPUQuota  int64            // µs per CPUPeriod; 0 = unset (no limit)
	CPUPeriod uint64           // µs; 0 = unset
	Memory    int64            // bytes; 0 = unset (no limit)
	PidsLimit int64            // 0 = unset (no limit)
	HugePages map[string]int64 // page size as the kernel names it ("2MB", "1GB") → bytes
}

// MilliCPUToShares converts a cpu request to cpu.shares as the kubelet does:
// 0 gives the minimum (2) rather than the kernel default 1024.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / MilliCPUToCPU
	if shares < MinShares {
		return MinShares
	}
	if shares > MaxShares {
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a cpu limit to a CFS quota over period as the
// kubelet does: 0 means no limit, anything else is at least 1ms.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := milliCPU * period / MilliCPUToCPU
	if quota < MinQuotaPeriod {
		return MinQuotaPeriod
	}
	return quota
}

// CPUWeight is the cgroup v2 cpu.weight podrun writes for cpu.shares: the
// formula of opencontainers/cgroups v0.0.4 ConvertCPUSharesToCgroupV2Value
// (runc ≥ 1.3.2 / crun ≥ 1.23, adopted by Kubernetes after kubernetes#131216),
// which maps 2→1, 1024→100 (the v2 default) and 262144→10000. It is used for
// the pod cgroup and for every container cgroup, so that a one-container pod
// gets the same weight as its container. The older linear formula
// 1+((shares-2)*9999)/262142 (kubelet getCPUWeight) gives 1024→39.
func CPUWeight(shares uint64) uint64 {
	return cg.ConvertCPUSharesToCgroupV2Value(shares)
}

// PodResources derives the pod cgroup's values from the pod's effective
// requests and limits exactly as the kubelet's ResourceConfigForPod does:
//   - Guaranteed: cpu shares, cfs quota/period and memory limit;
//   - Burstable: cpu shares always; quota only if every container (init ones
//     included) declared a cpu limit; memory only if every container declared
//     a memory limit;
//   - BestEffort (and any other class): cpu shares 2 only.
//
// Hugepage limits come from the requests, as the kubelet takes them (the API
// requires hugepage requests to equal limits; a size missing from requests
// falls back to the limit). pidsLimit ≤ 0 means unlimited (the kubelet's
// --pod-max-pids default of -1); podrun's default is unlimited.
func PodResources(requests, limits corev1.ResourceList, qos corev1.PodQOSClass, cpuLimitsDeclared, memoryLimitsDeclared bool, pidsLimit int64) Resources {
	var cpuRequest, cpuLimit, memoryLimit int64
	if q, ok := requests[corev1.ResourceCPU]; ok {
		cpuRequest = q.MilliValue()
	}
	if q, ok := limits[corev1.ResourceCPU]; ok {
		cpuLimit = q.MilliValue()
	}
	if q, ok := limits[corev1.ResourceMemory]; ok {
		memoryLimit = q.Value()
	}
	shares := MilliCPUToShares(cpuRequest)
	quota := MilliCPUToQuota(cpuLimit, QuotaPeriod)

	r := Resources{HugePages: hugePages(requests, limits)}
	if pidsLimit > 0 {
		r.PidsLimit = pidsLimit
	}
	switch qos {
	case corev1.PodQOSGuaranteed:
		r.CPUShares, r.CPUQuota, r.CPUPeriod, r.Memory = shares, quota, QuotaPeriod, memoryLimit
	case corev1.PodQOSBurstable:
		r.CPUShares = shares
		if cpuLimitsDeclared {
			r.CPUQuota, r.CPUPeriod = quota, QuotaPeriod
		}
		if memoryLimitsDeclared {
			r.Memory = memoryLimit
		}
	default:
		r.CPUShares = MinShares
	}
	return r
}

// Widest is, value by value, the wider of a's and b's cpu and memory: the
// larger shares, the larger quota and memory limit (unset, unlimited, wins);
// the rest is b's. A pod cgroup written with it holds both a's and b's
// container values while its containers are resized from one to the other.
func Widest(a, b Resources) Resources {
	out := b
	out.CPUShares = max(a.CPUShares, b.CPUShares)
	wider := func(x, y int64) int64 {
		if x <= 0 || y <= 0 {
			return 0
		}
		return max(x, y)
	}
	out.CPUQuota = wider(a.CPUQuota, b.CPUQuota)
	if out.CPUQuota == 0 {
		out.CPUPeriod = 0
	}
	out.Memory = wider(a.Memory, b.Memory)
	return out
}

// ContainerResources derives a container cgroup's values as the kubelet's
// generateLinuxContainerResources does: shares from the cpu request (from the
// limit when no request is given, 2 when neither), quota from the cpu limit
// with the 100ms period always set, memory from the memory limit, hugepages
// from the limits. OOM score adjustment is the caller's business.
func ContainerResources(c *corev1.Container, pod *corev1.ResourceRequirements) Resources {
	if c == nil {
		return Resources{}
	}
	req, lim := c.Resources.Requests, ContainerLimits(c, pod)
	var shares uint64
	if q, ok := req[corev1.ResourceCPU]; ok {
		shares = MilliCPUToShares(q.MilliValue())
	} else {
		shares = MilliCPUToShares(lim.Cpu().MilliValue())
	}
	return Resources{
		CPUShares: shares,
		CPUQuota:  MilliCPUToQuota(lim.Cpu().MilliValue(), QuotaPeriod),
		CPUPeriod: QuotaPeriod,
		Memory:    lim.Memory().Value(),
		HugePages: hugePages(lim, nil),
	}
}

// ContainerLimits is c's limits as its cgroup takes them (kuberuntime's
// getCPULimit and getMemoryLimit, kubeutil.GetLimits): with pod-level
// resources, a container without a cpu or memory limit of its own is
// limited by the pod's. The supervisor compares them to decide a resize.
func ContainerLimits(c *corev1.Container, pod *corev1.ResourceRequirements) corev1.ResourceList {
	lim := c.Resources.Limits
	if pod == nil || len(pod.Requests) == 0 && len(pod.Limits) == 0 {
		return lim
	}
	lim = lim.DeepCopy()
	if lim == nil {
		lim = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q := lim[name]; q.IsZero() {
			if pq, ok := pod.Limits[name]; ok && !pq.IsZero() {
				lim[name] = pq
			}
		}
	}
	return lim
}

// hugePages sums hugepages-<size> resources of primary per page size, taking a
// size missing there from fallback.
func hugePages(primary, fallback corev1.ResourceList) map[string]int64 {
	out := map[string]int64{}
	for name, q := range primary {
		if size, ok := HugePageSize(name); ok {
			out[size] += q.Value()
		}
	}
	fromFallback := map[string]int64{}
	for name, q := range fallback {
		if size, ok := HugePageSize(name); ok {
			if _, inPrimary := out[size]; !inPrimary {
				fromFallback[size] += q.Value()
			}
		}
	}
	for size, v := range fromFallback {
		out[size] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// HugePageSize turns a resource name such as "hugepages-2Mi" into the kernel's
// page size name ("2MB"), as the kubelet's HugePageUnitSizeFromByteSize does.
func HugePageSize(name corev1.ResourceName) (string, bool) {
	s, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
	if !ok {
		return "", false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return "", false
	}
	size := q.Value()
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if size > 1024 && i < len(units)-1 {
		return "", false
	}
	return fmt.Sprintf("%d%s", size, units[i]), true
}

// convertOpts describes the host and the kind of cgroup a conversion is for.
type convertOpts struct {
	// pod: the pod-level cgroup. Unset limits are written as "unlimited" so that
	// CreatePod converges on an existing cgroup, and device rules are skipped
	// (as the kubelet does) so containers get their own.
	pod bool
	// unified: cgroup v2 (fs2 or systemd v2 manager).
	unified bool
	// swapAccounting: v1 has memory.memsw.*; a container's memory+swap limit is
	// then set to its memory limit (the kubelet's NoSwap).
	swapAccounting bool
	// hugePageSizes the manager can limit; nil when the hugetlb controller is
	// not available to it (on this hybrid host it sits on the v2 mount only).
	hugePageSizes []string
}

// toLibcontainer converts r for runc's cgroups manager. Both CpuShares and
// CpuWeight are filled, as runc's specconv does: fs uses shares, fs2 the weight.
func (r Resources) toLibcontainer(o convertOpts) *cg.Resources {
	out := &cg.Resources{
		CpuShares: r.CPUShares,
		CpuWeight: CPUWeight(r.CPUShares),
		CpuQuota:  r.CPUQuota,
		CpuPeriod: r.CPUPeriod,
		Memory:    r.Memory,
	}
	// cgroups 0.1 (runtime-spec 1.3): a nil limit keeps the current one, < 0 is "max".
	if r.PidsLimit != 0 {
		l := r.PidsLimit
		out.PidsLimit = &l
	}
	if o.pod {
		out.SkipDevices = true
		out.SkipFreezeOnSet = true
		if out.CpuQuota == 0 {
			out.CpuQuota = -1
		}
		if out.Memory == 0 {
			out.Memory = -1
		}
		if out.PidsLimit == nil {
			unlimited := int64(-1)
			out.PidsLimit = &unlimited
		}
	} else {
		out.Devices = DefaultDeviceRules()
		if r.Memory > 0 && (o.unified || o.swapAccounting) {
			out.MemorySwap = r.Memory
		}
		if o.unified {
			// The kubelet's default on v2 (singleProcessOOMKill=false): the OOM
			// killer takes the whole container, not one of its processes.
			out.Unified = map[string]string{"memory.oom.group": "1"}
		}
	}
	out.HugetlbLimit = hugetlbLimits(r.HugePages, o.hugePageSizes)
	return out
}

// hugetlbLimits limits every page size the host has, to 0 unless asked for, as
// the kubelet does for pod and container cgroups.
func hugetlbLimits(want map[string]int64, sizes []string) []*cg.HugepageLimit {
	if sizes == nil {
		return nil
	}
	var out []*cg.HugepageLimit
	for _, size := range sizes {
		l := &cg.HugepageLimit{Pagesize: size}
		if v := want[size]; v > 0 {
			l.Limit = uint64(v)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pagesize < out[j].Pagesize })
	return out
}

// LinuxResources gives r as OCI runtime-spec resources for a container, for a
// caller that builds its libcontainer config through runc's specconv (which
// adds the default device rules itself and converts shares to cpu.weight with
// the same CPUWeight formula). Swap is limited to the memory limit (no swap)
// where the host accounts swap, as the kubelet does.
func (r Resources) LinuxResources() *specs.LinuxResources {
	return r.linuxResources(hostConvertOpts(false))
}

func (r Resources) linuxResources(o convertOpts) *specs.LinuxResources {
	out := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	if r.CPUShares != 0 {
		v := r.CPUShares
		out.CPU.Shares = &v
	}
	if r.CPUQuota != 0 {
		v := r.CPUQuota
		out.CPU.Quota = &v
	}
	if r.CPUPeriod != 0 {
		v := r.CPUPeriod
		out.CPU.Period = &v
	}
	if r.Memory != 0 {
		m := r.Memory
		out.Memory = &specs.LinuxMemory{Limit: &m}
		if m > 0 && (o.unified || o.swapAccounting) {
			s := m
			out.Memory.Swap = &s
		}
	}
	if r.PidsLimit != 0 {
		l := r.PidsLimit
		out.Pids = &specs.LinuxPids{Limit: &l}
	}
	for _, l := range hugetlbLimits(r.HugePages, o.hugePageSizes) {
		out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: l.Pagesize, Limit: l.Limit})
	}
	if o.unified {
		out.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return out
}

// DefaultDeviceRules are the device cgroup rules a container gets: deny
// everything, then runc's default allow list (specconv.AllowedDevices: mknod
// of any device, /dev/null, zero, full, random, urandom, tty, ptmx, pts and
// /dev/net/tun). Append to ContainerConfig(...).Devices for more.
func DefaultDeviceRules() []*devices.Rule {
	c, b := devices.CharDevice, devices.BlockDevice
	w := int64(devices.Wildcard)
	rule := func(t devices.Type, major, minor int64, perms string) *devices.Rule {
		return &devices.Rule{Type: t, Major: major, Minor: minor, Permissions: devices.Permissions(perms), Allow: true}
	}
	return []*devices.Rule{
		{Type: devices.WildcardDevice, Major: w, Minor: w, Permissions: "rwm", Allow: false},
		rule(c, w, w, "m"),
		rule(b, w, w, "m"),
		rule(c, 1, 3, "rwm"),    // /dev/null
		rule(c, 1, 8, "rwm"),    // /dev/random
		rule(c, 1, 7, "rwm"),    // /dev/full
		rule(c, 5, 0, "rwm"),    // /dev/tty
		rule(c, 1, 5, "rwm"),    // /dev/zero
		rule(c, 1, 9, "rwm"),    // /dev/urandom
		rule(c, 136, w, "rwm"),  // /dev/pts/*
		rule(c, 5, 2, "rwm"),    // /dev/ptmx
		rule(c, 10, 200, "rwm"), // /dev/net/tun
	}
}
