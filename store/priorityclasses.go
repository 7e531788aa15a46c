//go:build !podrun_lean

package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
)

func init() {
	PriorityClassKind.prepare = preparePriorityClass
	Kinds = append(Kinds, PriorityClassKind)
}

// PriorityClassKind is scheduling.k8s.io/v1 PriorityClass, cluster-scoped:
// the classes the Priority admission resolves a pod's priorityClassName
// with, besides the system classes every cluster has (PriorityClasses).
var PriorityClassKind = &Kind{
	Name: "PriorityClass", Plural: "priorityclasses",
	Aliases: []string{"priorityclass", "pc", "priorityclass.scheduling.k8s.io", "priorityclasses.scheduling.k8s.io"},
	Group:   "scheduling.k8s.io", Version: "v1", ClusterScoped: true,
	newObject: func() object { return &schedulingv1.PriorityClass{} },
	same: func(a, b object) bool {
		x, y := a.(*schedulingv1.PriorityClass), b.(*schedulingv1.PriorityClass)
		return x.Value == y.Value && x.GlobalDefault == y.GlobalDefault && x.Description == y.Description &&
			reflect.DeepEqual(x.PreemptionPolicy, y.PreemptionPolicy) && sameMeta(x, y)
	},
	immutable: func(object) bool { return false },
}

func preparePriorityClass(l Layout, old, obj object) error {
	pc := obj.(*schedulingv1.PriorityClass)
	if old != nil {
		// ValidatePriorityClassUpdate: value and preemptionPolicy stay
		// (worded as kubectl's checkErr prints an Invalid error: the kind
		// without its group).
		o := old.(*schedulingv1.PriorityClass)
		if o.Value != pc.Value {
			return errdefs.Invalid(fmt.Errorf("The PriorityClass %q is invalid: value: Forbidden: may not be changed in an update.", pc.Name))
		}
		if !reflect.DeepEqual(o.PreemptionPolicy, pc.PreemptionPolicy) {
			return errdefs.Invalid(fmt.Errorf("The PriorityClass %q is invalid: preemptionPolicy: Invalid value: %q: field is immutable", pc.Name, *pc.PreemptionPolicy))
		}
	}
	// The Priority admission's validatePriorityClass: one default only.
	if pc.GlobalDefault {
		if def := podspec.DefaultPriorityClass(l.PriorityClasses()); def != nil && def.Name != pc.Name {
			return fmt.Errorf("priorityclasses.scheduling.k8s.io %q is forbidden: PriorityClass %v is already marked as default. Only one default can exist", pc.Name, def.Name)
		}
	}
	return nil
}

// PriorityClasses are the cluster's classes, the system ones and the
// stored, by name (as the API server lists them).
func (l Layout) PriorityClasses() []*schedulingv1.PriorityClass {
	out := podspec.SystemPriorityClasses()
	if created := l.Created(); !created.IsZero() {
		for _, pc := range out {
			pc.CreationTimestamp = metav1.NewTime(created)
		}
	}
	stored, _ := l.List(PriorityClassKind, "")
	for _, o := range stored {
		out = append(out, o.(*schedulingv1.PriorityClass))
	}
	slices.SortFunc(out, func(a, b *schedulingv1.PriorityClass) int { return strings.Compare(a.Name, b.Name) })
	return out
}
