package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A pod from the Kubernetes 1.5 init-container docs: its init containers live in the
// beta annotation. podrun runs them, as the 1.6–1.7 API servers did, and warns.
func TestInitContainerAnnotationOfOldDocsRuns(t *testing.T) {
	e := newEnv(t)
	r := e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: olddocs
  annotations:
    pod.beta.kubernetes.io/init-containers: '[
        {"name": "init-first", "image": "busybox:1.28", "command": ["sh", "-c", "echo first > /work/order"],
         "volumeMounts": [{"name": "work", "mountPath": "/work"}]},
        {"name": "init-second", "image": "busybox:1.28", "command": ["sh", "-c", "echo second >> /work/order"],
         "volumeMounts": [{"name": "work", "mountPath": "/work"}]}
      ]'
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['cat', '/work/order']
    volumeMounts: [{name: work, mountPath: /work}]
  volumes:
  - name: work
    emptyDir: {}
`)
	if !strings.Contains(r.stderr, "metadata.annotations[pod.beta.kubernetes.io/init-containers]: run as spec.initContainers") ||
		!strings.Contains(r.stderr, "Kubernetes ≥ 1.8 ignores this annotation") {
		t.Errorf("apply did not warn about the annotation:\n%s", r)
	}
	p := e.waitPhase("olddocs", corev1.PodSucceeded, time.Minute)
	if out := e.must("logs", "olddocs", "-c", "app").stdout; out != "first\nsecond\n" {
		t.Fatalf("app printed %q, want the two init containers' lines in order", out)
	}
	if len(p.Status.InitContainerStatuses) != 2 || p.Status.InitContainerStatuses[1].Name != "init-second" {
		t.Errorf("initContainerStatuses = %+v", p.Status.InitContainerStatuses)
	}
	// What a user pastes: the pod as podrun runs it, with spec.initContainers.
	if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[0].Name != "init-first" {
		t.Errorf("spec.initContainers = %+v", p.Spec.InitContainers)
	}
}
