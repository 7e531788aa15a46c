//go:build !podrun_lean

package podspec

import (
	"fmt"
	"reflect"

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

// Workload is an object whose pods a controller makes from a pod template
// (Deployment, ReplicaSet, DaemonSet): decoded and defaulted here, validated
// by Plans, stored by apply and run by the controllers process.
type Workload struct {
	Kind   string        // "Deployment"
	Object metav1.Object // *appsv1.Deployment, …
	Origin Origin        // where it is in its manifest (Template set)
	// Warnings are those of its pod template, as for a pod (set by Plans).
	Warnings []string
	// Set are the fields of KeptFields the manifest sets, even to
	// their zero value (paused: false), which the typed object cannot tell.
	Set []string
}

// Template returns the pod template of a workload object (nil for another object).
func Template(obj any) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	return nil
}

// PodFromTemplate is the pod a controller makes from a template: the
// template's metadata and spec, named name, in namespace, defaulted
// (controller.GetPodFromTemplate).
func PodFromTemplate(tmpl *corev1.PodTemplateSpec, namespace, name string) *corev1.Pod {
	t := tmpl.DeepCopy()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: t.Labels, Annotations: t.Annotations, Finalizers: t.Finalizers},
		Spec:       t.Spec,
	}
	SetDefaults(pod)
	admitPod(pod)
	return pod
}

// admitPod is what the API server's admission plugins do to a pod being
// created, but the Priority plugin's, which needs the cluster's
// PriorityClasses (AdmitPriority, run by apply and the controllers): a pod
// template is defaulted, never admitted.
func admitPod(pod *corev1.Pod) {
	AdmitServiceAccount(pod)
	AdmitDefaultTolerationSeconds(pod)
}

// defaultTemplate applies the pod defaults to a template, as the API server
// defaults a PodTemplateSpec inside a workload.
func defaultTemplate(tmpl *corev1.PodTemplateSpec, namespace string) {
	t := tmpl.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "x"}, Spec: t.Spec}
	SetDefaults(pod)
	tmpl.Spec = pod.Spec
}

func (l *loader) addWorkload(kind string, meta *metav1.ObjectMeta, obj metav1.Object, origin Origin, tmpl *corev1.PodTemplateSpec) {
	prepareForCreate(meta)
	if meta.Namespace == "" {
		meta.Namespace = DefaultNamespace
	}
	defaultTemplate(tmpl, meta.Namespace)
	origin.Template = true
	w := &Workload{Kind: kind, Object: obj, Origin: origin, Set: []string{}}
	for _, f := range KeptFields {
		if l.tree.node(origin.Prefix+f) != nil {
			w.Set = append(w.Set, f)
		}
	}
	l.m.Workloads = append(l.m.Workloads, w)
}

// KeptFields are the fields other commands change (`rollout pause`) that an
// apply keeps unless its configuration holds them (store.PutApplied).
var KeptFields = []string{"spec.paused"}

func int32p(v int32) *int32 { return &v }

// The rows of the loader's kinds table for apps/v1, with the defaults of
// k8s.io/kubernetes pkg/apis/apps/v1/defaults.go.
var workloadKinds = map[string]kindInfo{
	"Deployment": {"apps/v1", reflect.TypeOf(appsv1.Deployment{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*appsv1.Deployment)
		o.Status = appsv1.DeploymentStatus{}
		SetDeploymentDefaults(o)
		l.addWorkload("Deployment", &o.ObjectMeta, o, origin, &o.Spec.Template)
	}},
	"ReplicaSet": {"apps/v1", reflect.TypeOf(appsv1.ReplicaSet{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*appsv1.ReplicaSet)
		o.Status = appsv1.ReplicaSetStatus{}
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = int32p(1)
		}
		l.addWorkload("ReplicaSet", &o.ObjectMeta, o, origin, &o.Spec.Template)
	}},
	"DaemonSet": {"apps/v1", reflect.TypeOf(appsv1.DaemonSet{}), func(l *loader, obj runtime.Object, origin Origin) {
		o := obj.(*appsv1.DaemonSet)
		o.Status = appsv1.DaemonSetStatus{}
		SetDaemonSetDefaults(o)
		l.addWorkload("DaemonSet", &o.ObjectMeta, o, origin, &o.Spec.Template)
	}},
}

// SetDeploymentDefaults is SetDefaults_Deployment (apps/v1).
func SetDeploymentDefaults(o *appsv1.Deployment) {
	if o.Spec.Replicas == nil {
		o.Spec.Replicas = int32p(1)
	}
	st := &o.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			st.RollingUpdate.MaxUnavailable = &v
		}
		if st.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			st.RollingUpdate.MaxSurge = &v
		}
	}
	if o.Spec.RevisionHistoryLimit == nil {
		o.Spec.RevisionHistoryLimit = int32p(10)
	}
	if o.Spec.ProgressDeadlineSeconds == nil {
		o.Spec.ProgressDeadlineSeconds = int32p(600)
	}
}

