package supervisor

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/podspec"
)

// podResizer is the runner's side of an in-place resize: the pod cgroup's
// values, and the node's allocatable resources a resize must fit in.
type podResizer interface {
	ResizePod(old, pod *corev1.Pod, widen bool) error
	Allocatable() corev1.ResourceList
}

// containerResizer is a running container whose cgroup takes new cpu and
// memory values in place.
type containerResizer interface {
	Resize(c *corev1.Container, pod *corev1.ResourceRequirements) error
}

// resize actuates new cpu and memory requests and limits of the pod and of
// its containers, init, sidecar or app (the pods/resize subresource,
// Kubernetes 1.37: InPlacePodLevelResourcesVerticalScaling and
// InPlacePodVerticalScalingInitContainers), as the kubelet does: a resize
// the node cannot hold at all stays pending (PodResizePending, Infeasible:
// the kubelet's allocation check against the node's allocatable); otherwise
// the new values are allocated, the pod cgroup is widened, each running
// container whose effective values change (its own, or the pod's limits it
// falls back on) is resized in place, or restarted when its resizePolicy
// for a changed resource says RestartContainer (computePodResizeAction),
// and the pod cgroup takes its new values. A failure to write a cgroup is
// PodResizeInProgress with reason Error. A container that is not running
// takes its new values at its next start.
func (m *machine) resize(p *corev1.Pod) {
	type change struct {
		c         *ctr
		res, prev corev1.ResourceRequirements
	}
	var changes []change
	desired := m.pod.DeepCopy()
	desired.Spec.Resources = p.Spec.Resources.DeepCopy()
	podChanged := !samePodResources(m.pod.Spec.Resources, p.Spec.Resources)
	pick := func(list []*ctr, specs []corev1.Container, desiredList []corev1.Container) {
		for i, c := range list {
			if i >= len(specs) {
				continue
			}
			if !sameResources(c.spec.Resources, specs[i].Resources) || podChanged {
				changes = append(changes, change{c, *specs[i].Resources.DeepCopy(), *c.spec.Resources.DeepCopy()})
				desiredList[i].Resources = *specs[i].Resources.DeepCopy()
			}
		}
	}
	pick(m.inits, p.Spec.InitContainers, desired.Spec.InitContainers)
	pick(m.apps, p.Spec.Containers, desired.Spec.Containers)
	if len(changes) == 0 {
		// What is asked is what the containers have: nothing is pending or
		// in progress (a resize back to the values a failed one left).
		m.resizeConds = nil
		return
	}
	rs, ok := m.runner.(podResizer)
	if !ok {
		// The sandbox is not up yet: its pod cgroup and containers are
		// made with the new values.
		for _, ch := range changes {
			ch.c.spec.Resources = ch.res
		}
		m.pod.Spec.Resources = desired.Spec.Resources
		return
	}
	if msg := infeasible(desired, rs.Allocatable()); msg != "" {
		m.setResizeCondition(corev1.PodResizePending, corev1.PodReasonInfeasible, msg)
		return
	}
	old := m.pod.DeepCopy()
	var errs []error
	if err := rs.ResizePod(old, desired, true); err != nil {
		errs = append(errs, err)
	}
	oldPodRes := m.pod.Spec.Resources
	m.pod.Spec.Resources = desired.Spec.Resources // allocated: the containers' limits fall back on it
	for _, ch := range changes {
		c := ch.c
		restart := restartOnResize(c.spec, effectiveResources(oldPodRes, ch.prev), effectiveResources(desired.Spec.Resources, ch.res))
		c.spec.Resources = ch.res // allocated: the next start takes it
		if c.handle == nil || c.stopping || c.status.State.Running == nil ||
			effectiveResources(oldPodRes, ch.prev) == effectiveResources(desired.Spec.Resources, ch.res) {
			continue
		}
		if restart {
			c.changed = true
			m.events.add("Normal", "Killing", m.object(c), "Container %s resize requires restart", c.spec.Name)
			c.syncKill = true
			m.stopContainer(c, m.gracePeriod, false)
			continue
		}
		if r, ok := c.handle.(containerResizer); ok {
			if err := r.Resize(c.spec, m.pod.Spec.Resources); err != nil {
				// What the container has is what its status reports.
				errs = append(errs, err)
				c.spec.Resources = ch.prev
			}
		}
	}
	if err := rs.ResizePod(old, m.pod, false); err != nil {
		errs = append(errs, err)
	}
	m.resizeConds = nil
	if len(errs) > 0 {
		m.setResizeCondition(corev1.PodResizeInProgress, corev1.PodReasonError, errors.Join(errs...).Error())
	}
}

// effective is what a container's cgroup is made of: its cpu and memory
// requests, and its limits or, where it has none, the pod-level ones
// (containerResourcesFromRequirements).
type effective struct{ memoryLimit, memoryRequest, cpuLimit, cpuRequest int64 }

func effectiveResources(pod *corev1.ResourceRequirements, c corev1.ResourceRequirements) effective {
	lim := cgroups.ContainerLimits(&corev1.Container{Resources: c}, pod)
	return effective{
		memoryLimit: lim.Memory().Value(), memoryRequest: c.Requests.Memory().Value(),
		cpuLimit: lim.Cpu().MilliValue(), cpuRequest: c.Requests.Cpu().MilliValue(),
	}
}

