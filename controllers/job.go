package controllers

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
)

var jobKind = &Kind{Store: store.JobKind, Sync: syncJob}

// The Job controller's pod failure backoff (pkg/controller/job:
// DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff): a failed pod's
// replacement waits 10 s, doubling with each failure since the last
// success, at most 6 minutes.
const (
	jobBackoffBase = 10 * time.Second
	jobBackoffMax  = 6 * time.Minute
)

// jobPods is what the Job controller reads of a Job's pods.
type jobPods struct {
	active, succeeded, failed []*corev1.Pod
	terminating               int
	// ignored are failed pods a podFailurePolicy Ignore rule matched: not
	// counted toward backoffLimit.
	ignored map[*corev1.Pod]bool
}

// classifyJobPods sorts a Job's pods by phase; those being deleted are
// terminating, whatever their phase.
func classifyJobPods(all []*corev1.Pod, deleting func(*corev1.Pod) bool) jobPods {
	var jp jobPods
	for _, p := range all {
		switch {
		case p.DeletionTimestamp != nil || deleting(p):
			// Being deleted (the controller's own deletions: a pod it
			// stops is not counted as finished).
			jp.terminating++
		case p.Status.Phase == corev1.PodSucceeded:
			jp.succeeded = append(jp.succeeded, p)
		case p.Status.Phase == corev1.PodFailed:
			jp.failed = append(jp.failed, p)
		default:
			jp.active = append(jp.active, p)
		}
	}
	return jp
}

