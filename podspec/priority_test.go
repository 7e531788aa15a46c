//go:build !podrun_lean

package podspec

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdmitPriority follows admission.go's admitPod: the class's value and
// policy, the globalDefault class for a classless pod, and its refusals.
func TestAdmitPriority(t *testing.T) {
	never := corev1.PreemptNever
	classes := append(SystemPriorityClasses(),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 10, PreemptionPolicy: &never},
	)
	withDefault := append(append([]*schedulingv1.PriorityClass{}, classes...),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-default"}, Value: 50, GlobalDefault: true, PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority)},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low-default"}, Value: 5, GlobalDefault: true, PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority)},
	)
	for _, tc := range []struct {
		name, class string
		priority    *int32
		policy      *corev1.PreemptionPolicy
		classes     []*schedulingv1.PriorityClass
		want        string // class priority policy, or the error
	}{
		{name: "none", classes: classes, want: " 0 PreemptLowerPriority"},
		{name: "system", class: "system-cluster-critical", classes: classes, want: "system-cluster-critical 2000000000 PreemptLowerPriority"},
		{name: "user", class: "batch", classes: classes, want: "batch 10 Never"},
		{name: "same priority", class: "batch", priority: ptrTo(int32(10)), classes: classes, want: "batch 10 Never"},
		{name: "default", classes: withDefault, want: "low-default 5 PreemptLowerPriority"},
		{name: "unknown", class: "nope", classes: classes, want: `pods "unknown" is forbidden: no PriorityClass with name nope was found`},
		{name: "priority", priority: ptrTo(int32(3)), classes: classes, want: `pods "priority" is forbidden: the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{name: "policy", class: "batch", policy: ptrTo(corev1.PreemptLowerPriority), classes: classes, want: `pods "policy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name`},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: corev1.PodSpec{PriorityClassName: tc.class, Priority: tc.priority, PreemptionPolicy: tc.policy}}
		got := ""
		if err := AdmitPriority(pod, tc.classes); err != nil {
			got = err.Error()
		} else {
			got = pod.Spec.PriorityClassName + " " + itoa(*pod.Spec.Priority) + " " + string(*pod.Spec.PreemptionPolicy)
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func itoa(v int32) string { return strconv.Itoa(int(v)) }
