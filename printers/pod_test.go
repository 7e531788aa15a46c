package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Minute))}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(now.Add(-30 * time.Second))}}
}

func cs(name string, st corev1.ContainerState, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: st, Ready: ready, RestartCount: restarts}
}

func pod(inits, apps []string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))}}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
	}
	p.Status.Phase = phase
	return p
}

func cond(t corev1.PodConditionType, ok bool) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s}
}

func TestPodRowStatusStrings(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name                    string
		pod                     func() *corev1.Pod
		ready, status, restarts string
	}{
		{"first init running", func() *corev1.Pod {
			p := pod([]string{"a", "b"}, []string{"app"}, corev1.PodPending)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs("a", running(), false, 0), cs("b", waiting("PodInitializing"), false, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			return p
		}, "0/1", "Init:0/2", "0"},
		{"second init running", func() *corev1.Pod {
			p := pod([]string{"a", "b"}, []string{"app"}, corev1.PodPending)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(0, "Completed"), true, 0), cs("b", running(), false, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			return p
		}, "0/1", "Init:1/2", "0"},
		{"init failed", func() *corev1.Pod {
			p := pod([]string{"a"}, []string{"app"}, corev1.PodPending)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(1, "Error"), false, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			return p
		}, "0/1", "Init:Error", "0"},
		{"init crash loop", func() *corev1.Pod {
			p := pod([]string{"a"}, []string{"app"}, corev1.PodPending)
			st := cs("a", waiting("CrashLoopBackOff"), false, 3)
			st.LastTerminationState = terminated(1, "Error")
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{st}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			return p
		}, "0/1", "Init:CrashLoopBackOff", "3 (30s ago)"},
		{"inits done, app creating", func() *corev1.Pod {
			p := pod([]string{"a"}, []string{"app"}, corev1.PodPending)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(0, "Completed"), true, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodInitialized, true)}
			return p
		}, "0/1", "PodInitializing", "0"},
		{"running", func() *corev1.Pod {
			p := pod([]string{"a"}, []string{"app"}, corev1.PodRunning)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(0, "Completed"), true, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", running(), true, 0)}
			p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodInitialized, true), cond(corev1.PodReady, true)}
			return p
		}, "1/1", "Running", "0"},
		{"one completed one running ready", func() *corev1.Pod {
			p := pod(nil, []string{"a", "b"}, corev1.PodRunning)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", running(), true, 0), cs("b", terminated(0, "Completed"), false, 0)}
			p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodReady, false)}
			return p
		}, "1/2", "NotReady", "0"},
		{"completed", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodSucceeded)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(0, "Completed"), false, 0)}
			return p
		}, "0/1", "Completed", "0"},
		{"error", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodFailed)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(2, "Error"), false, 0)}
			return p
		}, "0/1", "Error", "0"},
		{"oom killed", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodRunning)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(137, "OOMKilled"), false, 0)}
			return p
		}, "0/1", "OOMKilled", "0"},
		{"signal without reason", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodFailed)
			st := terminated(137, "")
			st.Terminated.Signal = 9
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", st, false, 0)}
			return p
		}, "0/1", "Signal:9", "0"},
		{"crash loop", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodRunning)
			st := cs("a", waiting("CrashLoopBackOff"), false, 4)
			st.LastTerminationState = terminated(1, "Error")
			p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
			return p
		}, "0/1", "CrashLoopBackOff", "4 (30s ago)"},
		{"deadline exceeded while containers stop", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodFailed)
			p.Status.Reason = "DeadlineExceeded"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", running(), false, 0)}
			return p
		}, "0/1", "DeadlineExceeded", "0"},
		{"exit code without reason", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodFailed)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", terminated(3, ""), false, 0)}
			return p
		}, "0/1", "ExitCode:3", "0"},
		{"terminating", func() *corev1.Pod {
			p := pod(nil, []string{"a"}, corev1.PodRunning)
			ts := metav1.NewTime(now)
			p.DeletionTimestamp = &ts
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("a", running(), true, 0)}
			return p
		}, "1/1", "Terminating", "0"},
		{"sidecar started counts as a container", func() *corev1.Pod {
			p := pod([]string{"side", "init"}, []string{"app"}, corev1.PodPending)
			p.Spec.InitContainers[0].RestartPolicy = &always
			side := cs("side", running(), true, 0)
			started := true
			side.Started = &started
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{side, cs("init", running(), false, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs("app", waiting("PodInitializing"), false, 0)}
			return p
		}, "1/2", "Init:1/2", "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := PodRow(tc.pod(), now)
			if r.Ready != tc.ready || r.Status != tc.status || r.Restarts != tc.restarts {
				t.Fatalf("got READY %s STATUS %s RESTARTS %s, want %s %s %s", r.Ready, r.Status, r.Restarts, tc.ready, tc.status, tc.restarts)
			}
		})
	}
}