// syncJob is the Job controller's syncJob (pkg/controller/job/job_controller.go)
// for one host: it counts the Job's finished pods, decides whether the Job
// has failed (podFailurePolicy FailJob, backoffLimit, activeDeadlineSeconds)
// or succeeded (completions), and otherwise makes pods up to parallelism,
// after the failure backoff. A finished Job is deleted after
// ttlSecondsAfterFinished, as the TTL-after-finished controller does.
// Pods are not deleted as they finish (podrun has no pod garbage collector
// threshold to honour); they go with the Job, so the counts read from them.
func syncJob(c *Context, obj store.Object) error {
	job := obj.(*batchv1.Job)
	if _, done := jobFinished(job); done {
		return c.jobTTL(job)
	}
	// getPodsForJob: orphans the Job's selector (the one the API server
	// generates: controller-uid) matches are adopted, pods whose labels no
	// longer match released.
	sel := job.Spec.Selector
	if sel == nil {
		sel = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(job.UID)}}
	}
	if err := c.ClaimPods(store.JobKind, job, sel); err != nil {
		return err
	}
	live := map[*corev1.Pod]bool{}
	for _, p := range c.OwnedPods(job.UID) {
		live[p] = true
	}
	all := c.AllOwnedPods(job.UID)
	jp := classifyJobPods(all, func(p *corev1.Pod) bool { return !live[p] })
	// Pods deleted before they finished count as failed (see jobTracking).
	tracking, deletedPods := c.deletedJobPods(job.UID, all)
	st := job.Status.DeepCopy()
	now := metav1.NewTime(c.Now)
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if st.StartTime == nil && !suspended {
		st.StartTime = &now
	}
	completions := job.Spec.Completions
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion

	// Succeeded: pods, or distinct indexes for an Indexed Job.
	var succeeded int32
	var doneIdx map[int]bool
	if indexed {
		doneIdx = map[int]bool{}
		for _, p := range jp.succeeded {
			if i, ok := CompletionIndex(p); ok && i < int(*completions) {
				doneIdx[i] = true
			}
		}
		succeeded = int32(len(doneIdx))
		st.CompletedIndexes = FormatIndexes(doneIdx)
	} else {
		succeeded = int32(len(jp.succeeded))
	}
	st.Succeeded = max(st.Succeeded, succeeded)

	// Failed: pods, less those a podFailurePolicy rule ignores; the first
	// FailJob match fails the Job.
	var failTarget *batchv1.JobCondition
	jp.ignored = map[*corev1.Pod]bool{}
	// backoffLimitPerIndex: each index's failures (the pods' own, kept until
	// the Job goes, in place of the index-failure-count annotation's
	// carry-over), and the indexes failed past the limit or by a FailIndex
	// rule (calculateFailedIndexes).
	perIndex := indexed && job.Spec.BackoffLimitPerIndex != nil
	indexFailures := map[int][]*corev1.Pod{}
	failedIdx := map[int]bool{}
	var failed int32
	sort.SliceStable(jp.failed, func(i, j int) bool { return finishedAt(jp.failed[i]).Before(finishedAt(jp.failed[j])) })
	for _, p := range jp.failed {
		if deletedPods[p.UID] {
			continue // counted below
		}
		action, msg, matched := MatchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
		if matched && action == batchv1.PodFailurePolicyActionIgnore {
			jp.ignored[p] = true
			continue
		}
		failed++
		if i, ok := CompletionIndex(p); perIndex && ok && i < int(*completions) && !doneIdx[i] {
			indexFailures[i] = append(indexFailures[i], p)
			if (matched && action == batchv1.PodFailurePolicyActionFailIndex) || int32(len(indexFailures[i])) > *job.Spec.BackoffLimitPerIndex {
				failedIdx[i] = true
			}
		}
		if matched && action == batchv1.PodFailurePolicyActionFailJob && failTarget == nil {
			failTarget = &batchv1.JobCondition{Reason: batchv1.JobReasonPodFailurePolicy, Message: msg}
		}
	}
	failed += int32(len(deletedPods))
	st.Failed = max(st.Failed, failed)
	if perIndex {
		f := FormatIndexes(failedIdx)
		st.FailedIndexes = &f
	}

	var finish *batchv1.JobCondition // FailureTarget or SuccessCriteriaMet
	switch {
	case hasJobCondition(st, batchv1.JobFailureTarget):
		finish = &batchv1.JobCondition{Type: batchv1.JobFailureTarget}
	case hasJobCondition(st, batchv1.JobSuccessCriteriaMet):
		finish = &batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet}
	case failTarget != nil:
		failTarget.Type = batchv1.JobFailureTarget
		finish = failTarget
	case st.Failed > *job.Spec.BackoffLimit || PastBackoffLimitOnFailure(job, jp.active):
		finish = &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"}
	case !suspended && job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil &&
		!c.Now.Before(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second)):
		finish = &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline"}
	case perIndex && job.Spec.MaxFailedIndexes != nil && len(failedIdx) > int(*job.Spec.MaxFailedIndexes):
		finish = &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Reason: batchv1.JobReasonMaxFailedIndexesExceeded, Message: "Job has exceeded the specified maximal number of failed indexes"}
	case perIndex && len(failedIdx) > 0 && len(failedIdx)+len(doneIdx) >= int(*completions):
		finish = &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Reason: batchv1.JobReasonFailedIndexes, Message: "Job has failed indexes"}
	case indexed && successPolicyMet(job, doneIdx) != "":
		finish = &batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Reason: batchv1.JobReasonSuccessPolicy, Message: successPolicyMet(job, doneIdx)}
	case completions != nil && succeeded >= *completions,
		completions == nil && succeeded > 0 && len(jp.active) == 0:
		finish = &batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Reason: batchv1.JobReasonCompletionsReached, Message: "Reached expected number of succeeded pods"}
	}
	if !suspended && job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil && finish == nil {
		c.RequeueAfter(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second).Sub(c.Now) + 10*time.Millisecond)
	}

	active := jp.active
	var err error
	switch {
	case finish != nil:
		// The Job has failed or succeeded: its running pods are deleted,
		// then (none left terminating) it is Failed or Complete, with the
		// reason of the interim condition (Kubernetes >= 1.31).
		if finish.Reason != "" {
			setJobCondition(st, finish.Type, finish.Reason, finish.Message, now)
		}
		for _, p := range active {
			c.DeletePod(p, job.UID, false)
			jp.terminating++
		}
		active = nil
		if jp.terminating == 0 {
			interim := jobCondition(st, finish.Type)
			if finish.Type == batchv1.JobFailureTarget {
				setJobCondition(st, batchv1.JobFailed, interim.Reason, interim.Message, now)
			} else {
				setJobCondition(st, batchv1.JobComplete, interim.Reason, interim.Message, now)
				st.CompletionTime = &now
			}
		}
	case suspended:
		for _, p := range active {
			c.DeletePod(p, job.UID, false)
			jp.terminating++
		}
		active = nil
		setJobCondition(st, batchv1.JobSuspended, "JobSuspended", "Job suspended", now)
		st.StartTime = nil
	default:
		if cond := jobCondition(st, batchv1.JobSuspended); cond != nil && cond.Status == corev1.ConditionTrue {
			cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime, cond.LastProbeTime = corev1.ConditionFalse, "JobResumed", "Job resumed", now, now
			st.StartTime = &now
		}
		var made []*corev1.Pod
		made, err = c.manageJob(job, jp, succeeded, doneIdx, parallelism, indexed, failedIdx, indexFailures)
		active = append(active, made...)
	}
	st.Active = int32(len(active))
	var ready int32
	for _, p := range active {
		if IsPodReady(p) {
			ready++
		}
	}
	st.Ready = &ready
	term := int32(jp.terminating)
	st.Terminating = &term
	if terr := c.saveJobTracking(job.UID, tracking, active, deletedPods); terr != nil && err == nil {
		err = terr
	}
	if uerr := c.UpdateStatus(store.JobKind, job, func(cur store.Object) bool {
		j := cur.(*batchv1.Job)
		if reflect.DeepEqual(j.Status, *st) {
			return false
		}
		j.Status = *st
		return true
	}); uerr != nil && err == nil {
		err = uerr
	}
	return err
}

