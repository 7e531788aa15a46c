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
// ValidatePodResize does (pkg/apis/core/validation, Kubernetes 1.37: with
// InPlacePodLevelResourcesVerticalScaling and
// InPlacePodVerticalScalingInitContainers), and names what changes: the
// containers, init or app, whose cpu or memory requests or limits change,
// and "spec.resources" when the pod-level ones do. Only those may change:
// the QoS class stays, no request or limit may be removed, and a plain init
// container with a RestartContainer resize policy cannot be resized. The
// error is the API server's, naming the pod.
func DiffPodResize(old, updated *corev1.Pod) ([]string, error) {
	invalid := func(errs field.ErrorList) error {
		return fmt.Errorf("The Pod %q is invalid: %s", updated.Name, errs.ToAggregate().Error())
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return nil, invalid(field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")})
	}
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if QOSClass(old) != QOSClass(updated) {
		errs = append(errs, field.Invalid(specPath, QOSClass(old), "Pod QOS Class may not change as a result of resizing"))
	}
	var changed []string
	munged := updated.Spec.DeepCopy()
	podLevel := func(p *corev1.Pod) bool {
		return p.Spec.Resources != nil && len(p.Spec.Resources.Requests)+len(p.Spec.Resources.Limits) > 0
	}
	if podLevel(old) || podLevel(updated) {
		// validatePodLevelResourcesResize.
		rp := specPath.Child("resources")
		if old.Spec.Resources != nil && updated.Spec.Resources == nil {
			return nil, invalid(append(errs, field.Forbidden(rp, "pod-level resources cannot be removed")))
		}
		if old.Spec.Resources != nil {
			if removed(updated.Spec.Resources.Requests, old.Spec.Resources.Requests) {
				errs = append(errs, field.Forbidden(rp.Child("requests"), "pod-level resource requests cannot be removed"))
			}
			if removed(updated.Spec.Resources.Limits, old.Spec.Resources.Limits) {
				errs = append(errs, field.Forbidden(rp.Child("limits"), "pod-level resource limits cannot be removed"))
			}
		}
		var oldReq, oldLim corev1.ResourceList
		if old.Spec.Resources != nil {
			oldReq, oldLim = old.Spec.Resources.Requests, old.Spec.Resources.Limits
		}
		if !equality.Semantic.DeepEqual(munged.Resources, old.Spec.Resources) {
			changed = append(changed, "spec.resources")
		}
		if r := munged.Resources; r != nil {
			r.Limits, r.Requests = keepCPUMemory(r.Limits, oldLim), keepCPUMemory(r.Requests, oldReq)
			if old.Spec.Resources == nil && len(r.Requests)+len(r.Limits)+len(r.Claims) == 0 {
				munged.Resources = nil // dropCPUMemoryResourceRequirementsUpdates
			}
		}
		if !equality.Semantic.DeepEqual(munged.Resources, old.Spec.Resources) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable at pod-level"))
		}
	}
	// validatePodResizeContainerOrdering: the lists keep their names and order.
	order := func(newList, oldList []corev1.Container, p *field.Path, what string) {
		if len(newList) != len(oldList) {
			errs = append(errs, field.Forbidden(p, what+" may not be added or removed on resize"))
			return
		}
		for i := range newList {
			if newList[i].Name != oldList[i].Name {
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), what+" may not be renamed or reordered on resize"))
			}
		}
	}
	order(updated.Spec.Containers, old.Spec.Containers, specPath.Child("containers"), "containers")
	order(updated.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"), "initContainers")
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	check := func(i int, init bool) {
		list, oldList, p := munged.Containers, old.Spec.Containers, specPath.Child("containers")
		if init {
			list, oldList, p = munged.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers")
		}
		c, o := &list[i], &oldList[i]
		modified := !equality.Semantic.DeepEqual(*c, *o)
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
			if init {
				errs = append(errs, field.Forbidden(p.Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
			} else {
				errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
			}
		}
		if init && modified && !IsSidecar(o) {
			for _, rp := range c.ResizePolicy {
				if rp.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Forbidden(p.Index(i), "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
					break
				}
			}
		}
	}
	for i := range munged.InitContainers {
		check(i, true)
	}
	for i := range munged.Containers {
		check(i, false)
	}
	// InPlacePodVerticalScalingMemoryBackedVolumes is alpha in 1.37 (off).
	if !equality.Semantic.DeepEqual(updated.Spec.Volumes, old.Spec.Volumes) {
		errs = append(errs, field.Forbidden(specPath.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	munged.Volumes = old.Spec.Volumes
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
// has none): dropCPUMemoryUpdates.
func keepCPUMemory(l, old corev1.ResourceList) corev1.ResourceList {
	if l == nil && old == nil {
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

// ApplyPodResize returns old with the pod's and containers' resources of updated, as
// the resize subresource stores them (DiffPodResize said they may change).
func ApplyPodResize(old, updated *corev1.Pod) *corev1.Pod {
	out := old.DeepCopy()
	out.Spec.Resources = updated.Spec.Resources.DeepCopy()
	for i := range out.Spec.InitContainers {
		out.Spec.InitContainers[i].Resources = *updated.Spec.InitContainers[i].Resources.DeepCopy()
	}
	for i := range out.Spec.Containers {
		out.Spec.Containers[i].Resources = *updated.Spec.Containers[i].Resources.DeepCopy()
	}
	return out
}
