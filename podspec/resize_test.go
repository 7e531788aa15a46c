//go:build !podrun_lean

package podspec

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resizePod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
	}
	p := &corev1.Pod{}
	p.Name = "p"
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init", Image: "i", Resources: res("10m", "10Mi")},
		{Name: "side", Image: "i", RestartPolicy: &always, Resources: res("10m", "10Mi")},
	}
	p.Spec.Containers = []corev1.Container{{Name: "a", Image: "i", Resources: res("10m", "10Mi")}, {Name: "b", Image: "i", Resources: res("10m", "10Mi")}}
	return p
}

// DiffPodResize follows ValidatePodResize: what may change, and the API
// server's messages for what may not.
func TestDiffPodResize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(p *corev1.Pod)
		changed []string
		err     string
	}{
		{"nothing", func(p *corev1.Pod) {}, nil, ""},
		{"app cpu and memory", func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("20m")
			p.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		}, []string{"b"}, ""},
		{"sidecar", func(p *corev1.Pod) {
			p.Spec.InitContainers[1].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("20Mi")
		}, []string{"side"}, ""},
		{"plain init container", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("20Mi")
		}, nil, "spec: Forbidden: resources for non-sidecar init containers are immutable"},
		{"limit removed", func(p *corev1.Pod) {
			delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceCPU)
		}, nil, "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{"request removed", func(p *corev1.Pod) {
			delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
		}, nil, "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"},
		{"other resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, nil, "spec: Forbidden: only cpu and memory resources are mutable"},
		{"other field", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "j" }, nil, "spec: Forbidden: only cpu and memory resources are mutable"},
		{"reordered", func(p *corev1.Pod) {
			p.Spec.Containers[0], p.Spec.Containers[1] = p.Spec.Containers[1], p.Spec.Containers[0]
		}, nil, "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize, spec.containers[1].name: Forbidden: containers may not be renamed or reordered on resize"},
		{"QoS class", func(p *corev1.Pod) {
			for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
				for i := range list {
					list[i].Resources.Requests = list[i].Resources.Limits.DeepCopy()
				}
			}
		}, nil, `spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`},
		{"pod-level resources", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
		}, nil, `Forbidden: pods with pod-level resources cannot be resized`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := resizePod(), resizePod()
			tc.change(updated)
			changed, err := DiffPodResize(old, updated)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), `The Pod "p" is invalid: `) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(changed, tc.changed) {
				t.Fatalf("DiffPodResize = %v, %v; want %v", changed, err, tc.changed)
			}
			got := ApplyPodResize(old, updated)
			if !reflect.DeepEqual(got.Spec, updated.Spec) {
				t.Fatalf("ApplyPodResize did not take the new resources")
			}
		})
	}
}
