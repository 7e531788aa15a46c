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
		{"plain init container (InPlacePodVerticalScalingInitContainers, GA in 1.37)", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("20Mi")
		}, []string{"init"}, ""},
		{"plain init container with a RestartContainer policy", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("20Mi")
			p.Spec.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, nil, "spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"},
		{"init container's other field", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "j" }, nil,
			"spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"},
		{"init containers reordered", func(p *corev1.Pod) {
			p.Spec.InitContainers[0], p.Spec.InitContainers[1] = p.Spec.InitContainers[1], p.Spec.InitContainers[0]
		}, nil, "spec.initContainers[0].name: Forbidden: initContainers may not be renamed or reordered on resize"},
		{"other resource where none was", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Claims = nil
			p.Spec.Containers[0].Resources.Limits = nil
			p.Spec.Containers[0].Resources.Requests = nil
		}, nil, "resource limits cannot be removed"},
		{"volumes", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, nil, "spec.volumes: Forbidden: volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"},
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
		{"pod-level resources added (InPlacePodLevelResourcesVerticalScaling, beta in 1.36)", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
		}, []string{"spec.resources"}, ""},
		{"pod-level other resource", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("4Gi")}}
		}, nil, "spec: Forbidden: only cpu and memory resources are mutable at pod-level"},
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
