package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCrashed(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	term := func(code int32, reason string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}
	}
	pod := func(inits, apps []corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
				Containers: []corev1.Container{{Name: "ruled", RestartPolicy: &always, RestartPolicyRules: []corev1.ContainerRestartRule{{
					Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}},
			Status: corev1.PodStatus{InitContainerStatuses: inits, ContainerStatuses: apps},
		}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"nothing ran yet", pod(nil, nil), ""},
		{"init succeeded", pod([]corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: term(0, "Completed")}}}, nil), ""},
		{"init failed", pod([]corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: term(2, "Error")}}}, nil), "init"},
		{"init in backoff after a failure", pod([]corev1.ContainerStatus{{Name: "init", RestartCount: 1, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: corev1.ContainerState{Terminated: term(1, "Error")}}}, nil), "init"},
		{"sidecar exited 0", pod([]corev1.ContainerStatus{{Name: "side", State: corev1.ContainerState{Terminated: term(0, "Completed")}}}, nil), "side"},
		{"app exited 0", pod(nil, []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: term(0, "Completed")}}}), "app"},
		{"app running again after a crash", pod(nil, []corev1.ContainerStatus{{Name: "app", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: corev1.ContainerState{Terminated: term(137, "Error")}}}), "app"},
		{"an exit a restart rule answers is not a crash", pod(nil, []corev1.ContainerStatus{{Name: "ruled", State: corev1.ContainerState{Terminated: term(42, "Error")}}}), ""},
		{"the same container's other exit is", pod(nil, []corev1.ContainerStatus{{Name: "ruled", State: corev1.ContainerState{Terminated: term(1, "Error")}}}), "ruled"},
		{"a container a reset removed is not a crash", pod(nil, []corev1.ContainerStatus{{Name: "app", RestartCount: 1, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RestartingAllContainers"}}, LastTerminationState: corev1.ContainerState{Terminated: term(137, "RestartingAllContainers")}}}), ""},
		{"lost supervisor is not a crash", pod(nil, []corev1.ContainerStatus{{Name: "app", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: corev1.ContainerState{Terminated: term(137, reasonContainerStatusUnknown)}}}), ""},
	} {
		c := crashed(tc.pod)
		got := ""
		if c != nil {
			got = c.container
		}
		if got != tc.want {
			t.Errorf("%s: crashed = %q, want %q", tc.name, got, tc.want)
		}
	}
}
