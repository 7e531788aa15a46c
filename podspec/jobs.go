//go:build !podrun_lean

package podspec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rows of the loader's kinds table for Job, CronJob (batch/v1) and
// StatefulSet (apps/v1), with the defaults of k8s.io/kubernetes
// pkg/apis/batch/v1/defaults.go and pkg/apis/apps/v1/defaults.go.
func init() {
	workloadKinds["Job"] = kindInfo{"batch/v1", reflect.TypeOf(batchv1.Job{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*batchv1.Job)
		o.Status = batchv1.JobStatus{}
		SetJobDefaults(o)
		if !l.templateInitAnnotations(&o.Spec.Template, &origin) {
			return
		}
		l.addWorkload("Job", &o.ObjectMeta, o, origin, &o.Spec.Template)
		JobTemplateLabels(o)
	}}
	workloadKinds["CronJob"] = kindInfo{"batch/v1", reflect.TypeOf(batchv1.CronJob{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*batchv1.CronJob)
		o.Status = batchv1.CronJobStatus{}
		SetCronJobDefaults(o)
		l.addWorkload("CronJob", &o.ObjectMeta, o, origin, &o.Spec.JobTemplate.Spec.Template)
	}}
	workloadKinds["StatefulSet"] = kindInfo{"apps/v1", reflect.TypeOf(appsv1.StatefulSet{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*appsv1.StatefulSet)
		o.Status = appsv1.StatefulSetStatus{}
		SetStatefulSetDefaults(o)
		l.addWorkload("StatefulSet", &o.ObjectMeta, o, origin, &o.Spec.Template)
	}}
}

// templateInitAnnotations turns the pre-1.8 init-container annotations of a
// pod template into its spec.initContainers, as for a pod.
func (l *loader) templateInitAnnotations(tmpl *corev1.PodTemplateSpec, origin *Origin) bool {
	origin.Template = true
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	if !l.initAnnotations(pod, origin) {
		return false
	}
	tmpl.Spec = pod.Spec
	return true
}

// JobTemplateLabels adds the labels the API server adds to a Job's template
// at creation (batch strategy generateSelector): job-name, and
// controller-uid once the Job has its UID (the controller adds that one to
// the pods it makes).
func JobTemplateLabels(job *batchv1.Job) {
	if len(validation.IsValidLabelValue(job.Name)) != 0 {
		return
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	job.Spec.Template.Labels[batchv1.JobNameLabel] = job.Name
	job.Spec.Template.Labels["job-name"] = job.Name // the legacy unprefixed label
}

// SetJobDefaults is SetDefaults_Job (batch/v1).
func SetJobDefaults(o *batchv1.Job) {
	s := &o.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions, s.Parallelism = int32p(1), int32p(1)
	}
	if s.Parallelism == nil {
		s.Parallelism = int32p(1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = int32p(2147483647)
		} else {
			s.BackoffLimit = int32p(6)
		}
	}
	if s.CompletionMode == nil {
		m := batchv1.NonIndexedCompletion
		s.CompletionMode = &m
	}
	if s.Suspend == nil {
		f := false
		s.Suspend = &f
	}
	if s.PodReplacementPolicy == nil {
		p := batchv1.TerminatingOrFailed
		if s.PodFailurePolicy != nil {
			p = batchv1.Failed
		}
		s.PodReplacementPolicy = &p
	}
	if s.ManualSelector == nil {
		f := false
		s.ManualSelector = &f
	}
	if pfp := s.PodFailurePolicy; pfp != nil {
		for i := range pfp.Rules {
			for j := range pfp.Rules[i].OnPodConditions {
				if pfp.Rules[i].OnPodConditions[j].Status == "" {
					pfp.Rules[i].OnPodConditions[j].Status = corev1.ConditionTrue
				}
			}
		}
	}
}

