package integration

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// job reads a Job as get -o json prints it.
func (e *env) job(name string) *batchv1.Job {
	e.t.Helper()
	r := e.must("get", "job", name, "-o", "json")
	var j batchv1.Job
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		e.t.Fatalf("decoding job %s: %v\n%s", name, err, r.stdout)
	}
	return &j
}

// podsOf lists the pods labelled job-name=name, by creation.
func (e *env) jobPods(name string) []corev1.Pod {
	e.t.Helper()
	r := e.must("get", "pods", "-l", "job-name="+name, "-o", "json")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		e.t.Fatalf("decoding pods: %v\n%s", err, r.stdout)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
	return list.Items
}

// deleteAtEnd deletes a workload object before the env's cleanup, which
// deletes pods only.
func (e *env) deleteAtEnd(kindName string) {
	e.t.Cleanup(func() { e.podrun("delete", kindName, "--ignore-not-found", "--grace-period", "1") })
}

func jobCond(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// A pod that exits 1 with backoffLimit 2: three pods, each named
// <job>-<5 chars>, the replacements after the controller's backoff (10 s,
// then 20 s), then Failed BackoffLimitExceeded; apply --wait says so (exit 1).
func TestJobBackoffLimit(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/fails")
	r := e.podrun("apply", e.manifest(`
apiVersion: batch/v1
kind: Job
metadata: {name: fails}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.28, command: ['sh', '-c', 'exit 1']}
`), "--wait", "--timeout", "90s")
	if r.code != 1 || !strings.Contains(r.stdout, "job.batch/fails created") || !strings.Contains(r.stderr, "failed: BackoffLimitExceeded") {
		t.Fatalf("apply --wait: %s", r)
	}
	j := e.job("fails")
	c := jobCond(j, batchv1.JobFailed)
	if c == nil || c.Reason != "BackoffLimitExceeded" || jobCond(j, batchv1.JobFailureTarget) == nil {
		t.Fatalf("conditions %+v", j.Status.Conditions)
	}
	if j.Status.Failed != 3 || j.Status.Active != 0 || j.Status.Succeeded != 0 {
		t.Fatalf("status %+v", j.Status)
	}
	pods := e.jobPods("fails")
	if len(pods) != 3 {
		t.Fatalf("%d pods, want backoffLimit+1 = 3", len(pods))
	}
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "fails-") || len(p.Name) != len("fails-")+5 || p.Status.Phase != corev1.PodFailed ||
			p.Labels["controller-uid"] != string(j.UID) || p.Labels[batchv1.ControllerUidLabel] != string(j.UID) || p.Labels[batchv1.JobNameLabel] != "fails" ||
			len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Job" || p.OwnerReferences[0].UID != j.UID {
			t.Errorf("pod %s phase %s labels %v owners %+v", p.Name, p.Status.Phase, p.Labels, p.OwnerReferences)
		}
	}
	// The backoff: 10 s before the second pod, 20 s before the third.
	if d := pods[1].CreationTimestamp.Sub(pods[0].CreationTimestamp.Time); d < 9*time.Second {
		t.Errorf("second pod %s after the first: want the 10 s backoff", d)
	}
	if d := pods[2].CreationTimestamp.Sub(pods[1].CreationTimestamp.Time); d < 19*time.Second {
		t.Errorf("third pod %s after the second: want the 20 s backoff", d)
	}
	get := e.must("get", "job", "fails").stdout
	if f := strings.Fields(strings.Split(get, "\n")[1]); strings.Join(strings.Fields(strings.Split(get, "\n")[0]), " ") != "NAME STATUS COMPLETIONS DURATION AGE" || f[1] != "Failed" || f[2] != "0/1" {
		t.Errorf("get job:\n%s", get)
	}
	if r := e.podrun("wait", "--for=condition=complete", "job/fails", "--timeout", "5s"); r.code != 1 || !strings.Contains(r.stderr, "BackoffLimitExceeded") {
		t.Errorf("wait --for=condition=complete on a failed Job: %s", r)
	}
	e.must("wait", "--for=condition=failed", "job/fails", "--timeout", "5s")
	e.must("delete", "job", "fails", "--grace-period", "1")
	if pods := e.jobPods("fails"); len(pods) != 0 {
		t.Errorf("%d pods left after the Job's delete", len(pods))
	}
}