// samePodResources compares pod-level resources, nil being none.
func samePodResources(a, b *corev1.ResourceRequirements) bool {
	var x, y corev1.ResourceRequirements
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return sameResources(x, y)
}

// sameResources compares requests and limits by value, as
// equality.Semantic does (which the shim does not link).
func sameResources(a, b corev1.ResourceRequirements) bool {
	same := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for name, q := range x {
			if r, ok := y[name]; !ok || q.Cmp(r) != 0 {
				return false
			}
		}
		return true
	}
	return same(a.Requests, b.Requests) && same(a.Limits, b.Limits)
}

// restartOnResize reports whether a resize of c from cur to want restarts
// it: a changed cpu request or limit under a RestartContainer cpu policy,
// or a changed memory request or limit under a RestartContainer memory
// policy (the kubelet's computePodResizeAction, determineContainerResize).
func restartOnResize(c *corev1.Container, cur, want effective) bool {
	policy := func(name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
		for _, p := range c.ResizePolicy {
			if p.ResourceName == name {
				return p.RestartPolicy
			}
		}
		return corev1.NotRequired
	}
	cpu := cur.cpuRequest != want.cpuRequest || cur.cpuLimit != want.cpuLimit
	memory := cur.memoryRequest != want.memoryRequest || cur.memoryLimit != want.memoryLimit
	return cpu && policy(corev1.ResourceCPU) == corev1.RestartContainer ||
		memory && policy(corev1.ResourceMemory) == corev1.RestartContainer
}

// infeasible is the kubelet's message for a resize whose pod requests more
// cpu or memory than the node has allocatable at all (the allocation
// manager's Infeasible), "" when it fits.
func infeasible(pod *corev1.Pod, allocatable corev1.ResourceList) string {
	req := podspec.EffectiveRequests(pod)
	cpu, memory := req.Cpu().MilliValue(), req.Memory().Value()
	cpuAvailable, memoryAvailable := allocatable.Cpu().MilliValue(), allocatable.Memory().Value()
	switch {
	case memoryAvailable > 0 && memory > memoryAvailable:
		return fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", memory, memoryAvailable)
	case cpuAvailable > 0 && cpu > cpuAvailable:
		return fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpu, cpuAvailable)
	}
	return ""
}

// setResizeCondition makes t the pod's one resize condition.
func (m *machine) setResizeCondition(t corev1.PodConditionType, reason, message string) {
	now := metav1.NewTime(m.clock.Now())
	for _, c := range m.resizeConds {
		if c.Type == t {
			now = c.LastTransitionTime
		}
	}
	m.resizeConds = []corev1.PodCondition{{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: metav1.NewTime(m.clock.Now()), LastTransitionTime: now}}
}

// statusResources is a container's resources as its status reports them
// (convertToAPIContainerStatuses with InPlacePodVerticalScaling, 1.37): for
// every container that exists, init or app, running or exited, what is
// allocated to it, which is what its cgroup was given; the allocated
// requests beside them. A container never created has neither.
func statusResources(c *ctr) (*corev1.ResourceRequirements, corev1.ResourceList) {
	if c.status.ContainerID == "" {
		return nil, nil
	}
	return c.spec.Resources.DeepCopy(), c.spec.Resources.Requests.DeepCopy()
}

// podStatusResources are the pod's status.resources and
// status.allocatedResources (InPlacePodLevelResourcesVerticalScaling, beta
// since 1.36): the pod's requests (resource.PodRequests), and its
// resources as allocated (getEffectiveAllocatedResources) or, while it
// runs, as its pod cgroup has them (convertToAPIPodLevelResourcesStatus):
// a cpu request above the 2-share minimum, the memory request, and the cpu
// and memory limits the pod cgroup enforces.
func podStatusResources(pod *corev1.Pod, running bool) (*corev1.ResourceRequirements, corev1.ResourceList) {
	req := podspec.EffectiveRequests(pod)
	out := pod.Spec.Resources.DeepCopy()
	if out == nil {
		out = &corev1.ResourceRequirements{}
	}
	if !running {
		out.Requests, out.Limits = req.DeepCopy(), podspec.SummedLimits(pod)
		return out, req
	}
	if out.Requests == nil {
		out.Requests = corev1.ResourceList{}
	}
	if out.Limits == nil {
		out.Limits = corev1.ResourceList{}
	}
	if q, ok := req[corev1.ResourceCPU]; ok && q.MilliValue() > 2 {
		out.Requests[corev1.ResourceCPU] = q
	}
	if q, ok := req[corev1.ResourceMemory]; ok {
		if _, set := out.Requests[corev1.ResourceMemory]; !set {
			out.Requests[corev1.ResourceMemory] = q
		}
	}
	lim := podspec.EffectiveLimits(pod)
	cpu, memory := podspec.LimitsDeclared(pod)
	if q, ok := lim[corev1.ResourceCPU]; ok && cpu && !q.IsZero() {
		out.Limits[corev1.ResourceCPU] = q
	}
	if q, ok := lim[corev1.ResourceMemory]; ok && memory && !q.IsZero() {
		out.Limits[corev1.ResourceMemory] = q
	}
	return out, req
}
