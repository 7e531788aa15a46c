package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The scenarios of test/e2e/apps/cronjob.go, run at once: each CronJob
// ("*/1 * * * *") is its own case in one podrun root, and the poll below
// checks each one's outcome until all are met, so the file costs the two
// schedule ticks the slowest case needs, not a minute per case.
func TestE2ECronJobScenarios(t *testing.T) {
	e := newEnv(t)
	cj := func(name, policy, extra, cmd string) string {
		return fmt.Sprintf(`---
apiVersion: batch/v1
kind: CronJob
metadata: {name: %s}
spec:
  schedule: "*/1 * * * *"
  concurrencyPolicy: %s
%s  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 1
          containers:
          - {name: c, image: busybox:1.28, command: %s}
`, name, policy, extra, cmd)
	}
	sleep := `['sleep', '300']`
	names := []string{"wl-allow", "wl-forbid", "wl-replace", "wl-suspend", "wl-succ", "wl-fail", "wl-deleted", "wl-manual", "wl-tz"}
	for _, n := range names {
		e.deleteAtEnd("cronjob/" + n)
	}
	// should support timezone: an unknown zone is refused.
	if r := e.podrunIn(cj("wl-badtz", "Allow", "  timeZone: bad-timezone\n", sleep), "apply", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, "timeZone") {
		t.Errorf("apply with timeZone bad-timezone: %s", r)
	}
	e.applyStdin(cj("wl-allow", "Allow", "", sleep) +
		cj("wl-forbid", "Forbid", "", sleep) +
		cj("wl-replace", "Replace", "", sleep) +
		cj("wl-suspend", "Allow", "  suspend: true\n", sleep) +
		cj("wl-succ", "Allow", "  successfulJobsHistoryLimit: 1\n", `['true']`) +
		cj("wl-fail", "Allow", "  failedJobsHistoryLimit: 1\n", `['false']`) +
		cj("wl-deleted", "Forbid", "", sleep) +
		cj("wl-manual", "Forbid", "", sleep) +
		cj("wl-tz", "Allow", "  timeZone: Asia/Kolkata\n", sleep))
	// A Job made by hand from a Forbid CronJob is not one of its active
	// Jobs: it does not hold back the scheduled one.
	e.must("create", "job", "wl-manual-by-hand", "--from=cronjob/wl-manual")

	seen := map[string]map[string]bool{} // cronjob -> job names seen
	var firstReplaced, deletedUID string
	done := map[string]bool{}
	deadline := time.Now().Add(200 * time.Second * timeoutScale)
	var cjs map[string]*batchv1.CronJob
	var jobs map[string][]batchv1.Job
	for {
		cjs, jobs = e.cronJobsAndJobs()
		for _, n := range names {
			if seen[n] == nil {
				seen[n] = map[string]bool{}
			}
			for _, j := range jobs[n] {
				seen[n][j.Name] = true
			}
		}
		activeNames := func(n string) []string {
			var out []string
			for _, r := range cjs[n].Status.Active {
				out = append(out, r.Name)
			}
			return out
		}
		// should schedule multiple jobs concurrently
		done["wl-allow"] = len(cjs["wl-allow"].Status.Active) >= 2 && cjs["wl-allow"].Status.LastScheduleTime != nil
		// should replace jobs when ReplaceConcurrent
		if a := activeNames("wl-replace"); len(a) == 1 {
			if firstReplaced == "" {
				firstReplaced = a[0]
			} else if a[0] != firstReplaced && !seenNow(jobs["wl-replace"], firstReplaced) {
				done["wl-replace"] = true
			}
		}
		// should delete successful / failed finished jobs with limit of one
		done["wl-succ"] = len(seen["wl-succ"]) >= 2 && len(jobs["wl-succ"]) == 1 && jobCond(&jobs["wl-succ"][0], batchv1.JobComplete) != nil &&
			cjs["wl-succ"].Status.LastSuccessfulTime != nil && len(cjs["wl-succ"].Status.Active) == 0
		done["wl-fail"] = len(seen["wl-fail"]) >= 2 && len(jobs["wl-fail"]) == 1 && jobCond(&jobs["wl-fail"][0], batchv1.JobFailed) != nil &&
			len(cjs["wl-fail"].Status.Active) == 0
		// should remove from active list jobs that have been deleted
		if a := cjs["wl-deleted"].Status.Active; deletedUID == "" && len(a) == 1 {
			deletedUID = string(a[0].UID)
			e.must("delete", "job", a[0].Name, "--grace-period", "1")
		} else if deletedUID != "" {
			done["wl-deleted"] = true
			for _, r := range a {
				if string(r.UID) == deletedUID {
					done["wl-deleted"] = false
				}
			}
		}
		done["wl-manual"] = len(cjs["wl-manual"].Status.Active) == 1 && cjs["wl-manual"].Status.Active[0].Name != "wl-manual-by-hand"
		done["wl-tz"] = len(jobs["wl-tz"]) >= 1
		all := true
		for _, n := range []string{"wl-allow", "wl-replace", "wl-succ", "wl-fail", "wl-deleted", "wl-manual", "wl-tz"} {
			all = all && done[n]
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cases not met: %v\n%s", done, e.podrun("get", "cronjobs,jobs"))
		}
		time.Sleep(2 * time.Second)
	}

	// should not schedule new jobs when ForbidConcurrent: by now wl-allow
	// has run two schedules, wl-forbid still its first Job only.
	if n := len(seen["wl-forbid"]); n != 1 || len(cjs["wl-forbid"].Status.Active) != 1 {
		t.Errorf("forbid: jobs %v, active %v", seen["wl-forbid"], cjs["wl-forbid"].Status.Active)
	}
	// should not schedule jobs when suspended
	if len(seen["wl-suspend"]) != 0 || cjs["wl-suspend"].Status.LastScheduleTime != nil {
		t.Errorf("suspended: jobs %v, status %+v", seen["wl-suspend"], cjs["wl-suspend"].Status)
	}
	// The manual Job still runs and is owned by its CronJob.
	if !seenNow(jobs["wl-manual"], "wl-manual-by-hand") {
		t.Errorf("the manual job went: %v", seen["wl-manual"])
	}
	// Jobs are named <cronjob>-<minutes since the epoch of the scheduled
	// time> (getJobName), annotated with that time in the CronJob's zone.
	for _, n := range []string{"wl-allow", "wl-tz"} {
		for _, j := range jobs[n] {
			ts, err := time.Parse(time.RFC3339, j.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
			if err != nil || j.Name != fmt.Sprintf("%s-%d", n, ts.Unix()/60) {
				t.Errorf("job %s: scheduled-timestamp %q (%v)", j.Name, j.Annotations[batchv1.CronJobScheduledTimestampAnnotation], err)
			}
			if n == "wl-tz" && !strings.HasSuffix(j.Annotations[batchv1.CronJobScheduledTimestampAnnotation], "+05:30") {
				t.Errorf("job %s: timestamp not in Asia/Kolkata: %q", j.Name, j.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
			}
			if ref := metav1.GetControllerOf(&j); ref == nil || ref.Kind != "CronJob" || ref.Name != n {
				t.Errorf("job %s: owner %v", j.Name, j.OwnerReferences)
			}
		}
	}
	// lastScheduleTime is the latest Job's scheduled time.
	if st := cjs["wl-allow"].Status.LastScheduleTime; st == nil || !seen["wl-allow"][fmt.Sprintf("wl-allow-%d", st.Unix()/60)] {
		t.Errorf("allow: lastScheduleTime %v, jobs %v", st, seen["wl-allow"])
	}
	// Deleting a CronJob deletes its Jobs.
	e.must("delete", "cronjob", "wl-allow", "--grace-period", "1")
	if _, jobs := e.cronJobsAndJobs(); len(jobs["wl-allow"]) != 0 {
		t.Errorf("jobs outlived their cronjob: %d", len(jobs["wl-allow"]))
	}
}

func seenNow(jobs []batchv1.Job, name string) bool {
	for _, j := range jobs {
		if j.Name == name {
			return true
		}
	}
	return false
}

// applyStdin applies a manifest from stdin.
func (e *env) applyStdin(yaml string) {
	e.t.Helper()
	if r := e.podrunIn(yaml, "apply", "-f", "-"); r.code != 0 {
		e.t.Fatalf("apply: %s", r)
	}
}

// cronJobsAndJobs: the CronJobs by name and their Jobs (by controller).
func (e *env) cronJobsAndJobs() (map[string]*batchv1.CronJob, map[string][]batchv1.Job) {
	e.t.Helper()
	var cl batchv1.CronJobList
	if err := json.Unmarshal([]byte(e.must("get", "cronjobs", "-o", "json").stdout), &cl); err != nil {
		e.t.Fatal(err)
	}
	var jl batchv1.JobList
	if err := json.Unmarshal([]byte(e.must("get", "jobs", "-o", "json").stdout), &jl); err != nil {
		e.t.Fatal(err)
	}
	cjs := map[string]*batchv1.CronJob{}
	for i := range cl.Items {
		cjs[cl.Items[i].Name] = &cl.Items[i]
	}
	jobs := map[string][]batchv1.Job{}
	for _, j := range jl.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" {
			jobs[ref.Name] = append(jobs[ref.Name], j)
		}
	}
	return cjs, jobs
}