// completions 3, parallelism 2: at most two pods at once, three successes,
// Complete (after SuccessCriteriaMet); wait --for=condition=complete
// returns 0.
func TestJobCompletionsParallelism(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/work")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: work}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.28, command: ['sh', '-c', 'sleep 1']}
`)
	e.must("wait", "--for=condition=complete", "job/work", "--timeout", "60s")
	j := e.job("work")
	if j.Status.Succeeded != 3 || j.Status.Failed != 0 || j.Status.CompletionTime == nil || jobCond(j, batchv1.JobSuccessCriteriaMet) == nil {
		t.Fatalf("status %+v", j.Status)
	}
	pods := e.jobPods("work")
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	// Never more than two at once: the third starts after one of the first two ended.
	end := func(p corev1.Pod) time.Time { return p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time }
	first := min(end(pods[0]).Unix(), end(pods[1]).Unix())
	if pods[2].CreationTimestamp.Unix() < first {
		t.Errorf("third pod created at %s, before either of the first two finished (%d)", pods[2].CreationTimestamp, first)
	}
	if out := e.must("get", "job", "work").stdout; !strings.Contains(out, "Complete") || !strings.Contains(out, "3/3") {
		t.Errorf("get job:\n%s", out)
	}
}

// An Indexed Job: pods <job>-<index>-<5 chars>, each with its index in
// JOB_COMPLETION_INDEX, the annotation and label, hostname <job>-<index>.
func TestJobIndexed(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/idx")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.28, command: ['sh', '-c', 'echo "$JOB_COMPLETION_INDEX $(hostname)"']}
`, "--wait", "--timeout", "60s")
	j := e.job("idx")
	if j.Status.CompletedIndexes != "0-2" || jobCond(j, batchv1.JobComplete) == nil {
		t.Fatalf("status %+v", j.Status)
	}
	seen := map[string]bool{}
	for _, p := range e.jobPods("idx") {
		i := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if !strings.HasPrefix(p.Name, "idx-"+i+"-") || p.Labels[batchv1.JobCompletionIndexAnnotation] != i {
			t.Errorf("pod %s index %q labels %v", p.Name, i, p.Labels)
		}
		out := strings.TrimSpace(e.must("logs", p.Name).stdout)
		if out != i+" idx-"+i {
			t.Errorf("pod %s printed %q, want %q", p.Name, out, i+" idx-"+i)
		}
		seen[i] = true
	}
	if len(seen) != 3 || !seen["0"] || !seen["1"] || !seen["2"] {
		t.Errorf("indexes %v", seen)
	}
}

