package cgroups

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

const mi = 1 << 20

func TestMilliCPUToShares(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {2, 2}, {10, 10}, {100, 102}, {250, 256}, {1000, 1024}, {256000, 262144}, {300000, 262144},
	} {
		if got := MilliCPUToShares(tc.milli); got != tc.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tc := range []struct {
		milli, want int64
	}{
		{0, 0}, {1, 1000}, {5, 1000}, {10, 1000}, {11, 1100}, {100, 10000}, {1500, 150000},
	} {
		if got := MilliCPUToQuota(tc.milli, QuotaPeriod); got != tc.want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

// The pinned formula is the quadratic one; the linear one gives 1024 → 39.
func TestCPUWeight(t *testing.T) {
	for _, tc := range []struct{ shares, want uint64 }{
		{0, 0}, {2, 1}, {3, 2}, {10, 4}, {102, 17}, {256, 35}, {1024, 100}, {2048, 174}, {262144, 10000},
	} {
		if got := CPUWeight(tc.shares); got != tc.want {
			t.Errorf("CPUWeight(%d) = %d, want %d", tc.shares, got, tc.want)
		}
	}
}

func TestPodResources(t *testing.T) {
	tests := []struct {
		name             string
		req, lim         corev1.ResourceList
		qos              corev1.PodQOSClass
		cpuDecl, memDecl bool
		pids             int64
		want             Resources
	}{
		{
			// init limits (100m,1Gi) and (50m,2Gi), two apps at (10m,1100Mi): the
			// effective request/limit is cpu 100m, memory 2200Mi.
			name: "seed example, Guaranteed",
			req:  list("cpu", "100m", "memory", "2200Mi"),
			lim:  list("cpu", "100m", "memory", "2200Mi"),
			qos:  corev1.PodQOSGuaranteed, cpuDecl: true, memDecl: true,
			want: Resources{CPUShares: 102, CPUQuota: 10000, CPUPeriod: 100000, Memory: 2306867200},
		},
		{
			name: "Burstable with every limit declared",
			req:  list("cpu", "50m", "memory", "64Mi"),
			lim:  list("cpu", "200m", "memory", "128Mi"),
			qos:  corev1.PodQOSBurstable, cpuDecl: true, memDecl: true,
			want: Resources{CPUShares: 51, CPUQuota: 20000, CPUPeriod: 100000, Memory: 128 * mi},
		},
		{
			name: "Burstable, one container without a cpu limit",
			req:  list("cpu", "50m", "memory", "64Mi"),
			lim:  list("cpu", "200m", "memory", "128Mi"),
			qos:  corev1.PodQOSBurstable, cpuDecl: false, memDecl: true,
			want: Resources{CPUShares: 51, Memory: 128 * mi},
		},
		{
			name: "Burstable, one container without a memory limit",
			req:  list("cpu", "1", "memory", "64Mi"),
			lim:  list("cpu", "2", "memory", "128Mi"),
			qos:  corev1.PodQOSBurstable, cpuDecl: true, memDecl: false,
			want: Resources{CPUShares: 1024, CPUQuota: 200000, CPUPeriod: 100000},
		},
		{
			name: "Burstable without a cpu request",
			req:  list("memory", "64Mi"),
			qos:  corev1.PodQOSBurstable,
			want: Resources{CPUShares: 2},
		},
		{
			name: "BestEffort",
			qos:  corev1.PodQOSBestEffort,
			want: Resources{CPUShares: 2},
		},
		{
			name: "BestEffort ignores what it is given",
			req:  list("cpu", "1"), lim: list("cpu", "1", "memory", "1Gi"),
			qos: corev1.PodQOSBestEffort, cpuDecl: true, memDecl: true,
			want: Resources{CPUShares: 2},
		},
		{
			name: "tiny cpu limit gets the 1ms minimum quota",
			req:  list("cpu", "1m", "memory", "10Mi"),
			lim:  list("cpu", "1m", "memory", "10Mi"),
			qos:  corev1.PodQOSGuaranteed, cpuDecl: true, memDecl: true,
			want: Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, Memory: 10 * mi},
		},
		{
			name: "pids limit",
			qos:  corev1.PodQOSBestEffort, pids: 1024,
			want: Resources{CPUShares: 2, PidsLimit: 1024},
		},
		{
			name: "negative pids limit is unlimited",
			qos:  corev1.PodQOSBestEffort, pids: -1,
			want: Resources{CPUShares: 2},
		},
		{
			name: "hugepages from requests, falling back to limits",
			req:  list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"),
			lim:  list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi", "hugepages-1Gi", "2Gi"),
			qos:  corev1.PodQOSGuaranteed, cpuDecl: true, memDecl: true,
			want: Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 1 << 30,
				HugePages: map[string]int64{"2MB": 4 * mi, "1GB": 2 << 30}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResources(tc.req, tc.lim, tc.qos, tc.cpuDecl, tc.memDecl, tc.pids)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PodResources = %+v\nwant            %+v", got, tc.want)
			}
		})
	}
}

