package supervisor

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// An ephemeral container added to a running pod runs once in it, as the
// kubelet's SyncPod starts EphemeralContainersToStart: never restarted
// whatever the restart policy, never ready nor started in its status, no
// part of the pod's phase, and stopped with the pod.
func TestEphemeralContainer(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"init"}, []string{"app"})
	h := newHarness(t, pod)
	h.exit("init", 0)
	if st := h.state("app"); st.State.Running == nil {
		t.Fatalf("app not running: %+v", st.State)
	}
	upd := pod.DeepCopy()
	upd.Generation = 2
	upd.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"},
		TargetContainerName:      "app",
	}}
	h.m.update(upd)
	h.settle()
	st := h.state("debugger")
	if st.State.Running == nil || st.Ready || st.Started != nil {
		t.Fatalf("debugger: want running, not ready, no started; got %+v ready=%v started=%v", st.State, st.Ready, st.Started)
	}
	if got := h.r.targets; !slices.Equal(got, []string{"debugger->true"}) {
		t.Fatalf("ephemeral starts %v, want the debugger started in app's PID namespace", got)
	}
	if len(h.status.EphemeralContainerStatuses) != 1 || h.status.ObservedGeneration != 2 {
		t.Fatalf("status: %d ephemeral statuses, observedGeneration %d", len(h.status.EphemeralContainerStatuses), h.status.ObservedGeneration)
	}
	// It ends with an error: the pod's restart policy does not apply.
	h.exit("debugger", 3)
	h.step(time.Minute)
	st = h.state("debugger")
	if st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 || st.RestartCount != 0 || st.Started != nil {
		t.Fatalf("debugger after its exit: %+v restarts %d", st.State, st.RestartCount)
	}
	if n := len(slices.DeleteFunc(h.r.startOrder(), func(s string) bool { return s != "debugger" })); n != 1 {
		t.Fatalf("debugger started %d times, want once", n)
	}
	if h.status.Phase != corev1.PodRunning || h.cond(corev1.PodReady).Status != corev1.ConditionTrue {
		t.Fatalf("pod phase %s ready %v: an ephemeral container's exit is no part of them", h.status.Phase, h.cond(corev1.PodReady).Status)
	}
	// The same update again adds nothing; a second one starts only itself.
	upd2 := upd.DeepCopy()
	upd2.Spec.EphemeralContainers = append(upd2.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger2", Image: "busybox"}})
	h.m.update(upd)
	h.m.update(upd2)
	h.settle()
	if got := h.r.targets; !slices.Equal(got, []string{"debugger->true", "debugger2->false"}) {
		t.Fatalf("ephemeral starts %v", got)
	}
	// Deleting the pod stops it with the others.
	h.m.requestDelete(30 * time.Second)
	h.settle()
	if !slices.Contains(h.r.sent(), fmt.Sprintf("debugger2:%d", syscall.SIGTERM)) {
		t.Fatalf("debugger2 not stopped with the pod: signals %v", h.r.sent())
	}
	if h.m.state != stateDone {
		t.Fatalf("pod not done after its deletion: state %v", h.m.state)
	}
}

// A supervisor that takes over a pod (revive) does not run an ephemeral
// container that has run again; one it lost while running ended unknown.
func TestEphemeralContainerRestored(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "ran", Image: "busybox"}},
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "never", Image: "busybox"}},
	}
	h := newHarness(t, pod)
	clk := h.clock
	prev := corev1.PodStatus{StartTime: h.status.StartTime, EphemeralContainerStatuses: []corev1.ContainerStatus{
		{Name: "ran", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "never", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}},
	}}
	r := newFakeRunner(clk)
	m := newMachine(h.m.ctx, pod.DeepCopy(), r, clk, h.m.events, h.m.backoff)
	m.restore(prev)
	h2 := &harness{t: t, m: m, r: r, clock: clk}
	h2.settle()
	if st := h2.state("ran"); st.State.Terminated == nil || st.State.Terminated.Reason != reasonStatusUnknown {
		t.Fatalf("ran: %+v, want terminated %s", st.State, reasonStatusUnknown)
	}
	if got := h2.r.startOrder(); slices.Contains(got, "ran") || !slices.Contains(got, "never") {
		t.Fatalf("started %v: want never started, ran not", got)
	}
}
