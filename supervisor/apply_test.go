//go:build !podrun_lean

package supervisor

import (
	"testing"

	"github.com/podrun/podrun/store"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/podspec"
)

func TestAppliedHash(t *testing.T) {
	base := func() *podspec.Plan {
		return &podspec.Plan{
			Pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
			},
			ConfigMaps: map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"k": "1"}}},
		}
	}
	h := appliedHash(base(), store.Settings{})
	for _, tc := range []struct {
		name   string
		change func(p *podspec.Plan)
		same   bool
	}{
		{"identical", func(*podspec.Plan) {}, true},
		{"uid and creation time", func(p *podspec.Plan) { p.Pod.UID = "x"; p.Pod.CreationTimestamp = metav1.Now() }, true},
		{"status", func(p *podspec.Plan) { p.Pod.Status.Phase = corev1.PodRunning }, true},
		{"a ConfigMap's data (an object of its own)", func(p *podspec.Plan) { p.ConfigMaps["cfg"].Data["k"] = "2" }, true},
		{"image", func(p *podspec.Plan) { p.Pod.Spec.Containers[0].Image = "busybox:2" }, false},
		{"labels", func(p *podspec.Plan) { p.Pod.Labels = map[string]string{"a": "b"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.change(p)
			if got := appliedHash(p, store.Settings{}) == h; got != tc.same {
				t.Errorf("same hash = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestRestartingStatus(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		in    corev1.PodStatus
		phase corev1.PodPhase
	}{
		{"running pod", corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now}, corev1.PodPending},
		{"unknown pod", corev1.PodStatus{Phase: corev1.PodUnknown, Message: "lost"}, corev1.PodPending},
		{"finished pod keeps its phase", corev1.PodStatus{Phase: corev1.PodSucceeded}, corev1.PodSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
			in.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
			got := restartingStatus(in)
			if got.Phase != tc.phase {
				t.Errorf("phase %s, want %s", got.Phase, tc.phase)
			}
			if got.Conditions[0].Status != corev1.ConditionFalse || got.Conditions[1].Status != corev1.ConditionTrue {
				t.Errorf("conditions %+v", got.Conditions)
			}
			if got.ContainerStatuses[0].Ready {
				t.Error("a container is still ready")
			}
			if in.ContainerStatuses[0].Ready != true {
				t.Error("the input was changed")
			}
		})
	}
}
