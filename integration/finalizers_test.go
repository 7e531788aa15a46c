package integration

import (
	"strings"
	"testing"
)

// Kubernetes' e2e_node "Deleted pods handling": a deleted pod's phase ends
// Succeeded when its container exits 0 on SIGTERM, Failed (137) when it is
// killed; a finalizer keeps the stopped pod, in that phase, until it is
// removed; while the pod is being deleted no finalizer can be added.
func TestDeletedPodKeptForFinalizersInItsTerminalPhase(t *testing.T) {
	e := newCLIEnv(t)
	// Whatever fails, the finalizers go first, or the cleanup's delete waits
	// for these pods as kubectl would.
	t.Cleanup(func() {
		for _, name := range []string{"clean", "killed"} {
			e.podrun("patch", "pod", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	})
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: clean, finalizers: [example.com/test-finalizer]}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: [sh, -c]
    args:
    - |
      sleep 9999999 &
      PID=$!
      _term() {
        kill $PID
        echo "Caught SIGTERM signal!"
      }
      trap _term TERM
      wait $PID
      exit 0
---
apiVersion: v1
kind: Pod
metadata: {name: killed, finalizers: [example.com/test-finalizer]}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox:1.28, command: [sleep, "1800"]}
`))
	e.must("wait", "pod", "clean", "killed", "--for=condition=Ready", "--timeout=60s")
	for _, name := range []string{"clean", "killed"} {
		if r := e.must("delete", "pod", name, "--wait=false", "--grace-period=1"); r.stdout != "pod \""+name+"\" deleted\n" {
			t.Errorf("delete --wait=false printed %q", r.stdout)
		}
	}
	state := "jsonpath={.status.phase} {.status.containerStatuses[0].state.terminated.exitCode} {.metadata.finalizers}"
	e.eventually("Succeeded 0 [\"example.com/test-finalizer\"]", false, "get", "pod", "clean", "-o", state)
	e.eventually("Failed 137 [\"example.com/test-finalizer\"]", false, "get", "pod", "killed", "-o", state)
	if ts := e.must("get", "pod", "clean", "-o", "jsonpath={.metadata.deletionTimestamp}").stdout; ts == "" {
		t.Error("the kept pod has no deletionTimestamp")
	}
	if r := e.must("get", "pods", "--no-headers"); !strings.Contains(r.stdout, "Completed") || !strings.Contains(r.stdout, "Error") {
		t.Errorf("get pods of the kept pods:\n%s", r.stdout)
	}
	e.mustFail(
		failure{[]string{"patch", "pod", "clean", "--type=json", "-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/other"}]`}, 2, "no new finalizers can be added if the object is being deleted"},
		// kubectl delete waits until the pod is gone; --timeout bounds it.
		failure{[]string{"delete", "pod", "killed", "--timeout", "2s"}, 1, "timed out waiting for the condition on pods/killed"},
	)
	// The last finalizer removed, the pod goes.
	if r := e.must("patch", "pod", "clean", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`); r.stdout != "pod/clean patched\n" {
		t.Errorf("patch printed %q", r.stdout)
	}
	e.mustFail(failure{[]string{"get", "pod", "clean"}, 1, `pods "clean" not found`})
	e.must("patch", "pod", "killed", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	e.mustFail(failure{[]string{"get", "pod", "killed"}, 1, `pods "killed" not found`})
}

// A Deployment's pod with finalizers (from its template): deleting the
// Deployment returns once it and its ReplicaSet are gone, as kubectl's
// background deletion does; the pod stays, stopped, until its finalizer is
// removed.
func TestDeletedWorkloadLeavesItsFinalizedPod(t *testing.T) {
	e := newCLIEnv(t)
	t.Cleanup(func() {
		for _, name := range strings.Fields(e.podrun("get", "pods", "-o", "jsonpath={.items[*].metadata.name}").stdout) {
			e.podrun("patch", "pod", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	})
	e.must("apply", "-f", e.manifest(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: fin}
spec:
  replicas: 1
  selector: {matchLabels: {app: fin}}
  template:
    metadata: {labels: {app: fin}, finalizers: [example.com/keep]}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox:1.28, command: `+netIdle+`}]
`), "--wait", "--timeout", "2m")
	name := e.must("get", "pods", "-l", "app=fin", "-o", "jsonpath={.items[0].metadata.name}").stdout
	if r := e.podrun("delete", "deployment", "fin", "--timeout", "60s"); r.code != 0 {
		t.Fatalf("delete deployment: %s", r)
	}
	e.eventually("Succeeded", false, "get", "pod", name, "-o", "jsonpath={.status.phase}")
	if r := e.must("get", "deploy,rs", "-o", "name"); r.stdout != "" {
		t.Errorf("left after the delete: %q", r.stdout)
	}
	e.must("patch", "pod", name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	e.mustFail(failure{[]string{"get", "pod", name}, 1, "not found"})
}
