//go:build !podrun_lean

package podspec

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PriorityClass (scheduling.k8s.io/v1) is cluster-scoped; its defaults are
// SetDefaults_PriorityClass's (preemptionPolicy PreemptLowerPriority).
func init() {
	kinds["PriorityClass"] = kindInfo{"scheduling.k8s.io/v1", reflect.TypeOf(schedulingv1.PriorityClass{}), func(l *loader, obj runtime.Object, _ Origin) {
		o := obj.(*schedulingv1.PriorityClass)
		prepareForCreate(&o.ObjectMeta)
		o.Namespace = ""
		SetPriorityClassDefaults(o)
		l.m.PriorityClasses = append(l.m.PriorityClasses, o)
	}}
}

// SetPriorityClassDefaults is SetDefaults_PriorityClass.
func SetPriorityClassDefaults(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
}

// The scheduling API's constants (pkg/apis/scheduling/types.go).
const (
	HighestUserDefinablePriority = int32(1000000000)
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
	systemPriorityClassPrefix    = "system-"
)

// SystemPriorityClasses are the classes every cluster has
// (scheduling.SystemPriorityClasses).
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:       metav1.ObjectMeta{Name: "system-node-critical"},
			Value:            SystemCriticalPriority + 1000,
			Description:      "Used for system critical pods that must not be moved from their current node.",
			PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority),
		},
		{
			ObjectMeta:       metav1.ObjectMeta{Name: "system-cluster-critical"},
			Value:            SystemCriticalPriority,
			Description:      "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
			PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority),
		},
	}
}

// IsSystemPriorityClass reports whether name is one of SystemPriorityClasses.
func IsSystemPriorityClass(name string) bool {
	for _, s := range SystemPriorityClasses() {
		if s.Name == name {
			return true
		}
	}
	return false
}

// ValidatePriorityClass is the API server's ValidatePriorityClass: a DNS
// subdomain name, "system-" names reserved, a value no higher than
// HighestUserDefinablePriority.
func ValidatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&pc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		known := false
		for _, s := range SystemPriorityClasses() {
			if s.Name == pc.Name && s.Value == pc.Value && !pc.GlobalDefault {
				known = true
			}
		}
		if !known {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only"))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// DefaultPriorityClass is the globalDefault class, the lowest valued one if
// several are (admission.go getDefaultPriorityClass), or nil.
func DefaultPriorityClass(classes []*schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pc.GlobalDefault && (def == nil || def.Value > pc.Value) {
			def = pc
		}
	}
	return def
}

// AdmitPriority is what the Priority admission plugin does to a pod being
// created (plugin/pkg/admission/priority/admission.go: admitPod and
// establishPriority) given the cluster's PriorityClasses: a pod without a
// class gets the globalDefault class (its name, value and preemption
// policy), else priority 0 and PreemptLowerPriority; a pod of a class gets
// its value and policy. A class that does not exist, or a priority or
// preemption policy in the spec that differs from what the class gives, is
// forbidden, with the API server's message.
func AdmitPriority(pod *corev1.Pod, classes []*schedulingv1.PriorityClass) error {
	name := pod.Spec.PriorityClassName
	var priority int32
	policy := ptrTo(corev1.PreemptLowerPriority)
	if name == "" {
		if def := DefaultPriorityClass(classes); def != nil {
			name, priority, policy = def.Name, def.Value, def.PreemptionPolicy
		}
	} else {
		var found *schedulingv1.PriorityClass
		for _, pc := range classes {
			if pc.Name == name {
				found = pc
			}
		}
		if found == nil {
			return forbiddenPod(pod, "no PriorityClass with name %v was found", name)
		}
		priority, policy = found.Value, found.PreemptionPolicy
	}
	pod.Spec.PriorityClassName = name
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return forbiddenPod(pod, "the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority)
	}
	pod.Spec.Priority = &priority
	if pod.Spec.PreemptionPolicy != nil && policy != nil && *pod.Spec.PreemptionPolicy != *policy {
		return forbiddenPod(pod, "the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy)
	}
	if policy != nil {
		pod.Spec.PreemptionPolicy = ptrTo(*policy)
	}
	return nil
}

// forbiddenPod is admission.NewForbidden's message for a pod.
func forbiddenPod(pod *corev1.Pod, format string, args ...any) error {
	return fmt.Errorf("pods %q is forbidden: %s", pod.Name, fmt.Sprintf(format, args...))
}
