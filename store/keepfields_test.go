package store

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An apply of the manifest after the controller's revision annotation and
// `rollout restart` / `rollout pause` keeps them (kubectl apply's three-way
// merge leaves fields the manifest never had): unchanged; a manifest that
// changes the template still keeps them.
func TestApplyKeepsControllerFields(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	manifest := func(image string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			}},
		}
	}
	if _, err := l.Put(DeploymentKind, manifest("a")); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(DeploymentKind, "default", "web", func(o Object) error {
		d := o.(*appsv1.Deployment)
		d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
		d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
		d.Spec.Paused = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if action, err := l.Put(DeploymentKind, manifest("a")); err != nil || action != "unchanged" {
		t.Errorf("apply of the same manifest: %q %v", action, err)
	}
	if action, err := l.Put(DeploymentKind, manifest("b")); err != nil || action != "configured" {
		t.Fatalf("apply of a new image: %q %v", action, err)
	}
	o, _ := l.Get(DeploymentKind, "default", "web")
	d := o.(*appsv1.Deployment)
	if d.Annotations["deployment.kubernetes.io/revision"] != "2" || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" || !d.Spec.Paused || d.Generation != 2 {
		t.Errorf("after apply: annotations %v template annotations %v paused %v generation %d", d.Annotations, d.Spec.Template.Annotations, d.Spec.Paused, d.Generation)
	}
}

// kubectl apply's three-way merge for spec.paused: a Deployment paused by
// `rollout pause` stays paused through an apply of a manifest without the
// field, is resumed by one that says `paused: false`, and a field a
// manifest set and the next one drops goes back to its default.
func TestApplyPausedThreeWay(t *testing.T) {
	l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	d := func(paused bool) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{Paused: paused, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "a"}}},
			}},
		}
	}
	paused := func() bool {
		o, err := l.Get(DeploymentKind, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		return o.(*appsv1.Deployment).Spec.Paused
	}
	pause := func() {
		if err := l.Update(DeploymentKind, "default", "web", func(o Object) error { o.(*appsv1.Deployment).Spec.Paused = true; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	put := func(obj *appsv1.Deployment, set ...string) string {
		action, err := l.PutApplied(DeploymentKind, obj, nil, set)
		if err != nil {
			t.Fatal(err)
		}
		return action
	}
	put(d(false))
	pause()
	if a := put(d(false)); a != "unchanged" || !paused() {
		t.Errorf("apply without spec.paused: %s, paused %v; want unchanged, paused", a, paused())
	}
	if a := put(d(false), "spec.paused"); a != "configured" || paused() {
		t.Errorf("apply of paused: false: %s, paused %v; want configured, resumed", a, paused())
	}
	put(d(true), "spec.paused")
	if a := put(d(false)); a != "configured" || paused() {
		t.Errorf("apply that drops paused: true: %s, paused %v; want configured, resumed", a, paused())
	}
	pause()
	if a := put(d(false)); a != "unchanged" || !paused() {
		t.Errorf("apply without spec.paused after a pause: %s, paused %v", a, paused())
	}
}
