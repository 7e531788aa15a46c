//go:build !podrun_lean

package podspec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields are the spec fields the API server lets an update
// of a pod change (pkg/apis/core/validation ValidatePodUpdate).
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// PodUpdate is what an update of a pod changes.
type PodUpdate struct {
	// Meta: labels, annotations or finalizers changed.
	Meta bool
	// Images are the containers (init or app, by name) whose image changed.
	Images []string
	// Deadline: activeDeadlineSeconds was set or lowered.
	Deadline bool
	// Tolerations were added (recorded; podrun has no taints).
	Tolerations bool
}

// Changed reports whether the update changes anything.
func (u PodUpdate) Changed() bool {
	return u.Meta || len(u.Images) > 0 || u.Deadline || u.Tolerations
}

// DiffPodUpdate checks an update of old (the stored pod) to updated (the
// defaulted pod of a manifest) as the API server's ValidatePodUpdate does,
// and says what it changes. The error is the API server's, naming the pod.
func DiffPodUpdate(old, updated *corev1.Pod) (PodUpdate, error) {
	var u PodUpdate
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	u.Meta = !equality.Semantic.DeepEqual(old.Labels, updated.Labels) || !equality.Semantic.DeepEqual(old.Annotations, updated.Annotations) ||
		!equality.Semantic.DeepEqual(old.Finalizers, updated.Finalizers)
	// A pod being deleted may lose finalizers, never gain one (the generic
	// registry's BeforeUpdate).
	if old.DeletionTimestamp != nil {
		var added []string
		for _, f := range updated.Finalizers {
			if !slices.Contains(old.Finalizers, f) {
				added = append(added, f)
			}
		}
		if len(added) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"), fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added)))
		}
	}
	munged := updated.Spec.DeepCopy()
	// A negative grace period is stored as 1, on update as on create
	// (PrepareForStore), whichever way the update came.
	if g := munged.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		munged.TerminationGracePeriodSeconds = ptrTo(int64(1))
	}
	// What the API server (the scheduler) set on the stored pod stays.
	if munged.NodeName == "" {
		munged.NodeName = old.Spec.NodeName
	}
	// A pod stored before podrun admitted service accounts has none.
	if old.Spec.ServiceAccountName == "" && munged.ServiceAccountName == DefaultServiceAccountName {
		munged.ServiceAccountName, munged.DeprecatedServiceAccount = "", ""
	}
	// Nor priority: what the Priority admission would have set stays unset.
	if old.Spec.Priority == nil && old.Spec.PreemptionPolicy == nil {
		munged.Priority, munged.PreemptionPolicy = nil, nil
	}
	// What the Priority admission computed for the stored pod stays (an
	// update is not admitted again for it; an updated manifest's pod is
	// admitted as if created).
	if munged.PriorityClassName == "" || munged.PriorityClassName == old.Spec.PriorityClassName {
		munged.PriorityClassName = old.Spec.PriorityClassName
		if munged.Priority == nil {
			munged.Priority = old.Spec.Priority
		}
		if munged.PreemptionPolicy == nil {
			munged.PreemptionPolicy = old.Spec.PreemptionPolicy
		}
	}
	images := func(newList, oldList []corev1.Container) {
		if len(newList) != len(oldList) {
			return // a different number of containers is a forbidden change
		}
		for i := range newList {
			if newList[i].Image != oldList[i].Image {
				u.Images = append(u.Images, newList[i].Name)
				newList[i].Image = oldList[i].Image
			}
		}
	}
	// Ephemeral containers are the ephemeralcontainers subresource's: a
	// manifest that has none leaves the pod's as they are, as kubectl
	// apply's three-way merge leaves fields it never applied.
	if len(munged.EphemeralContainers) == 0 {
		munged.EphemeralContainers = old.Spec.EphemeralContainers
	}
	images(munged.InitContainers, old.Spec.InitContainers)
	images(munged.Containers, old.Spec.Containers)
	// activeDeadlineSeconds may be set, or lowered, never raised or removed.
	if o, n := old.Spec.ActiveDeadlineSeconds, munged.ActiveDeadlineSeconds; !reflect.DeepEqual(o, n) {
		switch {
		case n == nil:
			errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), n, "must not update from a positive integer to nil value"))
		case o != nil && *n > *o:
			errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *n, "must be less than or equal to previous value"))
		default:
			u.Deadline = true
		}
		munged.ActiveDeadlineSeconds = o
	}
	// Tolerations may only be added to, in any place; an existing one may
	// change only its tolerationSeconds (validateOnlyAddedTolerations).
	if !equality.Semantic.DeepEqual(old.Spec.Tolerations, munged.Tolerations) {
		if onlyAddedTolerations(munged.Tolerations, old.Spec.Tolerations) {
			u.Tolerations = true
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("tolerations"), "existing toleration can not be modified except its tolerationSeconds"))
		}
		munged.Tolerations = old.Spec.Tolerations
	}
	if !equality.Semantic.DeepEqual(*munged, old.Spec) {
		diff := cmp.Diff(old.Spec, *munged)
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	if len(errs) > 0 {
		return PodUpdate{}, fmt.Errorf("The Pod %q is invalid: %s", updated.Name, errs.ToAggregate().Error())
	}
	return u, nil
}

// onlyAddedTolerations is validateOnlyAddedTolerations' test: every old
// toleration is among the new ones, tolerationSeconds aside.
func onlyAddedTolerations(newList, oldList []corev1.Toleration) bool {
	for _, o := range oldList {
		found := false
		for _, n := range newList {
			c := o
			c.TolerationSeconds = n.TolerationSeconds
			if reflect.DeepEqual(c, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ApplyPodUpdate returns old with the update of DiffPodUpdate made: the new
// labels, annotations, images, deadline and tolerations; the rest of old.
func ApplyPodUpdate(old, updated *corev1.Pod) *corev1.Pod {
	out := old.DeepCopy()
	out.Labels, out.Annotations, out.Finalizers = updated.Labels, updated.Annotations, updated.Finalizers
	for i := range out.Spec.InitContainers {
		if i < len(updated.Spec.InitContainers) {
			out.Spec.InitContainers[i].Image = updated.Spec.InitContainers[i].Image
		}
	}
	for i := range out.Spec.Containers {
		if i < len(updated.Spec.Containers) {
			out.Spec.Containers[i].Image = updated.Spec.Containers[i].Image
		}
	}
	out.Spec.ActiveDeadlineSeconds = updated.Spec.ActiveDeadlineSeconds
	out.Spec.Tolerations = updated.Spec.Tolerations
	return out
}

// PrepareForStore is what the API server does to a pod it stores, on create
// and update: a negative terminationGracePeriodSeconds, which it warns about,
// is stored as 1 (the pod strategy's mutation, kubernetes#115606; the e2e
// test "Pod TerminationGracePeriodSeconds is negative").
func PrepareForStore(pod *corev1.Pod) {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		pod.Spec.TerminationGracePeriodSeconds = &one
	}
}
