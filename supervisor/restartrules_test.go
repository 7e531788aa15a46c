package supervisor

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func rule(action corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) corev1.ContainerRestartRule {
	return corev1.ContainerRestartRule{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

func policy(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }

// The e2e scenarios of test/e2e/common/node/container_restart_policy.go
// ("Container Restart Rules") and the rules' order of evaluation.
func TestContainerRestartPolicyAndRules(t *testing.T) {
	restartOn42 := []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	for _, tc := range []struct {
		name      string
		pod       corev1.RestartPolicy
		policy    *corev1.ContainerRestartPolicy
		rules     []corev1.ContainerRestartRule
		code      int32
		restarted bool
		phase     corev1.PodPhase
	}{
		{"rule match restarts under a Never pod", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyNever), restartOn42, 42, true, corev1.PodRunning},
		{"rule mismatch, container Never", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyNever), restartOn42, 1, false, corev1.PodFailed},
		{"container Never in an Always pod", corev1.RestartPolicyAlways, policy(corev1.ContainerRestartPolicyNever), nil, 1, false, corev1.PodFailed},
		{"container Always in a Never pod", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyAlways), nil, 1, true, corev1.PodRunning},
		{"container OnFailure, exit 0", corev1.RestartPolicyAlways, policy(corev1.ContainerRestartPolicyOnFailure), nil, 0, false, corev1.PodSucceeded},
		{"NotIn rule", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyNever),
			[]corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 2)}, 1, true, corev1.PodRunning},
		{"pod Always without container policy", corev1.RestartPolicyAlways, nil, nil, 1, true, corev1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.pod, nil, []string{"main"})
			pod.Spec.Containers[0].RestartPolicy, pod.Spec.Containers[0].RestartPolicyRules = tc.policy, tc.rules
			h := newHarness(t, pod)
			h.exit("main", tc.code)
			h.step(statusSyncPeriod)
			if restarted := len(h.r.startOrder()) == 2; restarted != tc.restarted {
				t.Fatalf("restarted=%v, want %v (started %v)", restarted, tc.restarted, h.r.startOrder())
			}
			if h.status.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", h.status.Phase, tc.phase)
			}
			if tc.restarted && h.state("main").RestartCount != 1 {
				t.Fatalf("restartCount %d", h.state("main").RestartCount)
			}
		})
	}
}

// An init container's own policy decides whether its failure fails the pod
// (computeInitContainerActions with ShouldContainerBeRestarted).
func TestInitContainerRestartPolicy(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"init"}, []string{"app"})
	pod.Spec.InitContainers[0].RestartPolicy = policy(corev1.ContainerRestartPolicyOnFailure)
	h := newHarness(t, pod)
	h.exit("init", 3)
	if h.status.Phase != corev1.PodPending {
		t.Fatalf("phase %s, want Pending while the init container is retried", h.status.Phase)
	}
	h.step(DefaultBackoffInitial + statusSyncPeriod)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"init", "init"}) {
		t.Fatalf("started %v", got)
	}

	pod = testPod(corev1.RestartPolicyAlways, []string{"init"}, []string{"app"})
	pod.Spec.InitContainers[0].RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
	h = newHarness(t, pod)
	h.exit("init", 3)
	if h.status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed: the init container is not restarted", h.status.Phase)
	}
}

// A liveness kill restarts by the container's own policy, not the pod's.
func TestLivenessKillFollowsTheContainerPolicy(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	pod.Spec.Containers[0].RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
	pod.Spec.Containers[0].LivenessProbe = execProbe(1, 1)
	h := newHarnessWith(t, pod, func(r *fakeRunner) { r.execCode["app"] = 1 })
	waitFor(t, func() bool {
		h.step(time.Second)
		return h.state("app").State.Terminated != nil
	})
	h.step(statusSyncPeriod)
	if got := h.r.startOrder(); len(got) != 1 {
		t.Fatalf("started %v, want no restart", got)
	}
	if h.status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s", h.status.Phase)
	}
}