// manageJob is the Job controller's manageJob: pods made up to parallelism
// (and the completions left), after the failure backoff; extra ones deleted.
func (c *Context) manageJob(job *batchv1.Job, jp jobPods, succeeded int32, doneIdx map[int]bool, parallelism int32, indexed bool, failedIdx map[int]bool, indexFailures map[int][]*corev1.Pod) ([]*corev1.Pod, error) {
	perIndex := indexed && job.Spec.BackoffLimitPerIndex != nil
	active := int32(len(jp.active))
	busy := active
	if p := job.Spec.PodReplacementPolicy; p != nil && *p == batchv1.Failed {
		busy += int32(jp.terminating) // replacements wait for the terminating pods
	}
	want := parallelism
	switch c := job.Spec.Completions; {
	case c != nil:
		want = min(want, *c-succeeded-int32(len(failedIdx)))
	case succeeded > 0:
		want = active // a work queue: once one pod succeeded, no new pods
	}
	want = max(want, 0)
	if active > want {
		for _, p := range PodsToDelete(jp.active, int(active-want)) {
			c.DeletePod(p, job.UID, false)
		}
		return nil, nil
	}
	if busy >= want {
		return nil, nil
	}
	if wait := JobBackoffRemaining(jp, c.Now); wait > 0 && !perIndex {
		c.RequeueAfter(wait)
		return nil, nil
	}
	var indexes []int
	if indexed {
		taken := map[int]bool{}
		for _, p := range jp.active {
			if i, ok := CompletionIndex(p); ok {
				taken[i] = true
			}
		}
		for i := 0; i < int(*job.Spec.Completions) && len(indexes) < int(want-busy); i++ {
			if doneIdx[i] || taken[i] || failedIdx[i] {
				continue
			}
			if perIndex {
				// The index's own backoff (getNewIndexFailureCounts,
				// backoff per index): its failures since it last ran.
				if wait := JobBackoffRemaining(jobPods{failed: indexFailures[i], ignored: jp.ignored}, c.Now); wait > 0 {
					c.RequeueAfter(wait)
					continue
				}
			}
			indexes = append(indexes, i)
		}
	} else {
		for range want - busy {
			indexes = append(indexes, -1)
		}
	}
	var made []*corev1.Pod
	for _, i := range indexes {
		tmpl, prefix := JobPodTemplate(job, i)
		if perIndex {
			tmpl.Annotations[JobIndexFailureCountAnnotation] = strconv.Itoa(len(indexFailures[i]))
		}
		p, err := c.CreatePod(store.JobKind, job, tmpl, prefix)
		if err != nil || p == nil {
			return made, err
		}
		made = append(made, p)
	}
	return made, nil
}

