package controllers

import (
	"io"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/store"
)

func testContext(t *testing.T) *Context {
	l := store.Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	ct := &controllers{deleting: map[types.UID]bool{}, backoff: map[types.UID]backoffState{}, wake: make(chan struct{}, 1)}
	return &Context{L: l, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now(), ctrl: ct, objects: map[types.UID]bool{}}
}

func TestSetReplicaSetAnnotations(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		ChangeCauseAnnotation:     "kubectl set image",
		RevisionAnnotation:        "4",
		lastAppliedAnnotation:     "{}",
		DesiredReplicasAnnotation: "9",
	}}}
	rs := &appsv1.ReplicaSet{}
	setReplicaSetAnnotations(d, rs, 1)
	if rs.Annotations[ChangeCauseAnnotation] != "kubectl set image" || rs.Annotations[RevisionAnnotation] != "1" ||
		rs.Annotations[lastAppliedAnnotation] != "" || rs.Annotations[DesiredReplicasAnnotation] != "" || rs.Annotations[RevisionHistoryAnnotation] != "" {
		t.Errorf("new replica set annotations %v", rs.Annotations)
	}
	// Rolled back to: the revision it had goes to its history.
	setReplicaSetAnnotations(d, rs, 3)
	setReplicaSetAnnotations(d, rs, 5)
	if rs.Annotations[RevisionAnnotation] != "5" || rs.Annotations[RevisionHistoryAnnotation] != "1,3" {
		t.Errorf("after two rollbacks: %v", rs.Annotations)
	}
	if Revision(rs) != 5 || Revision(&appsv1.ReplicaSet{}) != 0 {
		t.Errorf("Revision = %d", Revision(rs))
	}
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) string {
	if c := getCondition(d.Status, t); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// syncDeployment over a store: revision 1 on the ReplicaSet and the
// Deployment; paused, a template change makes no ReplicaSet and the
// Progressing condition is Unknown/DeploymentPaused; resumed, the new
// template is revision 2.
func TestSyncDeploymentRevisionsAndPause(t *testing.T) {
	c := testContext(t)
	one, deadline := int32(1), int32(600)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, ProgressDeadlineSeconds: &deadline, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: *template("busybox:1.28"), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
	}
	if _, err := c.L.Put(store.DeploymentKind, d); err != nil {
		t.Fatal(err)
	}
	sync := func() *appsv1.Deployment {
		t.Helper()
		o, err := c.L.Get(store.DeploymentKind, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		if err := syncDeployment(c, o); err != nil {
			t.Fatal(err)
		}
		o, _ = c.L.Get(store.DeploymentKind, "default", "web")
		return o.(*appsv1.Deployment)
	}
	revisions := func() map[string]string {
		objs, _ := c.L.List(store.ReplicaSetKind, "default")
		out := map[string]string{}
		for _, o := range objs {
			rs := o.(*appsv1.ReplicaSet)
			out[rs.Spec.Template.Spec.Containers[0].Image] = rs.Annotations[RevisionAnnotation]
		}
		return out
	}
	got := sync()
	if got.Annotations[RevisionAnnotation] != "1" || revisions()["busybox:1.28"] != "1" {
		t.Fatalf("deployment annotations %v, replica sets %v", got.Annotations, revisions())
	}
	if err := c.L.Update(store.DeploymentKind, "default", "web", func(o store.Object) error {
		d := o.(*appsv1.Deployment)
		d.Spec.Paused = true
		d.Spec.Template = *template("busybox:1.36")
		d.Generation++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got = sync()
	if len(revisions()) != 1 || condition(got, appsv1.DeploymentProgressing) != "Unknown/DeploymentPaused" || got.Status.ObservedGeneration != got.Generation || got.Status.UpdatedReplicas != 0 {
		t.Fatalf("paused: replica sets %v, status %+v", revisions(), got.Status)
	}
	if err := c.L.Update(store.DeploymentKind, "default", "web", func(o store.Object) error {
		o.(*appsv1.Deployment).Spec.Paused = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Resumed (DeploymentResumed), and in the same pass the rollout's
	// condition: the old ReplicaSet has no pods, the new one is made.
	got = sync()
	if condition(got, appsv1.DeploymentProgressing) != "True/NewReplicaSetCreated" {
		t.Errorf("resumed: %+v", got.Status.Conditions)
	}
	if revisions()["busybox:1.36"] != "2" || got.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("after resume: replica sets %v, deployment annotations %v", revisions(), got.Annotations)
	}
}

// A Job's pod active at the last pass and gone now, or being deleted by
// someone else, counts as failed once; one the controller deletes, or that
// succeeded, does not.
func TestDeletedJobPods(t *testing.T) {
	c := testContext(t)
	job := types.UID("job-1")
	now := metav1.Now()
	pod := func(uid string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	gone, byUser, byCtrl, done, running := pod("gone", corev1.PodRunning, false), pod("user", corev1.PodRunning, true),
		pod("ctrl", corev1.PodRunning, true), pod("done", corev1.PodSucceeded, true), pod("run", corev1.PodRunning, false)
	tr, deleted := c.deletedJobPods(job, nil)
	if err := c.saveJobTracking(job, tr, []*corev1.Pod{gone, byUser, byCtrl, done, running}, deleted); err != nil {
		t.Fatal(err)
	}
	c.ctrl.deleting["ctrl"] = true
	tr, deleted = c.deletedJobPods(job, []*corev1.Pod{byUser, byCtrl, done, running})
	if len(deleted) != 2 || !deleted["gone"] || !deleted["user"] {
		t.Fatalf("counted as failed: %v", deleted)
	}
	if err := c.saveJobTracking(job, tr, []*corev1.Pod{running}, deleted); err != nil {
		t.Fatal(err)
	}
	// Later passes: the deleted ones stay counted, once.
	_, deleted = c.deletedJobPods(job, []*corev1.Pod{running})
	if len(deleted) != 2 {
		t.Errorf("next pass: %v", deleted)
	}
	c.forgetJobTracking(map[types.UID]bool{})
	if _, deleted = c.deletedJobPods(job, nil); len(deleted) != 0 {
		t.Errorf("a finished Job's tracking is kept: %v", deleted)
	}
}

// ClaimReplicaSets: an orphan ReplicaSet with the selector's labels is
// adopted (and, with the Deployment's template, is its new ReplicaSet: no
// other is made); relabelled, it is released.
func TestSyncDeploymentClaimsReplicaSets(t *testing.T) {
	c := testContext(t)
	one, deadline := int32(1), int32(600)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.DeploymentSpec{Replicas: &one, ProgressDeadlineSeconds: &deadline, Selector: sel, Template: *template("busybox:1.28")},
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &one, Selector: sel, Template: *template("busybox:1.28")},
	}
	for k, o := range map[*store.Kind]store.Object{store.DeploymentKind: d, store.ReplicaSetKind: rs} {
		if _, err := c.L.Put(k, o); err != nil {
			t.Fatal(err)
		}
	}
	sync := func() {
		t.Helper()
		o, _ := c.L.Get(store.DeploymentKind, "default", "web")
		if err := syncDeployment(c, o); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	objs, _ := c.L.List(store.ReplicaSetKind, "default")
	o, _ := c.L.Get(store.DeploymentKind, "default", "web")
	if ref := metav1.GetControllerOf(objs[0]); len(objs) != 1 || ref == nil || ref.UID != o.GetUID() || ref.Kind != "Deployment" {
		t.Fatalf("%d replica sets, the first's controller %+v", len(objs), ref)
	}
	if err := c.L.Update(store.ReplicaSetKind, "default", "orphan", func(o store.Object) error {
		o.SetLabels(map[string]string{"app": "other"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sync()
	released, _ := c.L.Get(store.ReplicaSetKind, "default", "orphan")
	if ref := metav1.GetControllerOf(released); ref != nil {
		t.Errorf("a relabelled replica set is still controlled by %+v", ref)
	}
}
