package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const readinessGatesYAML = `
apiVersion: v1
kind: Pod
metadata:
  name: pod-ready
  labels: {test: pod-readiness-gate}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: pod-readiness-gate
    image: busybox:1.28
    command: ["/bin/sh", "-c", "echo container is alive; sleep 10000"]
  readinessGates:
  - conditionType: k8s.io/test-condition1
  - conditionType: k8s.io/test-condition2
`

func readyCondition(p *corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c
		}
	}
	return corev1.PodCondition{}
}

// Readiness gates and the pods/status subresource, as pods.go's "should
// support pod readiness gates" (NodeConformance) and "should patch a pod
// status" (Conformance) drive them: the pod is Ready only once every gate's
// condition, set through the status subresource, is True; the patch answers
// with the patched status; the kubelet's own fields stay the supervisor's.
func TestReadinessGates(t *testing.T) {
	e := newEnv(t)
	e.apply(readinessGatesYAML)
	p := e.waitFor("pod-ready", time.Minute, "running, not ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && readyCondition(p).Reason == "ReadinessGatesNotReady"
	})
	if c := readyCondition(p); c.Status != corev1.ConditionFalse || c.Message != `corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.` {
		t.Errorf("Ready before the gates: %+v", c)
	}
	if r := e.must("get", "pod", "pod-ready", "-o", "wide"); !strings.Contains(r.stdout, "0/2") {
		t.Errorf("READINESS GATES column:\n%s", r.stdout)
	}
	patch := func(cond, status string) {
		t.Helper()
		e.must("patch", "pod", "pod-ready", "--subresource", "status", "-p", `{"status":{"conditions":[{"type":"`+cond+`", "status":"`+status+`"}]}}`)
	}
	patch("k8s.io/test-condition1", "True")
	time.Sleep(2 * time.Second)
	p = e.pod("pod-ready")
	if c := readyCondition(p); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, `corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`) {
		t.Errorf("Ready with one gate True: %+v", c)
	}
	patch("k8s.io/test-condition2", "True")
	p = e.waitFor("pod-ready", time.Minute, "ready", func(p *corev1.Pod) bool { return readyCondition(p).Status == corev1.ConditionTrue })
	if r := e.must("get", "pod", "pod-ready", "-o", "wide"); !strings.Contains(r.stdout, "2/2") {
		t.Errorf("READINESS GATES column:\n%s", r.stdout)
	}
	patch("k8s.io/test-condition1", "False")
	p = e.waitFor("pod-ready", time.Minute, "not ready again", func(p *corev1.Pod) bool {
		c := readyCondition(p)
		return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, `the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False`)
	})
	// Both gates' conditions are in the status, after the kubelet's own.
	n := 0
	for _, c := range p.Status.Conditions {
		if strings.HasPrefix(string(c.Type), "k8s.io/test-condition") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d gate conditions in the status, want 2: %+v", n, p.Status.Conditions)
	}

	// "should patch a pod status": the answer carries the patched fields.
	r := e.must("patch", "pod", "pod-ready", "--subresource", "status", "--type", "merge", "-o", "json",
		"-p", `{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"message":"Patched by e2e test","reason":"E2E"}}`)
	if !strings.Contains(r.stdout, `"message": "Patched by e2e test"`) || !strings.Contains(r.stdout, `"reason": "E2E"`) {
		t.Errorf("patch --subresource status -o json:\n%s", r.stdout)
	}
	e.mustFail(failure{[]string{"patch", "pod", "pod-ready", "--subresource", "status", "-p", `{"status":{"conditions":[{"type":"bad type!","status":"True"}]}}`}, 2, `type: Invalid value: "bad type!"`})
	// The gates' conditions stay through the supervisor's own updates.
	e.must("label", "pod", "pod-ready", "x=y")
	time.Sleep(time.Second)
	if c := readyCondition(e.pod("pod-ready")); c.Status != corev1.ConditionFalse {
		t.Errorf("Ready after a label: %+v", c)
	}
}