func TestContainerResources(t *testing.T) {
	c := func(req, lim corev1.ResourceList) *corev1.Container {
		return &corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name string
		c    *corev1.Container
		want Resources
	}{
		{
			name: "seed app container, limits only: shares from the limit",
			c:    c(nil, list("cpu", "10m", "memory", "1100Mi")),
			want: Resources{CPUShares: 10, CPUQuota: 1000, CPUPeriod: 100000, Memory: 1100 * mi},
		},
		{
			name: "seed init container after defaulting",
			c:    c(list("cpu", "100m", "memory", "1Gi"), list("cpu", "100m", "memory", "1Gi")),
			want: Resources{CPUShares: 102, CPUQuota: 10000, CPUPeriod: 100000, Memory: 1 << 30},
		},
		{
			name: "request below limit",
			c:    c(list("cpu", "250m", "memory", "64Mi"), list("cpu", "500m", "memory", "128Mi")),
			want: Resources{CPUShares: 256, CPUQuota: 50000, CPUPeriod: 100000, Memory: 128 * mi},
		},
		{
			name: "request only: no quota, no memory limit",
			c:    c(list("cpu", "1", "memory", "64Mi"), nil),
			want: Resources{CPUShares: 1024, CPUPeriod: 100000},
		},
		{
			name: "explicit zero request is not replaced by the limit",
			c:    c(list("cpu", "0"), list("cpu", "1")),
			want: Resources{CPUShares: 2, CPUQuota: 100000, CPUPeriod: 100000},
		},
		{
			name: "no resources",
			c:    c(nil, nil),
			want: Resources{CPUShares: 2, CPUPeriod: 100000},
		},
		{
			name: "hugepages from limits",
			c:    c(nil, list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi")),
			want: Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 1 << 30, HugePages: map[string]int64{"2MB": 8 * mi}},
		},
		{
			name: "nil container",
			c:    nil,
			want: Resources{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainerResources(tc.c, nil); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ContainerResources = %+v\nwant                  %+v", got, tc.want)
			}
		})
	}
}

