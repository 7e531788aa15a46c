package controllers

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/robfig/cron/v3"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// cronJobKind comes before jobKind: its Jobs are owned objects.
var cronJobKind = &Kind{Store: store.CronJobKind, Sync: syncCronJob}

// maxMissedSchedules bounds the look for missed start times, as the CronJob
// controller's mostRecentScheduleTime gives up after 100.
const maxMissedSchedules = 100

// syncCronJob is the CronJob controller's syncCronJob
// (pkg/controller/cronjob/cronjob_controllerv2.go) while the controllers
// process runs (it runs while any workload object, a CronJob too, is
// stored): at the most recent start time since the last one it makes the
// Job `<cronjob>-<minutes since the epoch>` (only the latest of several
// missed ones, as the controller does), honouring suspend,
// startingDeadlineSeconds and concurrencyPolicy, keeps status.active and
// lastScheduleTime/lastSuccessfulTime, and deletes finished Jobs beyond the
// history limits.
func syncCronJob(c *Context, obj store.Object) error {
	cj := obj.(*batchv1.CronJob)
	jobs, err := c.L.List(store.JobKind, cj.Namespace)
	if err != nil {
		return err
	}
	st := cj.Status.DeepCopy()
	var active []*batchv1.Job
	var succeeded, failed []*batchv1.Job
	for _, o := range jobs {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.UID != cj.UID {
			continue
		}
		j := o.(*batchv1.Job)
		switch {
		case hasJobCondition(&j.Status, batchv1.JobComplete):
			succeeded = append(succeeded, j)
			if t := j.Status.CompletionTime; t != nil && (st.LastSuccessfulTime == nil || st.LastSuccessfulTime.Before(t)) {
				st.LastSuccessfulTime = t
			}
		case hasJobCondition(&j.Status, batchv1.JobFailed):
			failed = append(failed, j)
		default:
			// syncCronJob: only the Jobs of status.active are active; an
			// unfinished Job it owns but did not list (one made by
			// `create job --from`) is an UnexpectedJob, not adopted, so it
			// neither blocks Forbid nor is deleted by Replace.
			if inActiveList(cj, j.UID) {
				active = append(active, j)
			} else {
				c.Log.Warn("UnexpectedJob: saw a job that the controller did not create or forgot", "cronjob", cj.Namespace+"/"+cj.Name, "job", j.Name)
			}
		}
	}
	// History limits: the oldest finished Jobs go (with their pods, by the
	// pass's garbage collection).
	for _, h := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if h.limit == nil || len(h.jobs) <= int(*h.limit) {
			continue
		}
		sort.Slice(h.jobs, func(i, j int) bool { return h.jobs[i].CreationTimestamp.Before(&h.jobs[j].CreationTimestamp) })
		for _, j := range h.jobs[:len(h.jobs)-int(*h.limit)] {
			c.Log.Info("deleting job beyond the cronjob's history limit", "job", j.Namespace+"/"+j.Name)
			_ = c.L.Remove(store.JobKind, j.Namespace, j.Name)
		}
	}
	if err := c.scheduleCronJob(cj, st, &active); err != nil {
		c.Log.Error("cronjob", "cronjob", cj.Namespace+"/"+cj.Name, "err", err)
	}
	st.Active = nil
	for _, j := range active {
		st.Active = append(st.Active, corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, APIVersion: "batch/v1"})
	}
	return c.UpdateStatus(store.CronJobKind, cj, func(cur store.Object) bool {
		o := cur.(*batchv1.CronJob)
		if equalCronJobStatus(o.Status, *st) {
			return false
		}
		o.Status = *st
		return true
	})
}

