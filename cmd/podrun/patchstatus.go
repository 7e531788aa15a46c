package main

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// patchPodStatus is patch --subresource status of a pod: the patched
// status's conditions that the kubelet does not own are stored
// (supervisor.SetPodConditions: readiness gates read them); the rest of the
// status stays the supervisor's, as the kubelet reasserts its own, and no
// other part of the object changes (the status strategy keeps the spec).
// The patched object is what -o prints, as the API server answers a patch.
func patchPodStatus(l store.Layout, obj fileObject, patched []byte, dryRun, output, resource, word string) error {
	var pod corev1.Pod
	if err := json.Unmarshal(patched, &pod); err != nil {
		return usageError("the patched pod cannot be read: %v", err)
	}
	var errs field.ErrorList
	for i, c := range pod.Status.Conditions {
		p := field.NewPath("status", "conditions").Index(i)
		for _, msg := range validation.IsQualifiedName(string(c.Type)) {
			errs = append(errs, field.Invalid(p.Child("type"), c.Type, msg))
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}))
		}
	}
	if len(errs) > 0 {
		return errdefs.Invalid(fmt.Errorf("The Pod %q is invalid: %s", obj.name, errs.ToAggregate().Error()))
	}
	if dryRun == "none" {
		if err := supervisor.SetPodConditions(l, obj.namespace, obj.name, pod.Status.Conditions); err != nil {
			if errdefs.IsInvalid(err) {
				return err
			}
			return failed("%v", err)
		}
	} else {
		word += map[string]string{"client": " (dry run)", "server": " (server dry run)"}[dryRun]
	}
	if output == "" || output == "name" {
		if output == "name" {
			fmt.Printf("%s/%s\n", resource, obj.name)
			return nil
		}
		fmt.Printf("%s/%s %s\n", resource, obj.name, word)
		return nil
	}
	return printObject(output, []any{&pod}, true)
}
