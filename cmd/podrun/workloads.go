package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// controllersCommand is the workload controllers process that commands start
// on demand (controllers.Ensure).
func controllersCommand() *cli.Command {
	return &cli.Command{
		Name:   "controllers",
		Hidden: true,
		Action: func(c *cli.Context) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			shim, err := shimPath()
			if err != nil {
				return err
			}
			// Ensure passes the write end of its readiness pipe as fd 3.
			return controllers.Run(layout(c), exe, shim, c.String("log-level"), os.NewFile(3, "ready"))
		},
	}
}

// ensureControllers starts the controllers process when workload objects
// exist and none runs (after a crash too), as any verb that reads the store
// does; a failure is only a warning.
func ensureControllers(c *cli.Context) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if err := controllers.Ensure(layout(c), exe, c.String("log-level")); err != nil {
		fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
	}
}

// applyWorkloads stores the manifest's workload objects with the pods'
// settings, as `kubectl apply` prints them ("deployment.apps/web created").
func applyWorkloads(l store.Layout, ws []*podspec.Workload, settings store.Settings, output string, report func(resource, name, action string)) error {
	for _, w := range ws {
		k, _ := store.KindFor(w.Kind)
		action, err := l.PutApplied(k, w.Object, &settings, w.Set)
		if err != nil {
			return err
		}
		if output == "" {
			report(k.Resource(), w.Object.GetName(), action)
		}
	}
	return nil
}

// workloadRow is kubectl's row for a workload object (printers.go:
// printDeployment, printReplicaSet, printDaemonSet).
func workloadRow(o metav1.Object, wide bool, now time.Time) (header, row []string) {
	age := printers.Since(o.GetCreationTimestamp(), now)
	var tmpl *corev1.PodTemplateSpec
	var sel *metav1.LabelSelector
	switch v := o.(type) {
	case *appsv1.Deployment:
		header = []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}
		row = []string{v.Name, fmt.Sprintf("%d/%d", v.Status.ReadyReplicas, replicasOf(v.Spec.Replicas)), fmt.Sprint(v.Status.UpdatedReplicas), fmt.Sprint(v.Status.AvailableReplicas), age}
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
	case *appsv1.ReplicaSet:
		header = []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}
		row = []string{v.Name, fmt.Sprint(replicasOf(v.Spec.Replicas)), fmt.Sprint(v.Status.Replicas), fmt.Sprint(v.Status.ReadyReplicas), age}
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
	case *appsv1.DaemonSet:
		header = []string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"}
		row = []string{v.Name, fmt.Sprint(v.Status.DesiredNumberScheduled), fmt.Sprint(v.Status.CurrentNumberScheduled), fmt.Sprint(v.Status.NumberReady),
			fmt.Sprint(v.Status.UpdatedNumberScheduled), fmt.Sprint(v.Status.NumberAvailable), orNone(labelsString(v.Spec.Template.Spec.NodeSelector)), age}
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
	case *appsv1.StatefulSet:
		header = []string{"NAME", "READY", "AGE"}
		row = []string{v.Name, fmt.Sprintf("%d/%d", v.Status.ReadyReplicas, replicasOf(v.Spec.Replicas)), age}
		tmpl = &v.Spec.Template
		if wide {
			c, i := containersImages(tmpl)
			return append(header, "CONTAINERS", "IMAGES"), append(row, c, i)
		}
		return header, row
	case *batchv1.Job:
		header, row = jobRow(v, now)
		tmpl = &v.Spec.Template
		sel = v.Spec.Selector
		if sel == nil {
			sel = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(v.UID)}}
		}
	case *batchv1.CronJob:
		header = []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"}
		last := "<none>"
		if v.Status.LastScheduleTime != nil {
			last = printers.Since(*v.Status.LastScheduleTime, now)
		}
		tz := "<none>"
		if v.Spec.TimeZone != nil {
			tz = *v.Spec.TimeZone
		}
		row = []string{v.Name, v.Spec.Schedule, tz, fmt.Sprint(v.Spec.Suspend != nil && *v.Spec.Suspend), fmt.Sprint(len(v.Status.Active)), last, age}
		tmpl, sel = &v.Spec.JobTemplate.Spec.Template, v.Spec.JobTemplate.Spec.Selector
	default:
		return []string{"NAME", "AGE"}, []string{o.GetName(), age}
	}
	if wide {
		names, images := containersImages(tmpl)
		s, _ := metav1.LabelSelectorAsSelector(sel)
		selStr := "<none>"
		if s != nil && !s.Empty() {
			selStr = s.String()
		}
		header = append(header, "CONTAINERS", "IMAGES", "SELECTOR")
		row = append(row, names, images, selStr)
	}
	return header, row
}

