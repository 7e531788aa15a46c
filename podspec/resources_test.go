//go:build !podrun_lean

package podspec

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl builds a ResourceList from "name=quantity" pairs.
func rl(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		l[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return l
}

// rlString prints a ResourceList canonically, e.g. "cpu=100m memory=2200Mi".
func rlString(l corev1.ResourceList) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, string(k)+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(name string, req, lim corev1.ResourceList) corev1.Container {
	c := ctr(name, req, lim)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func TestSeedEffectiveResources(t *testing.T) {
	m, err := LoadFile("testdata/seed-resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plans()
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	if got, want := rlString(p.Limits), "cpu=100m memory=2200Mi"; got != want {
		t.Errorf("effective limits = %s, want %s", got, want)
	}
	if got, want := rlString(p.Requests), "cpu=100m memory=2200Mi"; got != want {
		t.Errorf("effective requests = %s, want %s", got, want)
	}
	if !p.CPULimitsDeclared || !p.MemoryLimitsDeclared {
		t.Errorf("limits declared = %v/%v, want true/true", p.CPULimitsDeclared, p.MemoryLimitsDeclared)
	}
	if p.QOS != corev1.PodQOSGuaranteed {
		t.Errorf("QOS = %s, want Guaranteed", p.QOS)
	}
}

func TestEffectiveRequests(t *testing.T) {
	tests := []struct {
		name       string
		init, apps []corev1.Container
		want       string
	}{
		{
			name: "app containers are summed",
			apps: []corev1.Container{ctr("a", rl("cpu=1", "memory=1Gi"), nil), ctr("b", rl("cpu=500m"), nil)},
			want: "cpu=1500m memory=1Gi",
		},
		{
			name: "an init container above the sum wins",
			init: []corev1.Container{ctr("i", rl("cpu=2", "memory=100Mi"), nil)},
			apps: []corev1.Container{ctr("a", rl("cpu=1", "memory=1Gi"), nil)},
			want: "cpu=2 memory=1Gi",
		},
		{
			name: "a sidecar counts with the apps and under later init containers",
			init: []corev1.Container{sidecar("s", rl("cpu=1"), nil), ctr("i", rl("cpu=2"), nil)},
			apps: []corev1.Container{ctr("a", rl("cpu=3"), nil)},
			want: "cpu=4", // max(3+1, max(1, 2+1))
		},
		{
			name: "a sidecar does not add to init containers before it",
			init: []corev1.Container{ctr("i", rl("cpu=5"), nil), sidecar("s", rl("cpu=1"), nil)},
			apps: []corev1.Container{ctr("a", rl("cpu=1"), nil)},
			want: "cpu=5", // max(1+1, max(5, 1))
		},
		{
			name: "init use is the init container plus all sidecars before it",
			init: []corev1.Container{sidecar("s1", rl("cpu=1"), nil), sidecar("s2", rl("cpu=2"), nil), ctr("i", rl("cpu=4"), nil)},
			apps: []corev1.Container{ctr("a", rl("cpu=1"), nil)},
			want: "cpu=7", // max(1+3, max(1, 3, 4+3))
		},
		{
			name: "resources of init containers only",
			init: []corev1.Container{ctr("i", rl("ephemeral-storage=1Gi", "hugepages-2Mi=4Mi"), nil)},
			apps: []corev1.Container{ctr("a", nil, nil)},
			want: "ephemeral-storage=1Gi hugepages-2Mi=4Mi",
		},
		{
			name: "no requests",
			apps: []corev1.Container{ctr("a", nil, nil)},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tt.init, Containers: tt.apps}}
			if got := rlString(EffectiveRequests(pod)); got != tt.want {
				t.Errorf("EffectiveRequests = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEffectiveLimits(t *testing.T) {
	tests := []struct {
		name        string
		init, apps  []corev1.Container
		overhead    corev1.ResourceList
		want        string
		cpu, memory bool
	}{
		{
			name: "every container limited",
			init: []corev1.Container{ctr("i", nil, rl("cpu=2", "memory=1Gi"))},
			apps: []corev1.Container{ctr("a", nil, rl("cpu=1", "memory=2Gi")), ctr("b", nil, rl("cpu=1", "memory=1Gi"))},
			want: "cpu=2 memory=3Gi", cpu: true, memory: true,
		},
		{
			name: "an app container without a memory limit leaves the pod without one",
			apps: []corev1.Container{ctr("a", nil, rl("cpu=1", "memory=1Gi")), ctr("b", nil, rl("cpu=1"))},
			want: "cpu=2", cpu: true,
		},
		{
			name: "an init container without limits leaves the pod without any",
			init: []corev1.Container{ctr("i", nil, nil)},
			apps: []corev1.Container{ctr("a", nil, rl("cpu=1", "memory=1Gi"))},
			want: "",
		},
		{
			name: "a zero limit is no limit",
			apps: []corev1.Container{ctr("a", nil, rl("cpu=0", "memory=1Gi"))},
			want: "memory=1Gi", memory: true,
		},
		{
			name: "sidecars add to the limit",
			init: []corev1.Container{sidecar("s", nil, rl("cpu=500m", "memory=256Mi", "ephemeral-storage=1Gi"))},
			apps: []corev1.Container{ctr("a", nil, rl("cpu=1", "memory=1Gi", "ephemeral-storage=2Gi"))},
			want: "cpu=1500m ephemeral-storage=3Gi memory=1280Mi", cpu: true, memory: true,
		},
		{
			name:     "overhead is added to the limits there are",
			apps:     []corev1.Container{ctr("a", nil, rl("cpu=1"))},
			overhead: rl("cpu=100m", "memory=10Mi"),
			want:     "cpu=1100m", cpu: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tt.init, Containers: tt.apps, Overhead: tt.overhead}}
			if got := rlString(EffectiveLimits(pod)); got != tt.want {
				t.Errorf("EffectiveLimits = %q, want %q", got, tt.want)
			}
			cpu, mem := LimitsDeclared(pod)
			if cpu != tt.cpu || mem != tt.memory {
				t.Errorf("LimitsDeclared = %v/%v, want %v/%v", cpu, mem, tt.cpu, tt.memory)
			}
		})
	}
}

func TestQOSClass(t *testing.T) {
	// Cases after pkg/apis/core/v1/helper/qos/qos_test.go; containers are
	// defaulted as the API server would (requests from limits).
	tests := []struct {
		name       string
		init, apps []corev1.Container
		want       corev1.PodQOSClass
	}{
		{"no resources", nil, []corev1.Container{ctr("a", nil, nil)}, corev1.PodQOSBestEffort},
		{"zero requests", nil, []corev1.Container{ctr("a", rl("cpu=0", "memory=0"), nil)}, corev1.PodQOSBestEffort},
		{"only extended resources", nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu=1"), rl("nvidia.com/gpu=1"))}, corev1.PodQOSBestEffort},
		{"cpu and memory limits", nil, []corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSGuaranteed},
		{"two guaranteed containers", nil, []corev1.Container{
			ctr("a", nil, rl("cpu=100m", "memory=100Mi")), ctr("b", nil, rl("cpu=200m", "memory=200Mi"))}, corev1.PodQOSGuaranteed},
		{"extended resources do not matter", nil, []corev1.Container{
			ctr("a", rl("nvidia.com/gpu=2"), rl("cpu=100m", "memory=100Mi", "nvidia.com/gpu=2"))}, corev1.PodQOSGuaranteed},
		{"hugepages do not matter", nil, []corev1.Container{
			ctr("a", nil, rl("cpu=100m", "memory=100Mi", "hugepages-2Mi=2Mi"))}, corev1.PodQOSGuaranteed},
		{"request below limit", nil, []corev1.Container{ctr("a", rl("cpu=50m"), rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSBurstable},
		{"only a cpu limit", nil, []corev1.Container{ctr("a", nil, rl("cpu=100m"))}, corev1.PodQOSBurstable},
		{"one container best effort", nil, []corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi")), ctr("b", nil, nil)}, corev1.PodQOSBurstable},
		{"only requests", nil, []corev1.Container{ctr("a", rl("cpu=100m", "memory=100Mi"), nil)}, corev1.PodQOSBurstable},
		{"zero limits", nil, []corev1.Container{ctr("a", nil, rl("cpu=0", "memory=100Mi"))}, corev1.PodQOSBurstable},
		{"guaranteed init and app", []corev1.Container{ctr("i", nil, rl("cpu=1", "memory=1Gi"))},
			[]corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSGuaranteed},
		{"burstable init container", []corev1.Container{ctr("i", rl("cpu=10m"), nil)},
			[]corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSBurstable},
		{"best-effort init container with guaranteed app", []corev1.Container{ctr("i", nil, nil)},
			[]corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSBurstable},
		{"guaranteed sidecar", []corev1.Container{sidecar("s", nil, rl("cpu=100m", "memory=100Mi"))},
			[]corev1.Container{ctr("a", nil, rl("cpu=100m", "memory=100Mi"))}, corev1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tt.init, Containers: tt.apps}}
			SetDefaults(pod)
			if got := QOSClass(pod); got != tt.want {
				t.Errorf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestIsSidecar(t *testing.T) {
	always, onFailure := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicy("OnFailure")
	for _, tt := range []struct {
		c    *corev1.Container
		want bool
	}{
		{nil, false},
		{&corev1.Container{}, false},
		{&corev1.Container{RestartPolicy: &always}, true},
		{&corev1.Container{RestartPolicy: &onFailure}, false},
	} {
		if got := IsSidecar(tt.c); got != tt.want {
			t.Errorf("IsSidecar(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}
}

// Pod-level resources (PodLevelResources): defaultPodRequests, then the pod
// values, the limits declared for the pod cgroup and the QoS class come from
// spec.resources for cpu and memory; the containers' count for the rest.
func TestPodLevelResources(t *testing.T) {
	for _, c := range []struct {
		name                 string
		pod                  corev1.ResourceRequirements
		containers           []corev1.Container
		requests, limits     string // after defaulting
		effReqs, effLims     string
		cpuDeclared, memDecl bool
		qos                  corev1.PodQOSClass
	}{
		{
			name:       "limits only: requests default to them, Guaranteed",
			pod:        corev1.ResourceRequirements{Limits: rl("cpu=1", "memory=128Mi")},
			containers: []corev1.Container{ctr("a", nil, nil), ctr("b", nil, nil)},
			requests:   "cpu=1 memory=128Mi", limits: "cpu=1 memory=128Mi",
			effReqs: "cpu=1 memory=128Mi", effLims: "cpu=1 memory=128Mi",
			cpuDeclared: true, memDecl: true, qos: corev1.PodQOSGuaranteed,
		},
		{
			name:       "a container's request is the default of the pod's",
			pod:        corev1.ResourceRequirements{Limits: rl("cpu=2", "memory=1Gi")},
			containers: []corev1.Container{ctr("a", rl("cpu=500m", "ephemeral-storage=1Gi"), nil), ctr("b", nil, nil)},
			requests:   "cpu=500m memory=1Gi", limits: "cpu=2 memory=1Gi",
			effReqs: "cpu=500m ephemeral-storage=1Gi memory=1Gi", effLims: "cpu=2 memory=1Gi",
			cpuDeclared: true, memDecl: true, qos: corev1.PodQOSBurstable,
		},
		{
			// PodLevelResourcesFixDefaulting (beta in 1.37): pod-level
			// requests alone default the other requests from the
			// containers, and limits every container declares become the
			// pod's.
			name:       "requests only: the rest defaulted from the containers",
			pod:        corev1.ResourceRequirements{Requests: rl("memory=64Mi")},
			containers: []corev1.Container{ctr("a", rl("cpu=1", "memory=64Mi"), rl("cpu=1", "memory=64Mi"))},
			requests:   "cpu=1 memory=64Mi", limits: "cpu=1 memory=64Mi",
			effReqs: "cpu=1 memory=64Mi", effLims: "cpu=1 memory=64Mi",
			cpuDeclared: true, memDecl: true, qos: corev1.PodQOSGuaranteed,
		},
		{
			name:       "requests only, containers without limits: no pod-level limit",
			pod:        corev1.ResourceRequirements{Requests: rl("memory=64Mi")},
			containers: []corev1.Container{ctr("a", rl("cpu=100m"), nil)},
			requests:   "cpu=100m memory=64Mi", limits: "",
			effReqs: "cpu=100m memory=64Mi", effLims: "",
			cpuDeclared: false, memDecl: false, qos: corev1.PodQOSBurstable,
		},
		{
			name:       "a pod-level request above the containers' limits raises the defaulted limit",
			pod:        corev1.ResourceRequirements{Requests: rl("cpu=2")},
			containers: []corev1.Container{ctr("a", rl("cpu=1"), rl("cpu=1"))},
			requests:   "cpu=2", limits: "cpu=2",
			effReqs: "cpu=2", effLims: "cpu=2",
			cpuDeclared: true, memDecl: false, qos: corev1.PodQOSBurstable,
		},
		{
			name:       "a memory limit only: cpu from the containers",
			pod:        corev1.ResourceRequirements{Limits: rl("memory=256Mi")},
			containers: []corev1.Container{ctr("a", rl("cpu=100m"), nil)},
			requests:   "cpu=100m memory=256Mi", limits: "memory=256Mi",
			effReqs: "cpu=100m memory=256Mi", effLims: "memory=256Mi",
			cpuDeclared: false, memDecl: true, qos: corev1.PodQOSBurstable,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: c.containers, Resources: c.pod.DeepCopy()}}
			SetDefaults(pod)
			if got := rlString(pod.Spec.Resources.Requests); got != c.requests {
				t.Errorf("defaulted pod-level requests %q, want %q", got, c.requests)
			}
			if got := rlString(pod.Spec.Resources.Limits); got != c.limits {
				t.Errorf("pod-level limits %q, want %q", got, c.limits)
			}
			if got := rlString(EffectiveRequests(pod)); got != c.effReqs {
				t.Errorf("EffectiveRequests %q, want %q", got, c.effReqs)
			}
			if got := rlString(EffectiveLimits(pod)); got != c.effLims {
				t.Errorf("EffectiveLimits %q, want %q", got, c.effLims)
			}
			if cpu, mem := LimitsDeclared(pod); cpu != c.cpuDeclared || mem != c.memDecl {
				t.Errorf("LimitsDeclared %v %v, want %v %v", cpu, mem, c.cpuDeclared, c.memDecl)
			}
			if got := QOSClass(pod); got != c.qos {
				t.Errorf("QOSClass %s, want %s", got, c.qos)
			}
		})
	}
	// The downward API: a container without a limit reads the pod's.
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{ctr("a", nil, nil), ctr("b", nil, rl("memory=32Mi"))},
		Resources:  &corev1.ResourceRequirements{Limits: rl("cpu=1500m", "memory=128Mi")},
	}}
	SetDefaults(pod)
	rt := RuntimeInfo{NodeAllocatable: rl("cpu=8", "memory=16Gi", "ephemeral-storage=100Gi")}
	for _, want := range []struct{ container, res, value string }{
		{"a", "limits.cpu", "2"}, {"a", "limits.memory", "134217728"}, {"b", "limits.memory", "33554432"}, {"a", "limits.ephemeral-storage", "107374182400"},
	} {
		c := findContainer(pod, want.container)
		got, err := ResourceFieldRefValue(pod, c, &corev1.ResourceFieldSelector{Resource: want.res}, rt)
		if err != nil || got != want.value {
			t.Errorf("%s of %s: %q %v, want %q", want.res, want.container, got, err, want.value)
		}
	}
}

// An empty spec.resources (no cpu or memory set) leaves the QoS class to the
// containers (PodLevelResourcesFixKubeletQOSClass).
func TestQOSClassWithEmptyPodLevelResources(t *testing.T) {
	q := resource.MustParse("100m")
	pod := &corev1.Pod{Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{}, Containers: []corev1.Container{{Name: "a",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}}}}}}
	if got := QOSClass(pod); got != corev1.PodQOSBurstable {
		t.Fatalf("QOSClass = %s, want Burstable from the container", got)
	}
}