// The e2e scenarios of container_restart_policy.go's "RestartAllContainers":
// a container whose exit matches a RestartAllContainers rule has every
// container of the pod killed and removed, then the pod runs again from its
// first init container; each container that had run counts one restart.
func TestRestartAllContainers(t *testing.T) {
	on42 := []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	pod := testPod(corev1.RestartPolicyNever, []string{"init", "sidecar"}, []string{"source", "regular"})
	sidecar(pod, 1)
	pod.Spec.Containers[0].RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
	pod.Spec.Containers[0].RestartPolicyRules = on42
	h := newHarness(t, pod)
	if c := h.cond(corev1.AllContainersRestarting); c.Status != corev1.ConditionFalse || c.Reason != "" {
		t.Fatalf("AllContainersRestarting %+v before any exit", c)
	}
	h.exit("init", 0)
	h.step(sidecarSettle)
	h.r.handle(t, "regular").sigterm = false // killed after the 2 s minimum
	h.r.handle(t, "source").exit(42)
	h.settle()
	if c := h.cond(corev1.AllContainersRestarting); c.Status != corev1.ConditionTrue || c.Reason != reasonRestartAllStarted || c.Message != messageRestartAllStarted {
		t.Fatalf("AllContainersRestarting %+v during the reset", c)
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s during the reset", h.status.Phase)
	}
	if st := h.state("sidecar"); st.State.Waiting == nil || st.State.Waiting.Reason != ReasonRestartingAllContainers {
		t.Fatalf("sidecar %+v, want removed", st.State)
	}
	if got := h.r.startOrder(); len(got) != 4 {
		t.Fatalf("started %v while regular is still being killed", got)
	}
	h.step(minimumGracePeriod) // regular gets SIGKILL
	want := []string{"init", "sidecar", "regular", "source", "init"}
	if got := appsSorted(h.r.startOrder(), 2, 4); !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if got := h.r.sent(); !slices.Equal(got, []string{"sidecar:15", "regular:15", "regular:9"}) && !slices.Equal(got, []string{"regular:15", "sidecar:15", "regular:9"}) {
		t.Fatalf("signals %v", got)
	}
	if c := h.cond(corev1.AllContainersRestarting); c.Status != corev1.ConditionFalse {
		t.Fatalf("AllContainersRestarting %+v after the reset", c)
	}
	if c := h.cond(corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Fatalf("Initialized %+v while the init containers run again", c)
	}
	h.exit("init", 0)
	h.step(sidecarSettle)
	want = append(want, "sidecar", "regular", "source")
	if got := appsSorted(appsSorted(h.r.startOrder(), 2, 4), 6, 8); !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	for _, name := range []string{"init", "sidecar", "source", "regular"} {
		st := h.state(name)
		if st.RestartCount != 1 || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.Reason != ReasonRestartingAllContainers {
			t.Errorf("%s: restartCount %d, last %+v", name, st.RestartCount, st.LastTerminationState.Terminated)
		}
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", h.status.Phase)
	}
	// A second exit on the rule resets again; exit 1 ends the Never pod.
	h.exit("source", 1)
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s with regular still running", h.status.Phase)
	}
	if c := h.cond(corev1.AllContainersRestarting); c.Status != corev1.ConditionFalse {
		t.Fatalf("AllContainersRestarting %+v after exit 1", c)
	}
}

// An init container's exit on the rule re-runs the init containers; the app
// container never ran and keeps no restart.
func TestRestartAllContainersFromAnInitContainer(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"sidecar", "init", "source"}, []string{"regular"})
	sidecar(pod, 0)
	pod.Spec.InitContainers[2].RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
	pod.Spec.InitContainers[2].RestartPolicyRules = []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	h := newHarness(t, pod)
	h.step(sidecarSettle)
	h.exit("init", 0)
	h.exit("source", 42)
	if h.status.Phase == corev1.PodFailed {
		t.Fatal("the pod failed on an init container's exit that restarts all containers")
	}
	h.step(sidecarSettle)
	h.exit("init", 0)
	h.exit("source", 0)
	want := []string{"sidecar", "init", "source", "sidecar", "init", "source", "regular"}
	if got := h.r.startOrder(); !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	for name, rc := range map[string]int32{"sidecar": 1, "init": 1, "source": 1, "regular": 0} {
		if got := h.state(name).RestartCount; got != rc {
			t.Errorf("%s restartCount %d, want %d", name, got, rc)
		}
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", h.status.Phase)
	}
}

// Containers killed by a reset are not judged by their own rules: two
// containers with the rule restart once each, with no loop.
func TestRestartAllContainersKillsDoNotLoop(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, nil, []string{"source", "regular"})
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
		pod.Spec.Containers[i].RestartPolicyRules = []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestartAllContainers, corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}
	}
	h := newHarness(t, pod)
	h.exit("source", 42)
	h.settle()
	if got := appsSorted(h.r.startOrder(), 0, 4); !slices.Equal(got, []string{"regular", "regular", "source", "source"}) {
		t.Fatalf("started %v, want each started twice", got)
	}
	for _, name := range []string{"source", "regular"} {
		if st := h.state(name); st.RestartCount != 1 || st.State.Running == nil {
			t.Errorf("%s: %+v", name, st)
		}
	}
}

// appsSorted sorts started[from:to], app containers that start together.
func appsSorted(started []string, from, to int) []string {
	out := slices.Clone(started)
	if to <= len(out) {
		slices.Sort(out[from:to])
	}
	return out
}
