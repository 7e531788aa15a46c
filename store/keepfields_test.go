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
