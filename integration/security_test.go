package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSecurityContext(t *testing.T) {
	e := newEnv(t)
	// A Localhost seccomp profile that refuses mkdir, where the kubelet keeps them.
	profiles := filepath.Join(e.root, "seccomp", "profiles")
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(profiles, "no-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  restartPolicy: Never
  securityContext:
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: runtime-default
    image: busybox:1.28
    command: ['sh', '-c', 'grep "^Seccomp:" /proc/self/status']
  - name: unconfined
    image: busybox:1.28
    securityContext: {seccompProfile: {type: Unconfined}}
    command: ['sh', '-c', 'grep "^Seccomp:" /proc/self/status']
  - name: localhost
    image: busybox:1.28
    securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/no-mkdir.json}}
    command: ['sh', '-c', 'mkdir /tmp/x 2>&1 || echo refused']
  - name: user
    image: busybox:1.28
    securityContext: {runAsUser: 1234, runAsGroup: 5678, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false}
    command: ['sh', '-c', 'id -u; id -g; touch /x 2>/dev/null || echo read-only; grep "^NoNewPrivs:" /proc/self/status']
  - name: caps
    image: busybox:1.28
    securityContext: {capabilities: {drop: [ALL], add: [NET_ADMIN]}}
    command: ['sh', '-c', 'grep "^CapEff:" /proc/self/status']
`)
	e.waitFor("secure", time.Minute, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	for name, want := range map[string]string{
		"runtime-default": "Seccomp:\t2\n",
		"unconfined":      "Seccomp:\t0\n",
		"user":            "1234\n5678\nread-only\nNoNewPrivs:\t1\n",
		"caps":            "CapEff:\t0000000000001000\n", // CAP_NET_ADMIN (12) only
	} {
		if out := e.must("logs", "secure", "-c", name).stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}
	if out := e.must("logs", "secure", "-c", "localhost").stdout; !strings.Contains(out, "refused") {
		t.Errorf("the Localhost profile did not refuse mkdir: %q", out)
	}
}

func TestRunAsNonRootRefusesARootImage(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: nonroot}
spec:
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: app, image: busybox:1.28, command: ['true']}
`)
	p := e.waitFor("nonroot", 30*time.Second, "refused", func(p *corev1.Pod) bool {
		w := containerState(p, "app").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if msg, want := containerState(p, "app").State.Waiting.Message, fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: \"nonroot_default(%s)\", container: app)", p.UID); msg != want {
		t.Fatalf("message %q", msg)
	}
	if s := e.status("nonroot"); s != "CreateContainerConfigError" {
		t.Fatalf("STATUS %s", s)
	}
}
