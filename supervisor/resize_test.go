package supervisor

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A resize restarts a container only for a changed resource whose policy
// says RestartContainer, a memory request too (computePodResizeAction,
// Kubernetes 1.37); a container without limits of its own follows the
// pod-level ones.
func TestRestartOnResize(t *testing.T) {
	res := func(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
		}
	}
	restartMemory := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	restartCPU := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	base := res("10m", "20m", "10Mi", "20Mi")
	for _, tc := range []struct {
		name   string
		policy []corev1.ContainerResizePolicy
		to     corev1.ResourceRequirements
		want   bool
	}{
		{"no policy", nil, res("15m", "25m", "15Mi", "25Mi"), false},
		{"memory limit, RestartContainer", restartMemory, res("10m", "20m", "10Mi", "25Mi"), true},
		{"memory request alone, RestartContainer", restartMemory, res("10m", "20m", "15Mi", "20Mi"), true},
		{"cpu, memory RestartContainer", restartMemory, res("15m", "25m", "10Mi", "20Mi"), false},
		{"cpu request, cpu RestartContainer", restartCPU, res("15m", "20m", "10Mi", "20Mi"), true},
		{"same values written otherwise", restartCPU, res("0.01", "20m", "10Mi", "20Mi"), false},
	} {
		c := &corev1.Container{Name: "c", ResizePolicy: tc.policy, Resources: base}
		if got := restartOnResize(c, effectiveResources(nil, base), effectiveResources(nil, tc.to)); got != tc.want {
			t.Errorf("%s: restartOnResize = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Pod-level limits: a container without a cpu limit has the pod's.
	podRes := func(cpu string) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	c := &corev1.Container{Name: "c", ResizePolicy: restartCPU}
	if !restartOnResize(c, effectiveResources(podRes("1"), c.Resources), effectiveResources(podRes("2"), c.Resources)) {
		t.Error("a pod-level cpu limit change does not restart a container that falls back on it")
	}
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	if restartOnResize(c, effectiveResources(podRes("1"), c.Resources), effectiveResources(podRes("2"), c.Resources)) {
		t.Error("a pod-level cpu limit change restarts a container with its own")
	}
}

// The allocation check's Infeasible message, memory first.
func TestInfeasibleResize(t *testing.T) {
	node := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod := func(cpu, mem string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
	}
	for _, tc := range []struct{ cpu, mem, want string }{
		{"2", "1Gi", ""},
		{"2001m", "1Gi", "Node didn't have enough capacity: cpu, requested: 2001, capacity: 2000"},
		{"3", "2Gi", "Node didn't have enough capacity: memory, requested: 2147483648, capacity: 1073741824"},
	} {
		if got := infeasible(pod(tc.cpu, tc.mem), node); got != tc.want {
			t.Errorf("cpu %s memory %s: %q, want %q", tc.cpu, tc.mem, got, tc.want)
		}
	}
}
