package integration

import (
	"strings"
	"testing"
)

// The Kubernetes docs' init-container walkthrough reads the pod's namespace
// from the service-account volume the API server's admission plugin mounts
// into every container; automountServiceAccountToken: false leaves it out.
func TestServiceAccountNamespaceFile(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: sa, namespace: team-a}
spec:
  restartPolicy: Never
  initContainers:
  - name: init
    image: busybox:1.28
    command: ['sh', '-c', 'echo init in $(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)']
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; ls /var/run/secrets/kubernetes.io/serviceaccount; touch /var/run/secrets/kubernetes.io/serviceaccount/x 2>/dev/null && echo writable || echo read-only']
---
apiVersion: v1
kind: Pod
metadata: {name: nosa}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1 || true']
`, "--wait")
	if got := e.must("-n", "team-a", "logs", "sa", "-c", "init").stdout; got != "init in team-a\n" {
		t.Errorf("init container printed %q, want %q", got, "init in team-a\n")
	}
	if got, want := e.must("-n", "team-a", "logs", "sa", "-c", "app").stdout, "team-a\nnamespace\nread-only\n"; got != want {
		t.Errorf("app printed %q, want %q", got, want)
	}
	if got := e.must("logs", "nosa").stdout; !strings.Contains(got, "No such file or directory") {
		t.Errorf("with automountServiceAccountToken: false the pod saw %q, want no such directory", got)
	}
}