func containersImages(tmpl *corev1.PodTemplateSpec) (string, string) {
	var names, images []string
	for _, c := range tmpl.Spec.Containers {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

// jobRow is kubectl's printJob: NAME STATUS COMPLETIONS DURATION AGE.
func jobRow(j *batchv1.Job, now time.Time) (header, row []string) {
	var completions string
	if j.Spec.Completions != nil {
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	} else if p := j.Spec.Parallelism; p != nil && *p > 1 {
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *p)
	} else {
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var dur string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		dur = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		dur = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	return []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"},
		[]string{j.Name, JobStatusWord(j), completions, dur, printers.Since(j.CreationTimestamp, now)}
}

// JobStatusWord is kubectl's STATUS column of a Job.
func JobStatusWord(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// multiline is kubectl describe's printLabelsMultiline ("k=v") and
// printAnnotationsMultiline ("k: v", without kubectl's last-applied
// annotation): one key a line, sorted, the later lines in the value column
// of the tabwriter.
func multiline(m map[string]string, sep string) string {
	var keys []string
	for k := range m {
		if sep == ": " && k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "<none>"
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		lines = append(lines, k+sep+m[k])
	}
	return strings.Join(lines, "\n\t")
}

func labelsString(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	return printers.FormatLabels(m)
}

// printWorkloadTable prints kubectl's table for objects of one workload
// kind; prefix goes before each name ("deployment.apps/" in get all).
func printWorkloadTable(objs []metav1.Object, wide, allNS bool, prefix string, now time.Time) error {
	w := printers.NewTabWriter(os.Stdout)
	for i, o := range objs {
		header, row := workloadRow(o, wide, now)
		header, row = getTable.header(header), getTable.row(row, o.GetLabels())
		row[0] = prefix + row[0]
		if allNS {
			header = append([]string{"NAMESPACE"}, header...)
			row = append([]string{o.GetNamespace()}, row...)
		}
		if i == 0 && !getTable.noHeaders {
			fmt.Fprintln(w, strings.Join(header, "\t"))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// describeWorkload is kubectl describe for a workload object, in the shape of
// its DeploymentDescriber / ReplicaSetDescriber / DaemonSetDescriber.
func describeWorkload(l store.Layout, o metav1.Object) {
	w := printers.NewTabWriter(os.Stdout)
	defer w.Flush()
	kv := func(k string, v any) { fmt.Fprintf(w, "%s:\t%v\n", k, v) }
	kv("Name", o.GetName())
	kv("Namespace", o.GetNamespace())
	kv("CreationTimestamp", o.GetCreationTimestamp().Time.Format(time.RFC1123Z))
	kv("Labels", multiline(o.GetLabels(), "="))
	kv("Annotations", multiline(o.GetAnnotations(), ": "))
	var tmpl *corev1.PodTemplateSpec
	var sel *metav1.LabelSelector
	switch v := o.(type) {
	case *appsv1.Deployment:
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
		s, _ := metav1.LabelSelectorAsSelector(sel)
		kv("Selector", s)
		kv("Replicas", fmt.Sprintf("%d desired | %d updated | %d total | %d available | %d unavailable",
			replicasOf(v.Spec.Replicas), v.Status.UpdatedReplicas, v.Status.Replicas, v.Status.AvailableReplicas, v.Status.UnavailableReplicas))
		kv("StrategyType", v.Spec.Strategy.Type)
		kv("MinReadySeconds", v.Spec.MinReadySeconds)
		if ru := v.Spec.Strategy.RollingUpdate; ru != nil {
			kv("RollingUpdateStrategy", fmt.Sprintf("%s max unavailable, %s max surge", ru.MaxUnavailable.String(), ru.MaxSurge.String()))
		}
		defer func() {
			if len(v.Status.Conditions) > 0 {
				fmt.Fprintf(w, "Conditions:\n  Type\tStatus\tReason\n  ----\t------\t------\n")
				for _, c := range v.Status.Conditions {
					fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Type, c.Status, c.Reason)
				}
			}
			var old, cur []string
			for _, rs := range ownedReplicaSets(l, v) {
				s := fmt.Sprintf("%s (%d/%d replicas created)", rs.Name, rs.Status.Replicas, replicasOf(rs.Spec.Replicas))
				if controllers.EqualIgnoreHash(&rs.Spec.Template, &v.Spec.Template) {
					cur = append(cur, s)
				} else if replicasOf(rs.Spec.Replicas) > 0 || rs.Status.Replicas > 0 {
					old = append(old, s)
				}
			}
			kv("OldReplicaSets", orNone(strings.Join(old, ", ")))
			kv("NewReplicaSet", orNone(strings.Join(cur, ", ")))
		}()
	case *appsv1.ReplicaSet:
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
		s, _ := metav1.LabelSelectorAsSelector(sel)
		kv("Selector", s)
		if ref := metav1.GetControllerOf(v); ref != nil {
			kv("Controlled By", ref.Kind+"/"+ref.Name)
		}
		kv("Replicas", fmt.Sprintf("%d current / %d desired", v.Status.Replicas, replicasOf(v.Spec.Replicas)))
		kv("Pods Status", podsStatus(l, v.UID))
	case *appsv1.DaemonSet:
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
		s, _ := metav1.LabelSelectorAsSelector(sel)
		kv("Selector", s)
		kv("Node-Selector", orNone(labelsString(v.Spec.Template.Spec.NodeSelector)))
		kv("Desired Number of Nodes Scheduled", v.Status.DesiredNumberScheduled)
		kv("Current Number of Nodes Scheduled", v.Status.CurrentNumberScheduled)
		kv("Number of Nodes Scheduled with Up-to-date Pods", v.Status.UpdatedNumberScheduled)
		kv("Number of Nodes Scheduled with Available Pods", v.Status.NumberAvailable)
		kv("Number of Nodes Misscheduled", v.Status.NumberMisscheduled)
		kv("Pods Status", podsStatus(l, v.UID))
	case *appsv1.StatefulSet:
		tmpl, sel = &v.Spec.Template, v.Spec.Selector
		s, _ := metav1.LabelSelectorAsSelector(sel)
		kv("Selector", s)
		kv("Replicas", fmt.Sprintf("%d desired | %d total", replicasOf(v.Spec.Replicas), v.Status.Replicas))
		kv("Update Strategy", v.Spec.UpdateStrategy.Type)
		kv("Pods Status", podsStatus(l, v.UID))
	case *batchv1.Job:
		tmpl = &v.Spec.Template
		kv("Selector", batchv1.ControllerUidLabel+"="+string(v.UID))
		if ref := metav1.GetControllerOf(v); ref != nil {
			kv("Controlled By", ref.Kind+"/"+ref.Name)
		}
		kv("Parallelism", replicasOf(v.Spec.Parallelism))
		if v.Spec.Completions != nil {
			kv("Completions", *v.Spec.Completions)
		} else {
			kv("Completions", "<unset>")
		}
		if m := v.Spec.CompletionMode; m != nil {
			kv("Completion Mode", *m)
		}
		kv("Suspend", v.Spec.Suspend != nil && *v.Spec.Suspend)
		kv("Backoff Limit", *v.Spec.BackoffLimit)
		if t := v.Spec.TTLSecondsAfterFinished; t != nil {
			kv("TTL Seconds After Finished", *t)
		}
		if v.Status.StartTime != nil {
			kv("Start Time", v.Status.StartTime.Time.Format(time.RFC1123Z))
		}
		if v.Status.CompletionTime != nil {
			kv("Completed At", v.Status.CompletionTime.Time.Format(time.RFC1123Z))
			kv("Duration", duration.HumanDuration(v.Status.CompletionTime.Sub(v.Status.StartTime.Time)))
		}
		if d := v.Spec.ActiveDeadlineSeconds; d != nil {
			kv("Active Deadline Seconds", fmt.Sprintf("%ds", *d))
		}
		ready := int32(0)
		if v.Status.Ready != nil {
			ready = *v.Status.Ready
		}
		kv("Pods Statuses", fmt.Sprintf("%d Active (%d Ready) / %d Succeeded / %d Failed", v.Status.Active, ready, v.Status.Succeeded, v.Status.Failed))
		if v.Spec.CompletionMode != nil && *v.Spec.CompletionMode == batchv1.IndexedCompletion {
			kv("Completed Indexes", orNone(v.Status.CompletedIndexes))
		}
		defer func() {
			if len(v.Status.Conditions) > 0 {
				fmt.Fprintf(w, "Conditions:\n  Type\tStatus\tReason\tMessage\n  ----\t------\t------\t-------\n")
				for _, c := range v.Status.Conditions {
					fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
				}
			}
		}()
	case *batchv1.CronJob:
		// describeCronJob, with describeJobTemplate.
		unset := func(p *int32, format string) string {
			if p == nil {
				return "<unset>"
			}
			return fmt.Sprintf(format, *p)
		}
		kv("Schedule", v.Spec.Schedule)
		kv("Concurrency Policy", v.Spec.ConcurrencyPolicy)
		switch {
		case v.Spec.Suspend == nil:
			kv("Suspend", "<unset>")
		case *v.Spec.Suspend:
			kv("Suspend", "True")
		default:
			kv("Suspend", "False")
		}
		if v.Spec.TimeZone != nil {
			kv("Time Zone", *v.Spec.TimeZone)
		} else {
			kv("Time Zone", "<unset>")
		}
		kv("Successful Job History Limit", unset(v.Spec.SuccessfulJobsHistoryLimit, "%d"))
		kv("Failed Job History Limit", unset(v.Spec.FailedJobsHistoryLimit, "%d"))
		if d := v.Spec.StartingDeadlineSeconds; d != nil {
			kv("Starting Deadline Seconds", fmt.Sprintf("%ds", *d))
		} else {
			kv("Starting Deadline Seconds", "<unset>")
		}
		js := v.Spec.JobTemplate.Spec
		if js.Selector != nil {
			s, _ := metav1.LabelSelectorAsSelector(js.Selector)
			kv("Selector", s)
		} else {
			kv("Selector", "<unset>")
		}
		kv("Parallelism", unset(js.Parallelism, "%d"))
		kv("Completions", unset(js.Completions, "%d"))
		if d := js.ActiveDeadlineSeconds; d != nil {
			kv("Active Deadline Seconds", fmt.Sprintf("%ds", *d))
		}
		describePodTemplate(w, &js.Template)
		if v.Status.LastScheduleTime != nil {
			kv("Last Schedule Time", v.Status.LastScheduleTime.Time.Format(time.RFC1123Z))
		} else {
			kv("Last Schedule Time", "<unset>")
		}
		var active []string
		for _, r := range v.Status.Active {
			active = append(active, r.Name)
		}
		kv("Active Jobs", orNone(strings.Join(active, ", ")))
	}
	if tmpl == nil {
		return
	}
	describePodTemplate(w, tmpl)
}

// describePodTemplate is kubectl's DescribePodTemplate, in short: labels,
// annotations when any, and the containers' images and commands.
func describePodTemplate(w io.Writer, tmpl *corev1.PodTemplateSpec) {
	fmt.Fprintf(w, "Pod Template:\n")
	fmt.Fprintf(w, "  Labels:\t%s\n", orNone(labelsString(tmpl.Labels)))
	if len(tmpl.Annotations) > 0 {
		fmt.Fprintf(w, "  Annotations:\t%s\n", labelsString(tmpl.Annotations))
	}
	fmt.Fprintf(w, "  Containers:\n")
	for _, c := range tmpl.Spec.Containers {
		fmt.Fprintf(w, "   %s:\n", c.Name)
		fmt.Fprintf(w, "    Image:\t%s\n", c.Image)
		if len(c.Command) > 0 {
			fmt.Fprintf(w, "    Command:\t%s\n", strings.Join(c.Command, " "))
		}
	}
}

// podsStatus is kubectl's "N Running / N Waiting / N Succeeded / N Failed".
func podsStatus(l store.Layout, uid types.UID) string {
	counts := map[corev1.PodPhase]int{}
	for _, p := range ownedPods(l, map[types.UID]bool{uid: true}) {
		counts[p.Status.Phase]++
	}
	return fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed", counts[corev1.PodRunning], counts[corev1.PodPending], counts[corev1.PodSucceeded], counts[corev1.PodFailed])
}

func ownedReplicaSets(l store.Layout, d *appsv1.Deployment) []*appsv1.ReplicaSet {
	objs, _ := l.List(store.ReplicaSetKind, d.Namespace)
	var out []*appsv1.ReplicaSet
	for _, o := range objs {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == d.UID {
			out = append(out, o.(*appsv1.ReplicaSet))
		}
	}
	return out
}

// ownedPods returns the pod records whose controller is one of owners.
func ownedPods(l store.Layout, owners map[types.UID]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range podsOf(l) {
		if ref := metav1.GetControllerOf(p); ref != nil && owners[ref.UID] {
			out = append(out, p)
		}
	}
	return out
}

// deleteWorkloads deletes workload objects and, as kubectl delete's default
// cascade (background, and kubectl waits for the objects), what they own:
// the objects go first, so that the controllers make no more pods for them,
// then their owned objects and pods (each pod within its grace period); the
// command returns when the pods are gone.
func deleteWorkloads(c *cli.Context, l store.Layout, objs []objectName, opts supervisor.DeleteOptions, ignoreNotFound bool) []error {
	var errs []error
	// What the objects own, transitively, as stored before anything goes
	// (the controllers' garbage collection may remove an orphan meanwhile).
	type owned struct {
		k   *store.Kind
		obj store.Object
	}
	var all []owned
	for _, k := range controllers.Kinds {
		list, _ := l.List(k.Store, "")
		for _, o := range list {
			all = append(all, owned{k.Store, o})
		}
	}
	revs, _ := l.List(store.ControllerRevisionKind, "")
	for _, o := range revs {
		all = append(all, owned{store.ControllerRevisionKind, o})
	}
	owners := map[types.UID]bool{}
	for _, o := range objs {
		obj, err := l.Get(o.kind, o.namespace, o.name)
		if err == nil {
			err = l.Remove(o.kind, o.namespace, o.name)
		}
		if errors.Is(err, store.ErrNotFound) && ignoreNotFound {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		owners[obj.GetUID()] = true
		deleted := "deleted"
		if g := opts.GracePeriod; g != nil && *g == 0 {
			deleted = "force deleted" // kubectl delete's PrintObj
		}
		fmt.Printf("%s %q %s\n", o.kind.Resource(), o.name, deleted)
	}
	if len(owners) == 0 {
		return errs
	}
	// Owned workload objects (a Deployment's ReplicaSets), transitively.
	for changed := true; changed; {
		changed = false
		for _, o := range all {
			if ref := metav1.GetControllerOf(o.obj); ref != nil && owners[ref.UID] && !owners[o.obj.GetUID()] {
				owners[o.obj.GetUID()] = true
				changed = true
				_ = l.Remove(o.k, o.obj.GetNamespace(), o.obj.GetName())
			}
		}
	}
	// Claims a deleted StatefulSet owns (persistentVolumeClaimRetentionPolicy
	// whenDeleted: Delete) go with it, once no pod uses them.
	claims, _ := l.List(store.ClaimKind, "")
	for _, cl := range claims {
		for _, r := range cl.GetOwnerReferences() {
			if owners[r.UID] {
				_ = l.Remove(store.ClaimKind, cl.GetNamespace(), cl.GetName())
				break
			}
		}
	}
	deletePods := func() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range ownedPods(l, owners) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec, err := store.FindPod(l, p.Namespace, p.Name)
				if err != nil || rec.Pod.UID != p.UID {
					return
				}
				if err := deletePod(c, l, rec, opts); err != nil && !errors.Is(err, store.ErrNotFound) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	deletePods()
	if opts.NoWait {
		return errs // the controllers' garbage collection deletes what they make meanwhile
	}
	// A pod the controllers were making as the objects went is deleted by
	// them (their garbage collection) or, once they have exited, here.
	if err := controllers.WaitGone(l, 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	deletePods()
	return errs
}

// kindSlashNames reads kubectl's two ways of naming objects of a stored
// kind: `KIND NAME...` and `KIND/NAME...` (deploy/web).
func kindSlashNames(args []string) (*store.Kind, []string, bool) {
	if k, ok := store.KindFor(args[0]); ok {
		return k, args[1:], true
	}
	var kind *store.Kind
	var names []string
	for _, a := range args {
		word, name, found := strings.Cut(a, "/")
		k, ok := store.KindFor(word)
		if !found || !ok || (kind != nil && k != kind) {
			return nil, nil, false
		}
		kind = k
		names = append(names, name)
	}
	return kind, names, kind != nil
}

func asMeta(list []store.Object) []metav1.Object {
	out := make([]metav1.Object, 0, len(list))
	for _, o := range list {
		out = append(out, o)
	}
	return out
}

// reflectKind is the kind name of a stored workload object.
func reflectKind(o metav1.Object) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *appsv1.ReplicaSet:
		return "ReplicaSet"
	case *appsv1.DaemonSet:
		return "DaemonSet"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *batchv1.Job:
		return "Job"
	case *batchv1.CronJob:
		return "CronJob"
	}
	return ""
}

// describeWorkloads is `describe deployment|rs|ds NAME...` (every object of
// the kind in the namespace without names).
func describeWorkloads(c *cli.Context, k *store.Kind, names []string) error {
	l := layout(c)
	var objs []metav1.Object
	if len(names) == 0 {
		list, _ := l.List(k, namespace(c))
		objs = asMeta(list)
	}
	for _, n := range names {
		o, err := l.Get(k, namespace(c), n)
		if err != nil {
			return failed("%v", err)
		}
		objs = append(objs, o)
	}
	for i, o := range objs {
		if i > 0 {
			os.Stdout.WriteString("\n\n")
		}
		describeWorkload(l, o)
	}
	return nil
}
