package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// IsSidecar reports whether an init container is a sidecar (a restartable
// init container: restartPolicy Always).
func IsSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// aggregate is component-helpers' aggregateContainerResourcesByFn (KEP-753):
// the sum of the app containers and sidecars, or the highest use during
// initialisation — an init container plus the sidecars started before it —
// whichever is larger, per resource.
func aggregate(pod *corev1.Pod, get func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	result := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addResources(result, get(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		use := get(c)
		if IsSidecar(c) {
			addResources(result, use)
			addResources(sidecars, use)
			use = sidecars
		} else {
			combined := corev1.ResourceList{}
			addResources(combined, use)
			addResources(combined, sidecars)
			use = combined
		}
		maxResources(initMax, use)
	}
	maxResources(result, initMax)
	return result
}

func addResources(list, add corev1.ResourceList) {
	for name, q := range add {
		if v, ok := list[name]; ok {
			v.Add(q)
			list[name] = v
		} else {
			list[name] = q.DeepCopy()
		}
	}
}

func maxResources(list, other corev1.ResourceList) {
	for name, q := range other {
		if v, ok := list[name]; !ok || q.Cmp(v) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}

// isPodLevelResource is component-helpers' IsSupportedPodLevelResource: the
// resources spec.resources may set (feature PodLevelResources).
func isPodLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// podLevel is spec.resources' requests or limits of the resources a pod may
// set at pod level (IsPodLevelRequestsSet, IsPodLevelLimitsSet), nil if none.
func podLevel(pod *corev1.Pod, limits bool) corev1.ResourceList {
	if pod.Spec.Resources == nil {
		return nil
	}
	list := pod.Spec.Resources.Requests
	if limits {
		list = pod.Spec.Resources.Limits
	}
	var out corev1.ResourceList
	for name, q := range list {
		if isPodLevelResource(name) {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// EffectiveRequests is the pod's request for every resource any container
// requests, as resource.PodRequests computes it (sidecars counted as in
// Kubernetes 1.29+; the pod-level requests of spec.resources in place of
// the containers' for cpu and memory; pod overhead added).
func EffectiveRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	for name, q := range podLevel(pod, false) {
		reqs[name] = q // applyPodLevelResources
	}
	addResources(reqs, pod.Spec.Overhead)
	return reqs
}

// EffectiveLimits is the pod's limit per resource, computed as
// resource.PodLimits does, but only for resources that every container (init
// and app) limits with a non-zero value: a container without a limit may use
// the whole node, so the pod has no limit for that resource. (Kubernetes'
// PodLimits sums whatever is set; the kubelet then applies the pod's cpu and
// memory limits only when every container declared them, see
// LimitsDeclared.) Hugepages are limited from the requests by the kubelet.
func EffectiveLimits(pod *corev1.Pod) corev1.ResourceList {
	limits := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for name := range limits {
		if !allContainersLimit(pod, name) {
			delete(limits, name)
		}
	}
	// A pod-level limit bounds the pod whatever its containers declare.
	for name, q := range podLevel(pod, true) {
		if !q.IsZero() {
			limits[name] = q
		}
	}
	for name, q := range pod.Spec.Overhead {
		if v, ok := limits[name]; ok && !v.IsZero() {
			v.Add(q)
			limits[name] = v
		}
	}
	return limits
}

// SummedLimits is component-helpers' resource.PodLimits: every limit any
// container sets, aggregated as the pod's requests are, plus the pod overhead
// for the resources that have a limit. The kubelet's eviction manager
// compares a pod's ephemeral-storage use with it.
func SummedLimits(pod *corev1.Pod) corev1.ResourceList {
	limits := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for name, q := range podLevel(pod, true) {
		limits[name] = q
	}
	for name, q := range pod.Spec.Overhead {
		if v, ok := limits[name]; ok {
			v.Add(q)
			limits[name] = v
		}
	}
	return limits
}

// allContainersLimit reports whether every init and app container has a
// non-zero limit for the resource (a zero limit means "no limit" to the kubelet).
func allContainersLimit(pod *corev1.Pod, name corev1.ResourceName) bool {
	n := 0
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			q, ok := cs[i].Resources.Limits[name]
			if !ok || q.IsZero() {
				return false
			}
			n++
		}
	}
	return n > 0
}

// LimitsDeclared reports whether every container (init containers included)
// declared a non-zero cpu and memory limit, as the kubelet's
// ResourceConfigForPod computes cpuLimitsDeclared and memoryLimitsDeclared: a
// Burstable pod's cgroup gets a CPU quota or memory limit only then.
// A pod-level limit declares the limit for the pod, as ResourceConfigForPod
// does with PodLevelResources.
func LimitsDeclared(pod *corev1.Pod) (cpu, memory bool) {
	lim := podLevel(pod, true)
	c, m := lim[corev1.ResourceCPU], lim[corev1.ResourceMemory]
	return allContainersLimit(pod, corev1.ResourceCPU) || !c.IsZero(), allContainersLimit(pod, corev1.ResourceMemory) || !m.IsZero()
}

// QOSClass is the pod's quality of service class, exactly as
// pkg/apis/core/v1/helper/qos GetPodQOS computes it: from spec.resources
// when the pod sets it (PodLevelResources), else from the containers.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	zero := resource.MustParse("0")
	guaranteed := true
	// add sums the positive cpu and memory quantities of l into to, and says
	// whether l limits both.
	add := func(to, l corev1.ResourceList) bool {
		found := map[corev1.ResourceName]bool{}
		for name, q := range l {
			if !isQOSResource(name) || q.Cmp(zero) != 1 {
				continue
			}
			found[name] = true
			addResources(to, corev1.ResourceList{name: q})
		}
		return found[corev1.ResourceCPU] && found[corev1.ResourceMemory]
	}
	// An empty spec.resources leaves the containers' (IsPodLevelResourcesSet,
	// PodLevelResourcesFixKubeletQOSClass, beta and on since 1.37).
	if podLevel(pod, false) != nil || podLevel(pod, true) != nil {
		add(requests, pod.Spec.Resources.Requests)
		if len(pod.Spec.Resources.Limits) > 0 && !add(limits, pod.Spec.Resources.Limits) {
			guaranteed = false
		}
	} else {
		var all []corev1.Container
		all = append(all, pod.Spec.Containers...)
		all = append(all, pod.Spec.InitContainers...)
		for _, c := range all {
			add(requests, c.Resources.Requests)
			if !add(limits, c.Resources.Limits) {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func isQOSResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}