// equalCronJobStatus compares as stored (times to the second, in UTC).
func equalCronJobStatus(a, b batchv1.CronJobStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// scheduleCronJob makes the Job of the most recent missed start time, if
// any, and asks for a pass at the next one.
func (c *Context) scheduleCronJob(cj *batchv1.CronJob, st *batchv1.CronJobStatus, active *[]*batchv1.Job) error {
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return nil
	}
	spec := cj.Spec.Schedule
	if cj.Spec.TimeZone != nil {
		spec = "CRON_TZ=" + *cj.Spec.TimeZone + " " + spec
	}
	sched, err := podspec.ParseSchedule(spec)
	if err != nil {
		return fmt.Errorf("unparseable schedule %q: %w", cj.Spec.Schedule, err)
	}
	earliest := cj.CreationTimestamp.Time
	if st.LastScheduleTime != nil {
		earliest = st.LastScheduleTime.Time
	}
	last, next, missed := mostRecentScheduleTime(sched, earliest, c.Now)
	if missed > maxMissedSchedules {
		c.Log.Warn("too many missed start times, the most recent one is run", "cronjob", cj.Namespace+"/"+cj.Name, "missed", missed)
	}
	if !next.IsZero() {
		c.RequeueAfter(next.Sub(c.Now) + 10*time.Millisecond)
	}
	if last.IsZero() {
		return nil
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && c.Now.Sub(last) > time.Duration(*d)*time.Second {
		c.Log.Info("missed the starting deadline", "cronjob", cj.Namespace+"/"+cj.Name, "schedule", last)
		return nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(*active) > 0 {
			return nil // the controller requeues until the active Job ends
		}
	case batchv1.ReplaceConcurrent:
		for _, j := range *active {
			_ = c.L.Remove(store.JobKind, j.Namespace, j.Name)
		}
		*active = nil
	}
	name := fmt.Sprintf("%s-%d", cj.Name, last.Unix()/60) // getJobName: minutes since the epoch
	// getJobFromTemplate2: the scheduled time in the CronJob's time zone
	// (UTC without one).
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil {
		if l, err := time.LoadLocation(*tz); err == nil {
			loc = l
		}
	}
	job := podspec.JobFromCronJob(cj, name, map[string]string{batchv1.CronJobScheduledTimestampAnnotation: last.In(loc).Format(time.RFC3339)})
	if _, err := c.L.Get(store.JobKind, cj.Namespace, name); err == nil {
		st.LastScheduleTime = &metav1.Time{Time: last}
		return nil // made before
	}
	if _, err := c.L.PutWithSettings(store.JobKind, job, c.L.ObjectSettings(store.CronJobKind, cj.Namespace, cj.Name)); err != nil {
		return err
	}
	c.Log.Info("created job", "job", cj.Namespace+"/"+name, "cronjob", cj.Name, "scheduled", last)
	if o, err := c.L.Get(store.JobKind, cj.Namespace, name); err == nil {
		*active = append(*active, o.(*batchv1.Job))
	}
	st.LastScheduleTime = &metav1.Time{Time: last}
	c.ctrl.poke()
	return nil
}

// mostRecentScheduleTime is the CronJob controller's mostRecentScheduleTime
// (utils.go): the latest start time after earliest and not after now (zero
// if none), the next one after now, and roughly how many were missed. Many
// missed start times are stepped over by the interval of the first two
// rather than one by one, so a CronJob far behind gets its most recent
// start time, not its 100th.
func mostRecentScheduleTime(sched cron.Schedule, earliest, now time.Time) (last, next time.Time, missed int64) {
	t1 := sched.Next(earliest)
	if t1.IsZero() || t1.After(now) {
		return time.Time{}, t1, 0
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || t2.After(now) {
		return t1, t2, 1
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		between = 1
	}
	missed = int64(now.Sub(t1).Seconds())/between + 1
	from := t1
	if missed > 2 {
		from = t1.Add(time.Duration((missed-2)*between) * time.Second)
	}
	for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		last = t
	}
	if last.IsZero() {
		last = t1
	}
	return last, sched.Next(last), missed
}

func inActiveList(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}