// JobPodTemplate is the template of a Job's pod and its generateName: the
// labels the API server gives the Job's template (controller-uid, job-name)
// and, for index i >= 0 of an Indexed Job, the completion index annotation
// and label, the JOB_COMPLETION_INDEX variable and the hostname
// `<job>-<i>` (job_controller.go addCompletionIndexAnnotation,
// addCompletionIndexEnvVariables, podGenerateNameWithIndex).
func JobPodTemplate(job *batchv1.Job, index int) (*corev1.PodTemplateSpec, string) {
	t := job.Spec.Template.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[batchv1.ControllerUidLabel] = string(job.UID)
	t.Labels["controller-uid"] = string(job.UID)
	if index < 0 {
		return t, job.Name + "-"
	}
	idx := strconv.Itoa(index)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[batchv1.JobCompletionIndexAnnotation] = idx
	t.Labels[batchv1.JobCompletionIndexAnnotation] = idx
	env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	for _, list := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range list {
			has := false
			for _, e := range list[i].Env {
				has = has || e.Name == env.Name
			}
			if !has {
				list[i].Env = append(list[i].Env, env)
			}
		}
	}
	t.Spec.Hostname = job.Name + "-" + idx
	prefix := job.Name + "-" + idx + "-"
	if len(prefix) > 58 { // podGenerateNameWithIndex: the API server keeps 63 - 5
		prefix = prefix[:58]
	}
	return t, prefix
}

// CompletionIndex is a pod's completion index (its annotation).
func CompletionIndex(p *corev1.Pod) (int, bool) {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}

// FormatIndexes is status.completedIndexes: sorted indexes, runs of three
// or more as ranges ("1,3-5,7"), as the Job controller writes them.
func FormatIndexes(set map[int]bool) string {
	var idx []int
	for i := range set {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(idx[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(idx[i]), strconv.Itoa(idx[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// PastBackoffLimitOnFailure is the Job controller's pastBackoffLimitOnFailure:
// with restartPolicy OnFailure the containers' restarts in running and
// pending pods count toward backoffLimit.
func PastBackoffLimitOnFailure(job *batchv1.Job, active []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var n int32
	for _, p := range active {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			n += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return n > 0
	}
	return n >= *job.Spec.BackoffLimit
}

// JobBackoffRemaining is how long a replacement still waits: the backoff
// record's getRemainingTime (pkg/controller/job/backoff_utils.go) over the
// failures since the last success, in the order the pods finished.
func JobBackoffRemaining(jp jobPods, now time.Time) time.Duration {
	type fin struct {
		at     time.Time
		failed bool
	}
	var fins []fin
	for _, p := range jp.succeeded {
		fins = append(fins, fin{finishedAt(p), false})
	}
	for _, p := range jp.failed {
		if !jp.ignored[p] {
			fins = append(fins, fin{finishedAt(p), true})
		}
	}
	sort.SliceStable(fins, func(i, j int) bool { return fins[i].at.Before(fins[j].at) })
	failures := 0
	var last time.Time
	for _, f := range fins {
		if !f.failed {
			failures = 0
			continue
		}
		failures++
		last = f.at
	}
	if failures == 0 {
		return 0
	}
	d := jobBackoffBase
	for i := 1; i < failures && d < jobBackoffMax; i++ {
		d *= 2
	}
	d = min(d, jobBackoffMax)
	if elapsed := now.Sub(last); elapsed < d {
		return d - elapsed
	}
	return 0
}

// finishedAt is when a pod's last container finished (getFinishedTime).
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			if s.State.Terminated != nil && s.State.Terminated.FinishedAt.After(t) {
				t = s.State.Terminated.FinishedAt.Time
			}
		}
	}
	if t.IsZero() {
		t = p.CreationTimestamp.Time
	}
	return t
}

// MatchPodFailurePolicy is the Job controller's matchPodFailurePolicy
// (pkg/controller/job/pod_failure_policy.go): the action of the first rule
// a failed pod matches, and the message a FailJob action gives.
func MatchPodFailurePolicy(pfp *batchv1.PodFailurePolicy, p *corev1.Pod) (batchv1.PodFailurePolicyAction, string, bool) {
	if pfp == nil {
		return "", "", false
	}
	for i, r := range pfp.Rules {
		if ec := r.OnExitCodes; ec != nil {
			if s := matchOnExitCodes(ec, p); s != nil {
				return r.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
					s.Name, p.Namespace, p.Name, s.State.Terminated.ExitCode, r.Action, i), true
			}
		}
		for _, pc := range r.OnPodConditions {
			for _, cond := range p.Status.Conditions {
				if cond.Type == pc.Type && cond.Status == pc.Status {
					return r.Action, fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", p.Namespace, p.Name, pc.Type, r.Action, i), true
				}
			}
		}
	}
	return "", "", false
}

// matchOnExitCodes finds a container (app containers first, then init
// containers) terminated with a non-zero exit code the requirement matches.
func matchOnExitCodes(ec *batchv1.PodFailurePolicyOnExitCodesRequirement, p *corev1.Pod) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			s := &list[i]
			t := s.State.Terminated
			if t == nil || t.ExitCode == 0 || (ec.ContainerName != nil && *ec.ContainerName != s.Name) {
				continue
			}
			in := false
			for _, v := range ec.Values {
				in = in || v == t.ExitCode
			}
			if in == (ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) {
				return s
			}
		}
	}
	return nil
}

