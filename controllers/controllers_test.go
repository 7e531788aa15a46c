package controllers

import (
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func TestComputeHash(t *testing.T) {
	a, b := template("busybox:1.28"), template("busybox:1.36")
	h := ComputeHash(a, nil)
	if h != ComputeHash(template("busybox:1.28"), nil) {
		t.Errorf("the hash of one template differs between calls")
	}
	// rand.SafeEncodeString's alphabet, no vowels.
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]+$`).MatchString(h) {
		t.Errorf("hash %q is not in SafeEncodeString's alphabet", h)
	}
	if ComputeHash(b, nil) == h {
		t.Errorf("two templates, one hash %q", h)
	}
	one, two := int32(1), int32(2)
	if ComputeHash(a, &one) == h || ComputeHash(a, &one) == ComputeHash(a, &two) {
		t.Errorf("the collision count does not change the hash")
	}
	// The ReplicaSet's template carries the hash label; it is the same template.
	withLabel := a.DeepCopy()
	withLabel.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = h
	if !EqualIgnoreHash(withLabel, a) || EqualIgnoreHash(withLabel, b) {
		t.Errorf("EqualIgnoreHash")
	}
}

// The cases of the deployment controller's TestResolveFenceposts, and the
// defaults (25%) for 3 and 10 replicas.
func TestResolveFenceposts(t *testing.T) {
	s := func(v string) *intstr.IntOrString { x := intstr.Parse(v); return &x }
	for _, tc := range []struct {
		surge, unavailable     *intstr.IntOrString
		desired                int32
		wantSurge, wantUnavail int32
		wantErr                bool
	}{
		{s("0%"), s("0%"), 0, 0, 1, false},
		{s("39%"), s("39%"), 10, 4, 3, false},
		{s("oops"), s("39%"), 10, 0, 0, true},
		{s("55%"), s("urg"), 10, 0, 0, true},
		{nil, s("39%"), 10, 0, 3, false},
		{s("39%"), nil, 10, 4, 0, false},
		{nil, nil, 10, 0, 1, false},
		{s("25%"), s("25%"), 3, 1, 0, false},
		{s("25%"), s("25%"), 10, 3, 2, false},
		{s("1"), s("1"), 3, 1, 1, false},
	} {
		surge, unavail, err := ResolveFenceposts(tc.surge, tc.unavailable, tc.desired)
		if (err != nil) != tc.wantErr || (!tc.wantErr && (surge != tc.wantSurge || unavail != tc.wantUnavail)) {
			t.Errorf("ResolveFenceposts(%v, %v, %d) = %d, %d, %v; want %d, %d (error %v)", tc.surge, tc.unavailable, tc.desired, surge, unavail, err, tc.wantSurge, tc.wantUnavail, tc.wantErr)
		}
	}
}

func rsWith(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
}

// The new ReplicaSet grows within desired + maxSurge (NewRSNewReplicas).
func TestNewRSNewReplicas(t *testing.T) {
	three := int32(3)
	one := intstr.FromInt32(1)
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &three, Strategy: appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}}}}
	for _, tc := range []struct {
		old, cur, want int32
	}{
		{3, 0, 1}, // one surge pod
		{2, 1, 2}, // an old one went: one more new
		{3, 1, 1}, // at desired + surge: wait
		{0, 2, 3}, // up to desired, never past it
		{0, 3, 3},
	} {
		newRS := rsWith(tc.cur)
		if got := NewRSNewReplicas(d, []*appsv1.ReplicaSet{rsWith(tc.old), newRS}, newRS); got != tc.want {
			t.Errorf("old %d new %d: NewRSNewReplicas = %d, want %d", tc.old, tc.cur, got, tc.want)
		}
	}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if got := NewRSNewReplicas(d, []*appsv1.ReplicaSet{rsWith(0)}, rsWith(0)); got != 3 {
		t.Errorf("Recreate: %d, want 3", got)
	}
	if MaxUnavailable(d) != 0 || MaxSurge(d) != 0 {
		t.Errorf("Recreate has no surge or unavailability")
	}
}

func pod(name string, phase corev1.PodPhase, ready bool, readyAgo time.Duration, restarts int32, created time.Duration) *corev1.Pod {
	now := time.Now()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-created))}}
	p.Status.Phase = phase
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-readyAgo))}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: restarts}}
	return p
}

// Scale-down deletes pending before running, not ready before ready, ready
// for less time first, more restarts first, newer first.
func TestPodsToDelete(t *testing.T) {
	pods := []*corev1.Pod{
		pod("old-ready", corev1.PodRunning, true, time.Hour, 0, 2*time.Hour),
		pod("young-ready", corev1.PodRunning, true, time.Minute, 0, 2*time.Hour),
		pod("pending", corev1.PodPending, false, 0, 0, time.Hour),
		pod("unready", corev1.PodRunning, false, 0, 0, 3*time.Hour),
		pod("unready-restarts", corev1.PodRunning, false, 0, 4, 3*time.Hour),
		pod("unready-newer", corev1.PodRunning, false, 0, 0, time.Hour),
	}
	var got []string
	for _, p := range PodsToDelete(pods, len(pods)) {
		got = append(got, p.Name)
	}
	want := []string{"pending", "unready-restarts", "unready-newer", "unready", "young-ready", "old-ready"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if n := len(PodsToDelete(pods, 2)); n != 2 {
		t.Errorf("PodsToDelete(2) gave %d", n)
	}
}