// SetCronJobDefaults is SetDefaults_CronJob (batch/v1), with the defaults
// of its Job template.
func SetCronJobDefaults(o *batchv1.CronJob) {
	if o.Spec.ConcurrencyPolicy == "" {
		o.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if o.Spec.Suspend == nil {
		f := false
		o.Spec.Suspend = &f
	}
	if o.Spec.SuccessfulJobsHistoryLimit == nil {
		o.Spec.SuccessfulJobsHistoryLimit = int32p(3)
	}
	if o.Spec.FailedJobsHistoryLimit == nil {
		o.Spec.FailedJobsHistoryLimit = int32p(1)
	}
	j := &batchv1.Job{Spec: o.Spec.JobTemplate.Spec}
	SetJobDefaults(j)
	o.Spec.JobTemplate.Spec = j.Spec
}

// SetStatefulSetDefaults is SetDefaults_StatefulSet (apps/v1).
func SetStatefulSetDefaults(o *appsv1.StatefulSet) {
	s := &o.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if s.UpdateStrategy.RollingUpdate.Partition == nil {
			s.UpdateStrategy.RollingUpdate.Partition = int32p(0)
		}
		// MaxUnavailableStatefulSet (beta and on since Kubernetes 1.37).
		if s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
			one := intstr.FromInt32(1)
			s.UpdateStrategy.RollingUpdate.MaxUnavailable = &one
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Replicas == nil {
		s.Replicas = int32p(1)
	}
	for i := range s.VolumeClaimTemplates {
		if s.VolumeClaimTemplates[i].Spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			s.VolumeClaimTemplates[i].Spec.VolumeMode = &fs
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = int32p(10)
	}
}

// validateJobSpec is the batch API's ValidateJobSpec (pkg/apis/batch/validation),
// the pod template aside, and the Job fields podrun cannot honour.
func validateJobSpec(s *batchv1.JobSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", s.Parallelism}, {"completions", s.Completions}, {"backoffLimit", s.BackoffLimit}} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(int64(*f.v), spec.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	if s.TTLSecondsAfterFinished != nil {
		errs = append(errs, validateNonnegative(int64(*s.TTLSecondsAfterFinished), spec.Child("ttlSecondsAfterFinished"))...)
	}
	if m := s.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if s.Completions == nil {
				errs = append(errs, field.Required(spec.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
			}
			if s.Parallelism != nil && *s.Parallelism > 100000 {
				errs = append(errs, field.Invalid(spec.Child("parallelism"), *s.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
			}
			if s.Completions != nil && *s.Completions > 100000 {
				errs = append(errs, field.Invalid(spec.Child("completions"), *s.Completions, "must be less than or equal to 100000 when completion mode is Indexed"))
			}
		default:
			errs = append(errs, field.NotSupported(spec.Child("completionMode"), *m, []string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
		}
	}
	if s.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.Selector)
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("selector"), s.Selector, err.Error()))
		} else if s.ManualSelector != nil && *s.ManualSelector && !sel.Matches(labels.Set(s.Template.Labels)) {
			errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	// The template's restartPolicy was defaulted to Always when empty, which
	// a Job refuses, as the API server does.
	rp := s.Template.Spec.RestartPolicy
	if rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		if rp == "" {
			rp = corev1.RestartPolicyAlways
		}
		errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), rp,
			[]string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	if s.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*s.Template.Spec.ActiveDeadlineSeconds, spec.Child("template", "spec", "activeDeadlineSeconds"))...)
	}
	if pfp := s.PodFailurePolicy; pfp != nil {
		errs = append(errs, validatePodFailurePolicy(s, spec.Child("podFailurePolicy"))...)
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	// validateJobSpec's backoffLimitPerIndex, maxFailedIndexes and
	// successPolicy checks.
	if s.BackoffLimitPerIndex != nil {
		errs = append(errs, validateNonnegative(int64(*s.BackoffLimitPerIndex), spec.Child("backoffLimitPerIndex"))...)
		if !indexed {
			errs = append(errs, field.Invalid(spec.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
	}
	if s.MaxFailedIndexes != nil {
		errs = append(errs, validateNonnegative(int64(*s.MaxFailedIndexes), spec.Child("maxFailedIndexes"))...)
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(spec.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
		if s.Completions != nil && *s.MaxFailedIndexes > *s.Completions {
			errs = append(errs, field.Invalid(spec.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to completions"))
		}
	}
	if sp := s.SuccessPolicy; sp != nil {
		p := spec.Child("successPolicy")
		if !indexed {
			errs = append(errs, field.Invalid(spec.Child("completionMode"), s.CompletionMode, "requires indexed completion mode"))
		}
		if len(sp.Rules) == 0 {
			errs = append(errs, field.Required(p.Child("rules"), "at least one rules must be specified when the successPolicy is specified"))
		}
		if len(sp.Rules) > 20 {
			errs = append(errs, field.TooMany(p.Child("rules"), len(sp.Rules), 20))
		}
		for i, r := range sp.Rules {
			rp := p.Child("rules").Index(i)
			if r.SucceededIndexes == nil && r.SucceededCount == nil {
				errs = append(errs, field.Required(rp, "at least one of succeededCount or succeededIndexes must be specified"))
			}
			if r.SucceededCount != nil {
				errs = append(errs, validateNonnegative(int64(*r.SucceededCount), rp.Child("succeededCount"))...)
				if s.Completions != nil && *r.SucceededCount > *s.Completions {
					errs = append(errs, field.Invalid(rp.Child("succeededCount"), *r.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", *s.Completions)))
				}
			}
			if r.SucceededIndexes != nil && s.Completions != nil && !validIndexes(*r.SucceededIndexes, int(*s.Completions)) {
				errs = append(errs, field.Invalid(rp.Child("succeededIndexes"), *r.SucceededIndexes, "error parsing succeededIndexes: ordered, non-overlapping indexes or ranges below completions expected"))
			}
		}
	}
	return errs
}

// validIndexes checks an index list ("1,3-5"): ordered, non-overlapping,
// below completions (validateIndexesFormat).
func validIndexes(s string, completions int) bool {
	prev := -1
	for _, part := range strings.Split(s, ",") {
		first, last, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(first)
		if err != nil || a <= prev {
			return false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(last); err != nil || b <= a {
				return false
			}
		}
		if b >= completions {
			return false
		}
		prev = b
	}
	return s != ""
}

// validatePodFailurePolicy is validatePodFailurePolicy of the batch API.
func validatePodFailurePolicy(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "spec", "restartPolicy"), s.Template.Spec.RestartPolicy, "only \"Never\" is supported when podFailurePolicy is specified"))
	}
	containers := map[string]bool{}
	for _, c := range append(append([]corev1.Container(nil), s.Template.Spec.InitContainers...), s.Template.Spec.Containers...) {
		containers[c.Name] = true
	}
	actions := []string{string(batchv1.PodFailurePolicyActionFailJob), string(batchv1.PodFailurePolicyActionIgnore), string(batchv1.PodFailurePolicyActionCount)}
	for i, r := range s.PodFailurePolicy.Rules {
		rp := p.Child("rules").Index(i)
		switch r.Action {
		case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount:
		case batchv1.PodFailurePolicyActionFailIndex:
			if s.BackoffLimitPerIndex == nil {
				errs = append(errs, field.Forbidden(rp.Child("action"), "may not be FailIndex when backoffLimitPerIndex is not set"))
			}
		default:
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, actions))
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
		if ec := r.OnExitCodes; ec != nil {
			ep := rp.Child("onExitCodes")
			if ec.ContainerName != nil && !containers[*ec.ContainerName] {
				errs = append(errs, field.Invalid(ep.Child("containerName"), *ec.ContainerName, "must be one of the container or initContainer names in the pod template"))
			}
			if ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn && ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn {
				errs = append(errs, field.NotSupported(ep.Child("operator"), ec.Operator, []string{string(batchv1.PodFailurePolicyOnExitCodesOpIn), string(batchv1.PodFailurePolicyOnExitCodesOpNotIn)}))
			}
			if len(ec.Values) == 0 {
				errs = append(errs, field.Invalid(ep.Child("values"), ec.Values, "at least one value is required"))
			}
			for j, v := range ec.Values {
				if ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
					errs = append(errs, field.Invalid(ep.Child("values").Index(j), v, "must not be 0 for the In operator"))
				}
				if j > 0 && ec.Values[j-1] >= v {
					errs = append(errs, field.Invalid(ep.Child("values").Index(j), v, "must be ordered"))
				}
			}
		}
	}
	return errs
}

// validateBatchOrStatefulSet validates the workload kinds of this file; ok
// is false for another kind.
func validateBatchOrStatefulSet(w *Workload) (field.ErrorList, bool) {
	spec := field.NewPath("spec")
	switch o := w.Object.(type) {
	case *batchv1.Job:
		errs := apimachineryvalidation.ValidateObjectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
		errs = append(errs, validateJobSpec(&o.Spec, spec)...)
		return append(errs, checkUnsupportedJob(o)...), true
	case *batchv1.CronJob:
		errs := apimachineryvalidation.ValidateObjectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
		if len(o.Name) > 52 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), o.Name, "must be no more than 52 characters"))
		}
		if o.Spec.Schedule == "" {
			errs = append(errs, field.Required(spec.Child("schedule"), ""))
		} else if _, err := ParseSchedule(o.Spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("schedule"), o.Spec.Schedule, err.Error()))
		}
		// ValidateCronJobSpec (pkg/apis/batch/validation): timeZone is a
		// non-empty explicit IANA zone, never with TZ in the schedule.
		if tz := o.Spec.TimeZone; tz != nil {
			p := spec.Child("timeZone")
			switch _, err := time.LoadLocation(*tz); {
			case *tz == "":
				errs = append(errs, field.Invalid(p, *tz, "timeZone must be nil or non-empty string"))
			case strings.EqualFold(*tz, "Local"):
				errs = append(errs, field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
			case err != nil:
				errs = append(errs, field.Invalid(p, *tz, "unknown time zone "+*tz))
			}
			if strings.Contains(o.Spec.Schedule, "TZ") {
				errs = append(errs, field.Invalid(spec.Child("schedule"), o.Spec.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
			}
		}
		switch o.Spec.ConcurrencyPolicy {
		case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
		default:
			errs = append(errs, field.NotSupported(spec.Child("concurrencyPolicy"), o.Spec.ConcurrencyPolicy, []string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
		}
		if d := o.Spec.StartingDeadlineSeconds; d != nil {
			errs = append(errs, validateNonnegative(*d, spec.Child("startingDeadlineSeconds"))...)
		}
		errs = append(errs, validateJobSpec(&o.Spec.JobTemplate.Spec, spec.Child("jobTemplate", "spec"))...)
		return errs, true
	}
	return nil, false
}

// ParseSchedule parses a CronJob's schedule as the CronJob controller does
// (cron.ParseStandard of github.com/robfig/cron/v3: five fields, or a
// descriptor such as @hourly, with an optional CRON_TZ= or TZ= prefix).
func ParseSchedule(s string) (cron.Schedule, error) {
	return cron.ParseStandard(s)
}

// validateVolumeClaimTemplates validates each claim template as the claim
// `<template>-<set>-0` it becomes.
func validateVolumeClaimTemplates(o *appsv1.StatefulSet, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range o.Spec.VolumeClaimTemplates {
		t := &o.Spec.VolumeClaimTemplates[i]
		tp := p.Index(i)
		if t.Name == "" {
			errs = append(errs, field.Required(tp.Child("metadata", "name"), ""))
			continue
		}
		c := StatefulSetClaim(o, t, 0)
		for _, e := range ValidateClaim(c) {
			e := *e
			if e.Field == "metadata.name" {
				e.Field = tp.Child("metadata", "name").String()
			} else {
				e.Field = tp.String() + "." + e.Field
			}
			errs = append(errs, &e)
		}
	}
	return errs
}

// StatefulSetClaimName is a claim template's claim for ordinal i:
// `<template>-<set>-<i>` (getPersistentVolumeClaimName).
func StatefulSetClaimName(set *appsv1.StatefulSet, t *corev1.PersistentVolumeClaim, i int) string {
	return fmt.Sprintf("%s-%s-%d", t.Name, set.Name, i)
}

// StatefulSetClaim is the claim a template makes for ordinal i
// (getPersistentVolumeClaims): the template named for the ordinal, in the
// set's namespace, with the set's selector labels.
func StatefulSetClaim(set *appsv1.StatefulSet, t *corev1.PersistentVolumeClaim, i int) *corev1.PersistentVolumeClaim {
	c := t.DeepCopy()
	c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	c.Name = StatefulSetClaimName(set, t, i)
	c.Namespace = set.Namespace
	if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for k, v := range set.Spec.Selector.MatchLabels {
			c.Labels[k] = v
		}
	}
	c.UID, c.ResourceVersion, c.CreationTimestamp = "", "", metav1.Time{}
	SetClaimDefaults(c)
	return c
}

// StatefulSetClaimVolumes points a pod's volumes named after the claim
// templates at the ordinal's claims, adding those the template lacks
// (updateStorage).
func StatefulSetClaimVolumes(set *appsv1.StatefulSet, spec *corev1.PodSpec, i int) {
	for ti := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[ti]
		v := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: StatefulSetClaimName(set, t, i)}}}
		found := false
		for vi := range spec.Volumes {
			if spec.Volumes[vi].Name == t.Name {
				spec.Volumes[vi] = v
				found = true
			}
		}
		if !found {
			spec.Volumes = append(spec.Volumes, v)
		}
	}
}

// JobFromCronJob is a Job made from a CronJob's jobTemplate, named name,
// owned by the CronJob, with annotations added to the template's
// (kubectl create job --from's cronjob.kubernetes.io/instantiate=manual, the
// CronJob controller's scheduled timestamp): getJobFromTemplate2 and
// kubectl's createJobFromCronJob.
func JobFromCronJob(cj *batchv1.CronJob, name string, annotations map[string]string) *batchv1.Job {
	ann := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		ann[k] = v
	}
	for k, v := range annotations {
		ann[k] = v
	}
	lbl := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		lbl[k] = v
	}
	yes := true
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace, Annotations: ann, Labels: lbl,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	JobTemplateLabels(job)
	return job
}