// jobFinished reports whether a Job is Complete or Failed, and since when.
func jobFinished(job *batchv1.Job) (time.Time, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// jobTTL is the TTL-after-finished controller: a finished Job with
// ttlSecondsAfterFinished is deleted that long after it finished, and its
// pods with it (the pass's garbage collection).
func (c *Context) jobTTL(job *batchv1.Job) error {
	at, _ := jobFinished(job)
	if job.Spec.TTLSecondsAfterFinished == nil {
		return nil
	}
	expire := at.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if c.Now.Before(expire) {
		c.RequeueAfter(expire.Sub(c.Now))
		return nil
	}
	c.Log.Info("deleting finished job after its TTL", "job", job.Namespace+"/"+job.Name)
	if err := c.L.Remove(store.JobKind, job.Namespace, job.Name); err != nil {
		return err
	}
	c.ctrl.poke()
	return nil
}

func hasJobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	c := jobCondition(st, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

func jobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setJobCondition sets a condition True, with its reason, once.
func setJobCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, reason, msg string, now metav1.Time) {
	if c := jobCondition(st, t); c != nil {
		if c.Status != corev1.ConditionTrue {
			c.Status, c.Reason, c.Message, c.LastProbeTime, c.LastTransitionTime = corev1.ConditionTrue, reason, msg, now, now
		}
		return
	}
	st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now})
}

// JobIndexFailureCountAnnotation is the failures of a pod's index before it
// (batch.kubernetes.io/job-index-failure-count), under backoffLimitPerIndex.
const JobIndexFailureCountAnnotation = "batch.kubernetes.io/job-index-failure-count"

// successPolicyMet is matchSuccessPolicy (pkg/controller/job/
// success_policy.go): the message of the first rule the succeeded indexes
// meet — all of its succeededIndexes, or succeededCount of them (of all
// indexes without succeededIndexes) — or "".
func successPolicyMet(job *batchv1.Job, done map[int]bool) string {
	sp := job.Spec.SuccessPolicy
	if sp == nil || len(done) == 0 || job.Spec.Completions == nil {
		return ""
	}
	for i, r := range sp.Rules {
		if r.SucceededIndexes != nil {
			required := ParseIndexes(*r.SucceededIndexes, int(*job.Spec.Completions))
			if len(required) == 0 {
				continue
			}
			contains := 0
			for idx := range required {
				if done[idx] {
					contains++
				}
			}
			if contains == len(required) || (r.SucceededCount != nil && contains >= int(*r.SucceededCount)) {
				return fmt.Sprintf("Matched rules at index %d", i)
			}
		} else if r.SucceededCount != nil && len(done) >= int(*r.SucceededCount) {
			return fmt.Sprintf("Matched rules at index %d", i)
		}
	}
	return ""
}

// ParseIndexes reads an index list ("1,3-5,7") as parseIndexesFromString:
// indexes at or past completions are left out; a malformed list is empty.
func ParseIndexes(s string, completions int) map[int]bool {
	out := map[int]bool{}
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		first, last, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(first)
		if err != nil || a < 0 {
			return map[int]bool{}
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(last); err != nil || b < a {
				return map[int]bool{}
			}
		}
		for i := a; i <= b && i < completions; i++ {
			out[i] = true
		}
	}
	return out
}
