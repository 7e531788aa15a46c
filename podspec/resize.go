//go:build !podrun_lean

package podspec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DiffPodResize checks a resize of old (the stored pod) to updated (the pod
// as the resize subresource's patch left it) as the API server's
// ValidatePodResize does (pkg/apis/core/validation), and names the
// containers, app or sidecar, whose cpu or memory requests or limits
// change. Only those may change: the QoS class stays, no request or limit
// may be removed, a plain init container's resources are immutable, and a
// pod with pod-level resources cannot be resized. The error is the API
// server's, naming the pod.
func DiffPodResize(old, updated *corev1.Pod) ([]string, error) {
	invalid := func(errs field.ErrorList) error {
		return fmt.Errorf("The Pod %q is invalid: %s", updated.Name, errs.ToAggregate().Error())
	}
	podLevel := func(p *corev1.Pod) bool {
		return p.Spec.Resources != nil && len(p.Spec.Resources.Requests)+len(p.Spec.Resources.Limits) > 0
	}
	if podLevel(old) || podLevel(updated) {
		return nil, invalid(field.ErrorList{field.Forbidden(field.NewPath(""), "pods with pod-level resources cannot be resized")})
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return nil, invalid(field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")})
	}
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	// validatePodResizeOrdering: the lists keep their names and order.
	order := func(newList, oldList []corev1.Container, p *field.Path) {
		if len(newList) != len(oldList) {
			errs = append(errs, field.Forbidden(p, "containers may not be added or removed on resize"))
			return
		}
		for i := range newList {
			if newList[i].Name != oldList[i].Name {
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), "containers may not be renamed or reordered on resize"))
			}
		}
	}
	order(updated.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"))
	order(updated.Spec.Containers, old.Spec.Containers, specPath.Child("containers"))
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	if QOSClass(old) != QOSClass(updated) {
		errs = append(errs, field.Invalid(specPath, QOSClass(old), "Pod QOS Class may not change as a result of resizing"))
	}
	var changed []string
	munged := updated.Spec.DeepCopy()
	check := func(i int, init bool) {
		list, oldList, p := munged.Containers, old.Spec.Containers, specPath.Child("containers")
		if init {
			list, oldList, p = munged.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers")
		}
		c, o := &list[i], &oldList[i]
		if init && !IsSidecar(o) {
			if !equality.Semantic.DeepEqual(c.Resources, o.Resources) {
				errs = append(errs, field.Forbidden(specPath, "resources for non-sidecar init containers are immutable"))
			}
			return
		}
		rp := p.Index(i).Child("resources")
		// validateContainerResize: nothing declared may be removed.
		if removed(c.Resources.Requests, o.Resources.Requests) {
			errs = append(errs, field.Forbidden(rp.Child("requests"), "resource requests cannot be removed"))
		}
		if removed(c.Resources.Limits, o.Resources.Limits) {
			errs = append(errs, field.Forbidden(rp.Child("limits"), "resource limits cannot be removed"))
		}
		if !equality.Semantic.DeepEqual(c.Resources, o.Resources) {
			changed = append(changed, c.Name)
		}
		// dropCPUMemoryResourcesFromContainer: with cpu and memory taken
		// back to the old values, nothing else may differ.
		c.Resources = corev1.ResourceRequirements{
			Limits:   keepCPUMemory(c.Resources.Limits, o.Resources.Limits),
			Requests: keepCPUMemory(c.Resources.Requests, o.Resources.Requests),
			Claims:   c.Resources.Claims,
		}
		if !equality.Semantic.DeepEqual(*c, *o) {
			msg := "only cpu and memory resources are mutable"
			if init {
				msg = "only cpu and memory resources for sidecar containers are mutable"
			}
			errs = append(errs, field.Forbidden(specPath, msg))
		}
	}
	for i := range munged.InitContainers {
		check(i, true)
	}
	for i := range munged.Containers {
		check(i, false)
	}
	if len(errs) == 0 && !equality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	return changed, nil
}

// removed reports whether a resource of old is missing from l
// (resourcesRemoved).
func removed(l, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := l[name]; !ok {
			return true
		}
	}
	return false
}

// keepCPUMemory is l with its cpu and memory as in old (absent where old
// has none); nil when old is nil (dropCPUMemoryResourcesFromContainer).
func keepCPUMemory(l, old corev1.ResourceList) corev1.ResourceList {
	if old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range l {
		out[k] = v
	}
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		delete(out, k)
		if v, ok := old[k]; ok {
			out[k] = v
		}
	}
	return out
}

// ApplyPodResize returns old with the containers' resources of updated, as
// the resize subresource stores them (DiffPodResize said they may change).
func ApplyPodResize(old, updated *corev1.Pod) *corev1.Pod {
	out := old.DeepCopy()
	for i := range out.Spec.InitContainers {
		out.Spec.InitContainers[i].Resources = *updated.Spec.InitContainers[i].Resources.DeepCopy()
	}
	for i := range out.Spec.Containers {
		out.Spec.Containers[i].Resources = *updated.Spec.Containers[i].Resources.DeepCopy()
	}
	return out
}
