package supervisor

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// GeneratePodReadyCondition: ContainersReady first, then every readiness
// gate's condition, with the kubelet's reason and messages.
func TestReadyConditionWithGates(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "a/x"}, {ConditionType: "a/y"}}}}
	ready := condition(corev1.ContainersReady, true, "", "")
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s}
	}
	for _, tc := range []struct {
		name   string
		cr     corev1.PodCondition
		conds  []corev1.PodCondition
		status corev1.ConditionStatus
		msg    string
	}{
		{"containers not ready", condition(corev1.ContainersReady, false, "ContainersNotReady", "m"), nil, corev1.ConditionFalse, "m"},
		{"no gate conditions", ready, nil, corev1.ConditionFalse,
			`corresponding condition of pod readiness gate "a/x" does not exist., corresponding condition of pod readiness gate "a/y" does not exist.`},
		{"one false", ready, []corev1.PodCondition{cond("a/x", corev1.ConditionTrue), cond("a/y", corev1.ConditionFalse)}, corev1.ConditionFalse,
			`the status of pod readiness gate "a/y" is not "True", but False`},
		{"both true", ready, []corev1.PodCondition{cond("a/x", corev1.ConditionTrue), cond("a/y", corev1.ConditionTrue)}, corev1.ConditionTrue, ""},
	} {
		got := readyCondition(pod, tc.cr, tc.conds)
		if got.Type != corev1.PodReady || got.Status != tc.status || got.Message != tc.msg {
			t.Errorf("%s: %+v, want %s %q", tc.name, got, tc.status, tc.msg)
		}
	}
}