func TestHugePageSize(t *testing.T) {
	for _, tc := range []struct {
		name corev1.ResourceName
		want string
		ok   bool
	}{
		{"hugepages-2Mi", "2MB", true},
		{"hugepages-1Gi", "1GB", true},
		{"hugepages-64Ki", "64KB", true},
		{"hugepages-16Gi", "16GB", true},
		{"cpu", "", false},
		{"hugepages-bogus", "", false},
		{"hugepages-0", "", false},
	} {
		got, ok := HugePageSize(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HugePageSize(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestToLibcontainer(t *testing.T) {
	ptrI := func(v int64) *int64 { return &v }
	seedPod := Resources{CPUShares: 102, CPUQuota: 10000, CPUPeriod: 100000, Memory: 2306867200}
	bestEffort := Resources{CPUShares: 2}
	oomContainer := Resources{CPUShares: 10, CPUQuota: 1000, CPUPeriod: 100000, Memory: 32 * mi}
	tests := []struct {
		name string
		r    Resources
		o    convertOpts
		want cg.Resources
	}{
		{
			name: "Guaranteed pod",
			r:    seedPod, o: convertOpts{pod: true},
			want: cg.Resources{CpuShares: 102, CpuWeight: 17, CpuQuota: 10000, CpuPeriod: 100000, Memory: 2306867200,
				PidsLimit: ptrI(-1), SkipDevices: true, SkipFreezeOnSet: true},
		},
		{
			name: "BestEffort pod: unset limits written as unlimited",
			r:    bestEffort, o: convertOpts{pod: true, swapAccounting: true},
			want: cg.Resources{CpuShares: 2, CpuWeight: 1, CpuQuota: -1, Memory: -1, PidsLimit: ptrI(-1),
				SkipDevices: true, SkipFreezeOnSet: true},
		},
		{
			name: "pod with hugetlb available: unrequested sizes limited to 0",
			r:    Resources{CPUShares: 2, HugePages: map[string]int64{"2MB": 4 * mi}},
			o:    convertOpts{pod: true, hugePageSizes: []string{"2MB", "1GB"}},
			want: cg.Resources{CpuShares: 2, CpuWeight: 1, CpuQuota: -1, Memory: -1, PidsLimit: ptrI(-1),
				SkipDevices: true, SkipFreezeOnSet: true,
				HugetlbLimit: []*cg.HugepageLimit{{Pagesize: "1GB", Limit: 0}, {Pagesize: "2MB", Limit: 4 * mi}}},
		},
		{
			name: "container on v1 with swap accounting",
			r:    oomContainer, o: convertOpts{swapAccounting: true},
			want: cg.Resources{CpuShares: 10, CpuWeight: 4, CpuQuota: 1000, CpuPeriod: 100000, Memory: 32 * mi,
				MemorySwap: 32 * mi, Devices: DefaultDeviceRules()},
		},
		{
			name: "container on v1 without swap accounting",
			r:    oomContainer, o: convertOpts{},
			want: cg.Resources{CpuShares: 10, CpuWeight: 4, CpuQuota: 1000, CpuPeriod: 100000, Memory: 32 * mi,
				Devices: DefaultDeviceRules()},
		},
		{
			name: "container on v2",
			r:    oomContainer, o: convertOpts{unified: true},
			want: cg.Resources{CpuShares: 10, CpuWeight: 4, CpuQuota: 1000, CpuPeriod: 100000, Memory: 32 * mi,
				MemorySwap: 32 * mi, Devices: DefaultDeviceRules(), Unified: map[string]string{"memory.oom.group": "1"}},
		},
		{
			name: "container without limits",
			r:    Resources{CPUShares: 2, CPUPeriod: 100000}, o: convertOpts{swapAccounting: true},
			want: cg.Resources{CpuShares: 2, CpuWeight: 1, CpuPeriod: 100000, Devices: DefaultDeviceRules()},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.toLibcontainer(tc.o); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("toLibcontainer = %+v\nwant             %+v", *got, tc.want)
			}
		})
	}
}

// TestV2Files runs runc's fs2 manager against a scratch directory (the
// library's TestMode) and reads back the files it writes on a cgroup v2 host:
// cpu.weight, cpu.max, memory.max, memory.swap.max, pids.max, hugetlb.*.max.
func TestV2Files(t *testing.T) {
	cg.TestMode = true
	t.Cleanup(func() { cg.TestMode = false })

	seedPod := PodResources(list("cpu", "100m", "memory", "2200Mi"), list("cpu", "100m", "memory", "2200Mi"),
		corev1.PodQOSGuaranteed, true, true, 0)
	burstable := PodResources(list("cpu", "250m", "memory", "64Mi"), list("memory", "128Mi"),
		corev1.PodQOSBurstable, false, true, 512)
	bestEffort := PodResources(nil, nil, corev1.PodQOSBestEffort, false, false, 0)
	oomContainer := ContainerResources(&corev1.Container{Resources: corev1.ResourceRequirements{
		Limits: list("cpu", "10m", "memory", "32Mi")}}, nil)
	plainContainer := ContainerResources(&corev1.Container{}, nil)
	hugeContainer := ContainerResources(&corev1.Container{Resources: corev1.ResourceRequirements{
		Limits: list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi")}}, nil)

	v2 := convertOpts{unified: true, hugePageSizes: []string{"1GB", "2MB"}}
	pod := v2
	pod.pod = true

	tests := []struct {
		name string
		r    Resources
		o    convertOpts
		want map[string]string // file → content; "" = must not be written
	}{
		{"seed Guaranteed pod", seedPod, pod, map[string]string{
			"cpu.weight": "17", "cpu.max": "10000 100000", "memory.max": "2306867200",
			"memory.swap.max": "", "pids.max": "max", "hugetlb.2MB.max": "0", "hugetlb.1GB.max": "0",
			"memory.oom.group": "",
		}},
		{"Burstable pod without cpu limits", burstable, pod, map[string]string{
			"cpu.weight": "35", "cpu.max": "max 100000", "memory.max": "134217728", "pids.max": "512",
		}},
		{"BestEffort pod", bestEffort, pod, map[string]string{
			"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max", "memory.swap.max": "max", "pids.max": "max",
		}},
		{"container with a 32Mi limit", oomContainer, v2, map[string]string{
			"cpu.weight": "4", "cpu.max": "1000 100000", "memory.max": "33554432", "memory.swap.max": "0",
			"memory.oom.group": "1", "pids.max": "",
		}},
		{"container without limits", plainContainer, v2, map[string]string{
			"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "", "memory.swap.max": "", "memory.oom.group": "1",
		}},
		{"container with hugepages", hugeContainer, v2, map[string]string{
			"cpu.weight": "100", "cpu.max": "100000 100000", "memory.max": "1073741824",
			"hugetlb.2MB.max": "8388608", "hugetlb.1GB.max": "0",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids hugetlb\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := tc.r.toLibcontainer(tc.o)
			// Device rules become an eBPF program attached to the directory, not
			// a file; a scratch directory cannot take one.
			res.SkipDevices = true
			m, err := fs2.NewManager(&cg.Cgroup{Resources: res}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Set(res); err != nil {
				t.Fatalf("fs2 Set: %v", err)
			}
			for file, want := range tc.want {
				data, err := os.ReadFile(filepath.Join(dir, file))
				switch {
				case want == "" && err == nil:
					t.Errorf("%s written (%q), want it untouched", file, data)
				case want == "":
				case err != nil:
					t.Errorf("%s: %v", file, err)
				case strings.TrimSpace(string(data)) != want:
					t.Errorf("%s = %q, want %q", file, strings.TrimSpace(string(data)), want)
				}
			}
		})
	}
}

func TestSystemdSlices(t *testing.T) {
	for _, tc := range []struct {
		parent, uid, wantParent, wantPod string
	}{
		{"/podrun", "1234-abcd", "podrun.slice", "podrun-pod1234_abcd.slice"},
		{"/podrun-test-x", "u", "podrun_test_x.slice", "podrun_test_x-podu.slice"},
		{"/a/b", "u", "a-b.slice", "a-b-podu.slice"},
		{"/", "u", "-.slice", "podu.slice"},
	} {
		p, pod := systemdSlices(tc.parent, tc.uid)
		if p != tc.wantParent || pod != tc.wantPod {
			t.Errorf("systemdSlices(%q, %q) = %q, %q; want %q, %q", tc.parent, tc.uid, p, pod, tc.wantParent, tc.wantPod)
		}
	}
}

func TestCreatePodRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ name, parent, uid, driver string }{
		{"relative parent", "podrun", "u1", ""},
		{"uid with slash", "/podrun", "a/b", ""},
		{"empty uid", "/podrun", "", ""},
		{"dot-dot uid", "/podrun", "..", ""},
		{"unknown driver", "/podrun", "u1", "bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CreatePod(tc.parent, tc.uid, Resources{}, tc.driver); err == nil {
				t.Fatal("CreatePod succeeded")
			}
		})
	}
}

func TestLinuxResources(t *testing.T) {
	ptrU := func(v uint64) *uint64 { return &v }
	ptrI := func(v int64) *int64 { return &v }
	r := Resources{CPUShares: 10, CPUQuota: 1000, CPUPeriod: 100000, Memory: 32 * mi, HugePages: map[string]int64{"2MB": 2 * mi}}
	tests := []struct {
		name string
		r    Resources
		o    convertOpts
		want specs.LinuxResources
	}{
		{"v1 with swap accounting and hugetlb", r, convertOpts{swapAccounting: true, hugePageSizes: []string{"2MB"}}, specs.LinuxResources{
			CPU:            &specs.LinuxCPU{Shares: ptrU(10), Quota: ptrI(1000), Period: ptrU(100000)},
			Memory:         &specs.LinuxMemory{Limit: ptrI(32 * mi), Swap: ptrI(32 * mi)},
			HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 2 * mi}},
		}},
		{"v1 without swap accounting nor hugetlb", r, convertOpts{}, specs.LinuxResources{
			CPU:    &specs.LinuxCPU{Shares: ptrU(10), Quota: ptrI(1000), Period: ptrU(100000)},
			Memory: &specs.LinuxMemory{Limit: ptrI(32 * mi)},
		}},
		{"v2", r, convertOpts{unified: true}, specs.LinuxResources{
			CPU:     &specs.LinuxCPU{Shares: ptrU(10), Quota: ptrI(1000), Period: ptrU(100000)},
			Memory:  &specs.LinuxMemory{Limit: ptrI(32 * mi), Swap: ptrI(32 * mi)},
			Unified: map[string]string{"memory.oom.group": "1"},
		}},
		{"no limits", Resources{CPUShares: 2, CPUPeriod: 100000, PidsLimit: 50}, convertOpts{}, specs.LinuxResources{
			CPU:  &specs.LinuxCPU{Shares: ptrU(2), Period: ptrU(100000)},
			Pids: &specs.LinuxPids{Limit: ptrI(50)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.linuxResources(tc.o); !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("linuxResources = %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

// Widest holds both sides' values: the larger shares, quota and memory, an
// unset (unlimited) one winning.
func TestWidest(t *testing.T) {
	a := Resources{CPUShares: 40, CPUQuota: 3000, CPUPeriod: QuotaPeriod, Memory: 100, PidsLimit: 7}
	b := Resources{CPUShares: 30, CPUQuota: 5000, CPUPeriod: QuotaPeriod, Memory: 50, PidsLimit: 7}
	if got, want := Widest(a, b), (Resources{CPUShares: 40, CPUQuota: 5000, CPUPeriod: QuotaPeriod, Memory: 100, PidsLimit: 7}); !reflect.DeepEqual(got, want) {
		t.Errorf("Widest = %+v, want %+v", got, want)
	}
	b.CPUQuota, b.CPUPeriod, b.Memory = 0, 0, 0
	if got, want := Widest(a, b), (Resources{CPUShares: 40, PidsLimit: 7}); !reflect.DeepEqual(got, want) {
		t.Errorf("Widest with b unlimited = %+v, want %+v", got, want)
	}
}