// SetDaemonSetDefaults is SetDefaults_DaemonSet (apps/v1).
func SetDaemonSetDefaults(o *appsv1.DaemonSet) {
	st := &o.Spec.UpdateStrategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if st.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			st.RollingUpdate.MaxUnavailable = &v
		}
		if st.RollingUpdate.MaxSurge == nil {
			v := intstr.FromInt32(0)
			st.RollingUpdate.MaxSurge = &v
		}
	}
	if o.Spec.RevisionHistoryLimit == nil {
		o.Spec.RevisionHistoryLimit = int32p(10)
	}
}

// validateWorkload is the API server's validation of the workload's own
// fields (apps validation: ValidateDeploymentSpec, ValidateReplicaSetSpec,
// ValidateDaemonSetSpec), the pod template aside (Plans validates it as a pod).
func validateWorkload(w *Workload) field.ErrorList {
	if errs, ok := validateBatchOrStatefulSet(w); ok {
		return errs
	}
	spec := field.NewPath("spec")
	var meta *metav1.ObjectMeta
	var selector *metav1.LabelSelector
	var tmpl *corev1.PodTemplateSpec
	var replicas *int32
	var errs field.ErrorList
	switch o := w.Object.(type) {
	case *appsv1.Deployment:
		meta, selector, tmpl, replicas = &o.ObjectMeta, o.Spec.Selector, &o.Spec.Template, o.Spec.Replicas
		errs = append(errs, validateDeploymentStrategy(o, spec.Child("strategy"))...)
		if o.Spec.RevisionHistoryLimit != nil {
			errs = append(errs, validateNonnegative(int64(*o.Spec.RevisionHistoryLimit), spec.Child("revisionHistoryLimit"))...)
		}
		if d := o.Spec.ProgressDeadlineSeconds; d != nil && *d <= o.Spec.MinReadySeconds {
			errs = append(errs, field.Invalid(spec.Child("progressDeadlineSeconds"), *d, "must be greater than minReadySeconds"))
		}
		errs = append(errs, validateNonnegative(int64(o.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	case *appsv1.ReplicaSet:
		meta, selector, tmpl, replicas = &o.ObjectMeta, o.Spec.Selector, &o.Spec.Template, o.Spec.Replicas
		errs = append(errs, validateNonnegative(int64(o.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
	case *appsv1.DaemonSet:
		meta, selector, tmpl = &o.ObjectMeta, o.Spec.Selector, &o.Spec.Template
		errs = append(errs, validateNonnegative(int64(o.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
		if st := o.Spec.UpdateStrategy; st.Type != appsv1.RollingUpdateDaemonSetStrategyType && st.Type != appsv1.OnDeleteDaemonSetStrategyType {
			errs = append(errs, field.NotSupported(spec.Child("updateStrategy", "type"), st.Type, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)}))
		}
	case *appsv1.StatefulSet:
		meta, selector, tmpl, replicas = &o.ObjectMeta, o.Spec.Selector, &o.Spec.Template, o.Spec.Replicas
		errs = append(errs, validateNonnegative(int64(o.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
		if p := o.Spec.PodManagementPolicy; p != appsv1.OrderedReadyPodManagement && p != appsv1.ParallelPodManagement {
			errs = append(errs, field.NotSupported(spec.Child("podManagementPolicy"), p, []string{string(appsv1.OrderedReadyPodManagement), string(appsv1.ParallelPodManagement)}))
		}
		if st := o.Spec.UpdateStrategy.Type; st != appsv1.RollingUpdateStatefulSetStrategyType && st != appsv1.OnDeleteStatefulSetStrategyType {
			errs = append(errs, field.NotSupported(spec.Child("updateStrategy", "type"), st, []string{string(appsv1.RollingUpdateStatefulSetStrategyType), string(appsv1.OnDeleteStatefulSetStrategyType)}))
		}
		if o.Spec.Ordinals != nil {
			errs = append(errs, validateNonnegative(int64(o.Spec.Ordinals.Start), spec.Child("ordinals", "start"))...)
		}
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			errs = append(errs, validateNonnegative(int64(*ru.Partition), spec.Child("updateStrategy", "rollingUpdate", "partition"))...)
		}
		// validateRollingUpdateStatefulSet (MaxUnavailableStatefulSet).
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			p := spec.Child("updateStrategy", "rollingUpdate", "maxUnavailable")
			if err := validIntOrPercent(ru.MaxUnavailable); err != "" {
				errs = append(errs, field.Invalid(p, ru.MaxUnavailable.String(), err))
			} else if isZero(ru.MaxUnavailable) {
				errs = append(errs, field.Invalid(p, ru.MaxUnavailable.String(), "cannot be 0"))
			} else if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, 100, false); err == nil && ru.MaxUnavailable.Type == intstr.String && v > 100 {
				errs = append(errs, field.Invalid(p, ru.MaxUnavailable.String(), "must not be greater than 100%"))
			}
		}
		if o.Spec.ServiceName != "" {
			for _, msg := range validation.IsDNS1123Label(o.Spec.ServiceName) {
				errs = append(errs, field.Invalid(spec.Child("serviceName"), o.Spec.ServiceName, msg))
			}
		}
		errs = append(errs, validateVolumeClaimTemplates(o, spec.Child("volumeClaimTemplates"))...)
	default:
		return nil
	}
	errs = append(apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata")), errs...)
	if replicas != nil {
		errs = append(errs, validateNonnegative(int64(*replicas), spec.Child("replicas"))...)
	}
	if selector == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		sel, err := metav1.LabelSelectorAsSelector(selector)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(spec.Child("selector"), selector, err.Error()))
		case sel.Empty():
			errs = append(errs, field.Invalid(spec.Child("selector"), selector, "empty selector is invalid for deployment"))
		case !sel.Matches(labels.Set(tmpl.Labels)):
			errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
		}
	}
	if rp := tmpl.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(spec.Child("template", "spec", "restartPolicy"), rp, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(spec.Child("template", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

func validateDeploymentStrategy(o *appsv1.Deployment, p *field.Path) field.ErrorList {
	st := o.Spec.Strategy
	var errs field.ErrorList
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		ru := st.RollingUpdate
		for _, f := range []struct {
			name string
			v    *intstr.IntOrString
		}{{"maxUnavailable", ru.MaxUnavailable}, {"maxSurge", ru.MaxSurge}} {
			if err := validIntOrPercent(f.v); err != "" {
				errs = append(errs, field.Invalid(p.Child("rollingUpdate", f.name), f.v.String(), err))
			}
		}
		if len(errs) == 0 && isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
			errs = append(errs, field.Invalid(p.Child("rollingUpdate", "maxUnavailable"), ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
		}
		if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, 100, false); err == nil && ru.MaxUnavailable.Type == intstr.String && v > 100 {
			errs = append(errs, field.Invalid(p.Child("rollingUpdate", "maxUnavailable"), ru.MaxUnavailable.String(), "must not be greater than 100%"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), st.Type, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return errs
}

func validIntOrPercent(v *intstr.IntOrString) string {
	if v == nil {
		return ""
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return "must be greater than or equal to 0"
		}
		return ""
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, false)
	if err != nil {
		return "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
	}
	if n < 0 {
		return "must be greater than or equal to 0"
	}
	return ""
}

func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return true
	}
	n, _ := intstr.GetScaledValueFromIntOrPercent(v, 100, false)
	return n == 0
}

// workloadErrors validates a workload and its template as a pod, with the
// paths the user wrote.
func workloadErrors(w *Workload) field.ErrorList {
	var fe field.ErrorList
	for _, e := range validateWorkload(w) {
		e := *e
		e.Field = w.Origin.Prefix + e.Field
		fe = append(fe, &e)
	}
	pod := workloadPod(w)
	for _, e := range Validate(pod) {
		if e.Field == "spec.restartPolicy" || e.Field == "metadata.name" {
			continue // said above (the pods' names are the controller's), as the workload's validation does
		}
		e := *e
		e.Field = w.Origin.SourcePath(e.Field)
		fe = append(fe, &e)
	}
	return dedupFieldErrors(fe)
}

// PlanFor validates a pod a controller made and returns its plan, with the
// ConfigMaps and Secrets of its namespace: the same validation and plan as
// for a pod of a manifest.
func PlanFor(pod *corev1.Pod, configMaps map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) (*Plan, error) {
	m := &Manifest{Source: pod.Name, Pods: []*corev1.Pod{pod}, Origins: []Origin{{Kind: "Pod"}}}
	for _, cm := range configMaps {
		m.ConfigMaps = append(m.ConfigMaps, cm)
	}
	for _, s := range secrets {
		m.Secrets = append(m.Secrets, s)
	}
	plans, err := m.Plans()
	if err != nil {
		return nil, err
	}
	if len(plans) != 1 {
		return nil, fmt.Errorf("pod %s: no plan", pod.Name)
	}
	return plans[0], nil
}

// workloadPod is a pod as the workload's controller makes it from its
// template, to validate: a StatefulSet's with its claims' volumes.
func workloadPod(w *Workload) *corev1.Pod {
	pod := PodFromTemplate(Template(w.Object), w.Object.GetNamespace(), w.Object.GetName()+"-xxxxx")
	if set, ok := w.Object.(*appsv1.StatefulSet); ok {
		StatefulSetClaimVolumes(set, &pod.Spec, 0)
	}
	return pod
}
