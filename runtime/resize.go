package runtime

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/podspec"
)

// podCgroupResources are the pod cgroup's values for pod, as setupSandbox
// writes them (the kubelet's ResourceConfigForPod).
func (sb *sandbox) podCgroupResources(pod *corev1.Pod) cgroups.Resources {
	cpuDeclared, memoryDeclared := podspec.LimitsDeclared(pod)
	return cgroups.PodResources(podspec.EffectiveRequests(pod), podspec.EffectiveLimits(pod), podspec.QOSClass(pod), cpuDeclared, memoryDeclared, sb.pidsLimit)
}

// ResizePod writes the pod cgroup's values for pod after a resize of its
// containers from old. With widen it writes, value by value, the wider of
// old's and pod's, so that growing containers fit under it before the pod
// cgroup shrinks to pod's own values (the kubelet's doPodResizeAction
// grows the pod cgroup before its containers and shrinks it after them).
func (r *podRunner) ResizePod(old, pod *corev1.Pod, widen bool) error {
	if r.sb == nil || r.sb.cgroup == nil {
		return nil
	}
	res := r.sb.podCgroupResources(pod)
	if widen {
		res = cgroups.Widest(r.sb.podCgroupResources(old), res)
	} else if err := belowUsage("pod", r.sb.cgroup.Files("memory"), res.Memory); err != nil {
		return err
	}
	if err := r.sb.cgroup.Update(r.l.CgroupParent, res); err != nil {
		return fmt.Errorf("resizing the pod cgroup: %w", err)
	}
	if !widen {
		// Containers started from now on fall back on the new pod-level limits.
		r.plan.Pod.Spec.Resources = pod.Spec.Resources.DeepCopy()
	}
	return nil
}

// Resize writes the container cgroup's cpu and memory values for c's
// resources as they are now (its limits falling back on the pod-level ones) (the container's other cgroup settings stay),
// as the kubelet's UpdateContainerResources does through the runtime.
func (p *podContainer) Resize(c *corev1.Container, pod *corev1.ResourceRequirements) error {
	cfg := p.rc.lc.Config()
	if cfg.Cgroups == nil || cfg.Cgroups.Resources == nil {
		return fmt.Errorf("container %s has no cgroup config", c.Name)
	}
	want := p.r.sb.cgroup.ContainerConfig(p.rc.id, cgroups.ContainerResources(c, pod)).Resources
	got := cfg.Cgroups.Resources
	if want.Memory > 0 && (got.Memory <= 0 || want.Memory < got.Memory) {
		if err := belowUsage("container", p.rc.cgDir, want.Memory); err != nil {
			return err
		}
	}
	got.CpuShares, got.CpuWeight, got.CpuQuota, got.CpuPeriod = want.CpuShares, want.CpuWeight, want.CpuQuota, want.CpuPeriod
	got.Memory, got.MemorySwap = want.Memory, want.MemorySwap
	if err := p.rc.lc.Set(cfg); err != nil {
		return fmt.Errorf("resizing container %s: %w", c.Name, err)
	}
	return nil
}

// Allocatable is the node's allocatable resources, which a resized pod's
// requests must fit in.
func (r *podRunner) Allocatable() corev1.ResourceList {
	if r.sb == nil {
		return nil
	}
	return r.sb.allocatable
}

// belowUsage refuses a memory limit under what the cgroup in dir uses now,
// as the kubelet's resize does rather than let the kernel reclaim or kill
// to get there (kuberuntime's doPodResizeAction); the resize stays in
// progress with this error.
func belowUsage(what, dir string, limit int64) error {
	if limit <= 0 || dir == "" {
		return nil
	}
	usage, err := cgroups.MemoryUsage(dir)
	if err != nil {
		return nil // no usage to compare: the write itself decides
	}
	if usage > limit {
		return fmt.Errorf("attempting to set %s memory limit (%d) below current usage (%d)", what, limit, usage)
	}
	return nil
}
