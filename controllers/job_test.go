package controllers

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFormatIndexes(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1}, "0,1"}, {[]int{0, 1, 2}, "0-2"}, {[]int{7, 1, 3, 4, 5}, "1,3-5,7"}} {
		set := map[int]bool{}
		for _, i := range tt.in {
			set[i] = true
		}
		if got := FormatIndexes(set); got != tt.want {
			t.Errorf("FormatIndexes(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func finished(phase corev1.PodPhase, at time.Time, code int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}}}},
	}
}

// The backoff doubles from 10 s with each failure since the last success,
// capped at 6 minutes, counted from the last failure.
func TestJobBackoffRemaining(t *testing.T) {
	now := time.Now()
	fail := func(ago time.Duration) *corev1.Pod { return finished(corev1.PodFailed, now.Add(-ago), 1) }
	ok := func(ago time.Duration) *corev1.Pod { return finished(corev1.PodSucceeded, now.Add(-ago), 0) }
	for _, tt := range []struct {
		name      string
		succeeded []*corev1.Pod
		failed    []*corev1.Pod
		want      time.Duration
	}{
		{"none", nil, nil, 0},
		{"one failure 4 s ago", nil, []*corev1.Pod{fail(4 * time.Second)}, 6 * time.Second},
		{"two failures", nil, []*corev1.Pod{fail(30 * time.Second), fail(5 * time.Second)}, 15 * time.Second},
		{"a success resets", []*corev1.Pod{ok(10 * time.Second)}, []*corev1.Pod{fail(30 * time.Second), fail(5 * time.Second)}, 5 * time.Second},
		{"over", nil, []*corev1.Pod{fail(11 * time.Second)}, 0},
		{"capped", nil, []*corev1.Pod{fail(50 * time.Minute), fail(40 * time.Minute), fail(30 * time.Minute), fail(20 * time.Minute), fail(10 * time.Minute), fail(9 * time.Minute), fail(8 * time.Minute), fail(0)}, 6 * time.Minute},
	} {
		got := JobBackoffRemaining(jobPods{succeeded: tt.succeeded, failed: tt.failed}, now)
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestPastBackoffLimitOnFailure(t *testing.T) {
	job := func(limit int32, rp corev1.RestartPolicy) *batchv1.Job {
		j := &batchv1.Job{}
		j.Spec.BackoffLimit = &limit
		j.Spec.Template.Spec.RestartPolicy = rp
		return j
	}
	running := func(restarts int32) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: restarts}}}}
	}
	if PastBackoffLimitOnFailure(job(2, corev1.RestartPolicyNever), []*corev1.Pod{running(5)}) {
		t.Error("Never: restarts do not count")
	}
	if PastBackoffLimitOnFailure(job(2, corev1.RestartPolicyOnFailure), []*corev1.Pod{running(1)}) {
		t.Error("OnFailure, 1 restart < 2")
	}
	if !PastBackoffLimitOnFailure(job(2, corev1.RestartPolicyOnFailure), []*corev1.Pod{running(1), running(1)}) {
		t.Error("OnFailure: restarts of all running pods add up to the limit")
	}
	if !PastBackoffLimitOnFailure(job(0, corev1.RestartPolicyOnFailure), []*corev1.Pod{running(1)}) {
		t.Error("backoffLimit 0: one restart is past it")
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	main := "main"
	pfp := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: &main, Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	now := time.Now()
	for _, tt := range []struct {
		code   int32
		action batchv1.PodFailurePolicyAction
		match  bool
	}{{3, batchv1.PodFailurePolicyActionIgnore, true}, {42, batchv1.PodFailurePolicyActionFailJob, true}, {7, batchv1.PodFailurePolicyActionCount, true}, {1, "", false}} {
		a, msg, ok := MatchPodFailurePolicy(pfp, finished(corev1.PodFailed, now, tt.code))
		if a != tt.action || ok != tt.match {
			t.Errorf("exit %d: %q %v, want %q %v", tt.code, a, ok, tt.action, tt.match)
		}
		if tt.code == 42 && msg != "Container main for pod default/p failed with exit code 42 matching FailJob rule at index 1" {
			t.Errorf("message %q", msg)
		}
	}
	p := finished(corev1.PodFailed, now, 1)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	if a, _, ok := MatchPodFailurePolicy(pfp, p); !ok || a != batchv1.PodFailurePolicyActionIgnore {
		t.Errorf("pod condition: %q %v", a, ok)
	}
}

func TestJobPodTemplateNames(t *testing.T) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u1"}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c"}}
	tmpl, prefix := JobPodTemplate(j, -1)
	if prefix != "pi-" || tmpl.Labels["controller-uid"] != "u1" || tmpl.Labels[batchv1.ControllerUidLabel] != "u1" || len(tmpl.Spec.Containers[0].Env) != 0 {
		t.Errorf("NonIndexed: %q %v", prefix, tmpl.Labels)
	}
	tmpl, prefix = JobPodTemplate(j, 2)
	if prefix != "pi-2-" || tmpl.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || tmpl.Labels[batchv1.JobCompletionIndexAnnotation] != "2" ||
		tmpl.Spec.Hostname != "pi-2" || tmpl.Spec.Containers[0].Env[0].Name != "JOB_COMPLETION_INDEX" ||
		!strings.Contains(tmpl.Spec.Containers[0].Env[0].ValueFrom.FieldRef.FieldPath, batchv1.JobCompletionIndexAnnotation) {
		t.Errorf("Indexed: %q %+v", prefix, tmpl)
	}
	if len(j.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("the Job's template was changed")
	}
}

func TestStatefulSetNames(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	set.Spec.ServiceName = "nginx"
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-x": -1, "web-01": -1, "webby-1": -1, "web--1": -1} {
		if got := statefulSetOrdinal("web", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); got != want {
			t.Errorf("ordinal of %s = %d, want %d", name, got, want)
		}
	}
	tmpl := StatefulSetPodTemplate(set, 3, "web-abc")
	if tmpl.Spec.Hostname != "web-3" || tmpl.Spec.Subdomain != "nginx" || tmpl.Labels[appsv1.StatefulSetPodNameLabel] != "web-3" ||
		tmpl.Labels[appsv1.PodIndexLabel] != "3" || tmpl.Labels[appsv1.StatefulSetRevisionLabel] != "web-abc" {
		t.Errorf("template %+v", tmpl)
	}
	if v := tmpl.Spec.Volumes; len(v) != 1 || v[0].Name != "www" || v[0].PersistentVolumeClaim.ClaimName != "www-web-3" {
		t.Errorf("volumes %+v", v)
	}
}
