package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ephemeralPodYAML is ephemeral_containers.go's target pod.
const ephemeralPodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: ephemeral-containers-target-pod}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: test-container-1
    image: busybox:1.28
    command: ["/bin/sleep"]
    args: ["10000"]
`

// Ephemeral containers, as test/e2e/common/node/ephemeral_containers.go
// (NodeConformance) adds them, through podrun debug (kubectl debug) and the
// ephemeralcontainers subresource: the container runs in the pod, its logs
// and exec work, the pod's generation moves, a second one can be added, the
// existing ones can be neither changed nor removed; with --target it sees
// the target's processes; it runs once, whatever its exit and the pod's
// restart policy, and is no part of the pod's phase or readiness.
func TestEphemeralContainers(t *testing.T) {
	e := newEnv(t)
	const pod = "ephemeral-containers-target-pod"
	e.apply(ephemeralPodYAML)
	p := e.waitPhase(pod, corev1.PodRunning, time.Minute)
	if p.Generation != 1 {
		t.Fatalf("generation %d before any ephemeral container, want 1", p.Generation)
	}
	if r := e.must("debug", pod, "--image=busybox:1.28", "-c", "debugger", "--target", "test-container-1", "--",
		"sh", "-c", "while true; do echo polo; sleep 2; done"); r.stdout != "" || r.stderr != "Targeting container \"test-container-1\". If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n" {
		t.Fatalf("debug without -i or --attach says only what it targets (kubectl debug): %s", r)
	}
	p = e.waitFor(pod, time.Minute, "the debugger running", func(p *corev1.Pod) bool {
		return containerState(p, "debugger").State.Running != nil
	})
	if p.Generation != 2 || p.Status.ObservedGeneration != 2 {
		t.Errorf("generation %d, observedGeneration %d, want 2 and 2", p.Generation, p.Status.ObservedGeneration)
	}
	// The general profile (kubectl's default) lets it trace its target.
	if sc := p.Spec.EphemeralContainers[0].SecurityContext; sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "SYS_PTRACE" {
		t.Errorf("debugger's securityContext %+v: want SYS_PTRACE added (the general profile)", sc)
	}
	capEff := func(container string) uint64 {
		t.Helper()
		r := e.must("exec", pod, "-c", container, "--", "grep", "CapEff", "/proc/self/status")
		v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.stdout), "CapEff:")), 16, 64)
		if err != nil {
			t.Fatalf("capabilities of %s: %s", container, r)
		}
		return v
	}
	const sysPtrace = 1 << 19
	if app, dbg := capEff("test-container-1"), capEff("debugger"); app&sysPtrace != 0 || dbg != app|sysPtrace {
		t.Errorf("capabilities: app %x, debugger %x: want the app's set and SYS_PTRACE", app, dbg)
	}
	if st := containerState(p, "debugger"); st.Ready || st.Started != nil || !strings.HasPrefix(st.ContainerID, "podrun://") {
		t.Errorf("debugger's status: ready %v, started %v, id %q: want not ready and no started, as the kubelet reports it", st.Ready, st.Started, st.ContainerID)
	}
	if r := e.must("exec", pod, "-c", "debugger", "--", "/bin/echo", "marco"); !strings.Contains(r.stdout, "marco") {
		t.Errorf("exec in the ephemeral container: %s", r)
	}
	e.eventually("polo", true, "logs", pod, "-c", "debugger")
	// --target: the target's processes are the debugger's to see.
	if r := e.must("exec", pod, "-c", "debugger", "--", "ps"); !strings.Contains(r.stdout, "/bin/sleep 10000") {
		t.Errorf("the debugger does not see its target's processes:\n%s", r)
	}
	if r := e.must("describe", "pod", pod); !strings.Contains(r.stdout, "Ephemeral Containers:\n  debugger:") {
		t.Errorf("describe lacks the ephemeral containers:\n%s", r.stdout)
	}

	// A second one through the subresource: it exits with an error, is not
	// restarted, and leaves the pod Running and Ready.
	if r := e.must("patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p",
		`{"spec":{"ephemeralContainers":[{"name":"debugger2","image":"busybox:1.28","imagePullPolicy":"IfNotPresent","terminationMessagePolicy":"File","stdin":true,"tty":true,"command":["sh","-c","echo two; exit 4"]}]}}`); r.stdout != "pod/"+pod+" patched\n" {
		t.Fatalf("patch --subresource ephemeralcontainers: %s", r)
	}
	p = e.waitFor(pod, time.Minute, "debugger2 ended", func(p *corev1.Pod) bool {
		return containerState(p, "debugger2").State.Terminated != nil
	})
	if t2 := containerState(p, "debugger2").State.Terminated; t2.ExitCode != 4 || t2.Reason != "Error" {
		t.Errorf("debugger2 ended %+v, want exit 4, Error", t2)
	}
	time.Sleep(3 * time.Second) // a restart, were there one, would have come
	p = e.pod(pod)
	if st := containerState(p, "debugger2"); st.RestartCount != 0 || st.State.Terminated == nil {
		t.Errorf("debugger2 was run again: %+v restarts %d", st.State, st.RestartCount)
	}
	if p.Status.Phase != corev1.PodRunning || len(p.Spec.EphemeralContainers) != 2 || p.Generation != 3 {
		t.Errorf("pod after debugger2: phase %s, %d ephemeral containers, generation %d", p.Status.Phase, len(p.Spec.EphemeralContainers), p.Generation)
	}
	e.eventually("two", true, "logs", pod, "-c", "debugger2")

	// The API server's refusals (ValidatePodEphemeralContainersUpdate, validateEphemeralContainers).
	e.mustFail(
		failure{[]string{"patch", "pod", pod, "--subresource", "ephemeralcontainers", "--type", "merge", "-p", `{"spec":{"ephemeralContainers":null}}`}, 2, `existing ephemeral containers "debugger" may not be removed`},
		failure{[]string{"patch", "pod", pod, "--subresource", "ephemeralcontainers", "--type", "json", "-p", `[{"op":"replace","path":"/spec/ephemeralContainers/0/image","value":"busybox:1.36"}]`}, 2, `may not be changed`},
		failure{[]string{"patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p", `{"spec":{"ephemeralContainers":[{"name":"bad","image":"busybox:1.28","ports":[{"containerPort":80}]}]}}`}, 2, "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"},
		failure{[]string{"debug", pod, "--image=busybox:1.28", "-c", "test-container-1", "--", "true"}, 2, `Duplicate value: "test-container-1"`},
		failure{[]string{"debug", pod, "--image=busybox:1.28", "--target", "nope", "-c", "d3", "--", "true"}, 2, `targetContainerName: Not found: "nope"`},
		failure{[]string{"debug", "no-such-pod", "--image=busybox:1.28", "--", "true"}, 1, `not found`},
	)
	// The pod's manifest applied again leaves them (kubectl apply's
	// three-way merge never applied them).
	if r := e.must("apply", "-f", e.manifest(ephemeralPodYAML)); r.stdout != "pod/"+pod+" unchanged\n" {
		t.Errorf("apply of the manifest after the ephemeral containers: %s", r)
	}
	// Attached: its output until it ends, and its exit code.
	r := e.podrun("debug", pod, "--image=busybox:1.28", "--attach", "--", "sh", "-c", "echo attached; exit 5")
	if r.code != 5 || !strings.Contains(r.stdout, "attached") || !strings.Contains(r.stderr, "Defaulting debug container name to debugger-") {
		t.Errorf("debug --attach: %s", r)
	}
	if p = e.pod(pod); len(p.Spec.EphemeralContainers) != 3 || len(p.Status.EphemeralContainerStatuses) != 3 {
		t.Errorf("%d ephemeral containers, %d statuses, want 3", len(p.Spec.EphemeralContainers), len(p.Status.EphemeralContainerStatuses))
	}
}