// podFailurePolicy: exit code 42 matches a FailJob rule, the Job fails at
// once (reason PodFailurePolicy) although backoffLimit would allow retries.
func TestJobPodFailurePolicyFailJob(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/pfp")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: pfp}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: Ignore
      onExitCodes: {operator: In, values: [3]}
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox:1.28, command: ['sh', '-c', 'exit 42']}
`)
	r := e.podrun("wait", "--for=condition=complete", "job/pfp", "--timeout", "60s")
	if r.code != 1 || !strings.Contains(r.stderr, "failed: PodFailurePolicy: Container main for pod default/pfp-") ||
		!strings.Contains(r.stderr, "failed with exit code 42 matching FailJob rule at index 1") {
		t.Fatalf("wait: %s", r)
	}
	j := e.job("pfp")
	if c := jobCond(j, batchv1.JobFailed); c == nil || c.Reason != "PodFailurePolicy" || j.Status.Failed != 1 {
		t.Fatalf("status %+v", j.Status)
	}
	if pods := e.jobPods("pfp"); len(pods) != 1 {
		t.Errorf("%d pods: FailJob makes no replacement", len(pods))
	}
}

// job.go "containers restarted by container restart policy should not
// trigger PodFailurePolicy" (NodeConformance, ContainerRestartRules): the
// container's own restartPolicy OnFailure restarts it in its pod after its
// exit 1, which a FailJob rule names; the pod does not fail, so the rule
// does not apply and the Job completes.
func TestJobContainerRestartPolicyAndPodFailurePolicy(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/fail-once")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: fail-once}
spec:
  backoffLimit: 1
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: c, operator: In, values: [1]}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.28
        restartPolicy: OnFailure
        command: ['sh', '-c', 'if [ -r /data/foo ]; then exit 0; else touch /data/foo; exit 1; fi']
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
`)
	e.must("wait", "--for=condition=complete", "job/fail-once", "--timeout", "90s")
	j := e.job("fail-once")
	if c := jobCond(j, batchv1.JobComplete); c == nil || j.Status.Succeeded != 1 || j.Status.Failed != 0 || j.Status.Active != 0 {
		t.Fatalf("status %+v", j.Status)
	}
	pods := e.jobPods("fail-once")
	if len(pods) != 1 || pods[0].Status.Phase != corev1.PodSucceeded || len(pods[0].Status.ContainerStatuses) != 1 || pods[0].Status.ContainerStatuses[0].RestartCount != 1 {
		t.Fatalf("pods %+v, want one that succeeded after one restart of its container", pods)
	}
}

// activeDeadlineSeconds fails the Job (DeadlineExceeded) and deletes its
// running pod; ttlSecondsAfterFinished then deletes the Job.
func TestJobDeadlineAndTTL(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/slow")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  activeDeadlineSeconds: 2
  ttlSecondsAfterFinished: 3
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: busybox:1.28, command: ['sleep', '600']}
`)
	r := e.podrun("wait", "--for=condition=complete", "job/slow", "--timeout", "30s")
	if r.code != 1 || !strings.Contains(r.stderr, "DeadlineExceeded") {
		t.Fatalf("wait: %s", r)
	}
	if pods := e.jobPods("slow"); len(pods) != 0 {
		t.Errorf("%d pods left: the deadline deletes the running pods", len(pods))
	}
	e.must("wait", "--for=delete", "job/slow", "--timeout", "30s")
	if r := e.podrun("get", "job", "slow"); r.code == 0 {
		t.Errorf("the Job is still there after its TTL: %s", r)
	}
}

// A CronJob is stored and printed as kubectl prints it; create job --from
// runs its template once.
func TestCronJobCreateJobFrom(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("cronjob/nightly")
	e.apply(`
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: c, image: busybox:1.28, command: ['echo', 'ran']}
`)
	out := e.must("get", "cronjob", "nightly").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "LAST SCHEDULE") ||
		strings.Join(strings.Fields(lines[1])[:10], " ") != "nightly 0 3 * * * <none> true 0 <none>" {
		t.Fatalf("get cronjob:\n%s", out)
	}
	r := e.must("create", "job", "manual-1", "--from=cronjob/nightly")
	if r.stdout != "job.batch/manual-1 created\n" {
		t.Errorf("create job: %s", r)
	}
	e.must("wait", "--for=condition=complete", "job/manual-1", "--timeout", "60s")
	j := e.job("manual-1")
	if j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Kind != "CronJob" {
		t.Errorf("job meta %+v", j.ObjectMeta)
	}
	pods := e.jobPods("manual-1")
	if len(pods) != 1 || e.must("logs", pods[0].Name).stdout != "ran\n" {
		t.Errorf("pods %d", len(pods))
	}
	// Deleting the CronJob deletes the Job it owns, and its pod.
	e.must("delete", "cronjob", "nightly", "--grace-period", "1")
	if r := e.podrun("get", "job", "manual-1"); r.code == 0 {
		t.Errorf("the Job outlived its CronJob: %s", r)
	}
}
