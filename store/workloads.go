//go:build !podrun_lean

package store

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	Kinds = append(Kinds, DeploymentKind, ReplicaSetKind, DaemonSetKind, StatefulSetKind, JobKind, CronJobKind, ControllerRevisionKind)
}

// The apps/v1 workload kinds: objects whose pods the controllers process
// (package controllers) makes and keeps. Their status is the controllers';
// an apply keeps it and bumps metadata.generation when the spec changed, as
// the API server's update strategies for them do.
var (
	DeploymentKind = WorkloadKind("Deployment", "deployments", "apps", "v1", []string{"deployment", "deploy"},
		func() Object { return &appsv1.Deployment{} })
	ReplicaSetKind = WorkloadKind("ReplicaSet", "replicasets", "apps", "v1", []string{"replicaset", "rs"},
		func() Object { return &appsv1.ReplicaSet{} })
	DaemonSetKind = WorkloadKind("DaemonSet", "daemonsets", "apps", "v1", []string{"daemonset", "ds"},
		func() Object { return &appsv1.DaemonSet{} })
)

// WorkloadKind is the store's kind for an API type with Spec and Status
// fields that a controller keeps: two objects are the same when their specs,
// labels and annotations are; an apply keeps the stored status and makes the
// generation 1 on create and +1 when the spec changed (the registries'
// PrepareForCreate and PrepareForUpdate). kubectl's names for it are its
// singular, plural (also with ".group") and short names.
func WorkloadKind(name, plural, group, version string, aliases []string, newObject func() Object) *Kind {
	field := func(o object, f string) reflect.Value { return reflect.ValueOf(o).Elem().FieldByName(f) }
	singular := aliases[0]
	return &Kind{
		Name: name, Plural: plural, Group: group, Version: version,
		Aliases:   append(aliases, singular+"."+group, plural+"."+group),
		newObject: func() object { return newObject() },
		same: func(a, b object) bool {
			if c, ok := b.(interface{ DeepCopyObject() runtime.Object }); ok {
				b = c.DeepCopyObject().(object)
				keepControllerFields(a, b)
			}
			return reflect.DeepEqual(field(a, "Spec").Interface(), field(b, "Spec").Interface()) && sameMeta(a, b)
		},
		immutable: func(object) bool { return false },
		keepLive:  keepLiveFields,
		update: func(old, obj object) {
			keepControllerFields(old, obj)
			field(obj, "Status").Set(field(old, "Status"))
			changed := !reflect.DeepEqual(field(old, "Spec").Interface(), field(obj, "Spec").Interface())
			obj.SetGeneration(nextGeneration(old.GetGeneration(), changed))
		},
	}
}

// keepControllerFields carries over to an applied object what the
// controllers and the rollout commands set and a manifest does not hold, as
// kubectl apply's three-way merge keeps fields absent from the last applied
// configuration: the deployment controller's revision annotations, the pod
// template's restartedAt of `rollout restart` of a Deployment, DaemonSet or
// StatefulSet (a Deployment's spec.paused of `rollout pause`: keepLiveFields).
func keepControllerFields(old, obj object) {
	for _, k := range []string{"deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision-history"} {
		if v, ok := old.GetAnnotations()[k]; ok {
			if _, set := obj.GetAnnotations()[k]; !set {
				a := obj.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a[k] = v
				obj.SetAnnotations(a)
			}
		}
	}
	// rollout restart of a Deployment, DaemonSet or StatefulSet.
	ot, nt := podTemplateOf(old), podTemplateOf(obj)
	if ot == nil || nt == nil {
		return
	}
	const restartedAt = "kubectl.kubernetes.io/restartedAt"
	if v, ok := ot.Annotations[restartedAt]; ok {
		if _, set := nt.Annotations[restartedAt]; !set {
			if nt.Annotations == nil {
				nt.Annotations = map[string]string{}
			}
			nt.Annotations[restartedAt] = v
		}
	}
}

// podTemplateOf is the pod template of a Deployment, DaemonSet or
// StatefulSet (nil for another object).
func podTemplateOf(o object) *corev1.PodTemplateSpec {
	switch v := o.(type) {
	case *appsv1.Deployment:
		return &v.Spec.Template
	case *appsv1.DaemonSet:
		return &v.Spec.Template
	case *appsv1.StatefulSet:
		return &v.Spec.Template
	}
	return nil
}

// keepLiveFields carries over to an applied object the KeptFields that its
// apply configuration does not own (owned: this or the last applied
// manifest set them), as kubectl apply's three-way merge leaves a field that
// neither the last applied configuration nor the new one has.
func keepLiveFields(old, obj object, owned map[string]bool) {
	o, ok1 := old.(*appsv1.Deployment)
	n, ok2 := obj.(*appsv1.Deployment)
	if ok1 && ok2 && !owned["spec.paused"] {
		n.Spec.Paused = o.Spec.Paused
	}
}

// nextGeneration is metadata.generation after an update: +1 when the spec
// changed (the registries' PrepareForUpdate).
func nextGeneration(old int64, specChanged bool) int64 {
	if old == 0 {
		old = 1
	}
	if specChanged {
		return old + 1
	}
	return old
}

// The batch/v1 kinds and StatefulSet: Jobs, CronJobs (their schedule) and
// StatefulSets are run by the controllers process; `create job
// --from=cronjob/x` makes a Job of a CronJob.
var (
	JobKind = &Kind{
		Name: "Job", Plural: "jobs", Aliases: []string{"job", "job.batch", "jobs.batch"},
		Group: "batch", Version: "v1",
		newObject: func() object { return &batchv1.Job{} },
		same: func(a, b object) bool {
			x, y := a.(*batchv1.Job), b.(*batchv1.Job)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*batchv1.Job), obj.(*batchv1.Job)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
	CronJobKind = &Kind{
		Name: "CronJob", Plural: "cronjobs", Aliases: []string{"cronjob", "cj", "cronjob.batch", "cronjobs.batch"},
		Group: "batch", Version: "v1",
		newObject: func() object { return &batchv1.CronJob{} },
		same: func(a, b object) bool {
			x, y := a.(*batchv1.CronJob), b.(*batchv1.CronJob)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*batchv1.CronJob), obj.(*batchv1.CronJob)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
	StatefulSetKind = &Kind{
		Name: "StatefulSet", Plural: "statefulsets", Aliases: []string{"statefulset", "sts", "statefulset.apps", "statefulsets.apps"},
		Group: "apps", Version: "v1",
		newObject: func() object { return &appsv1.StatefulSet{} },
		same: func(a, b object) bool {
			x, y := a.(*appsv1.StatefulSet), b.(*appsv1.StatefulSet).DeepCopy()
			keepControllerFields(x, y)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*appsv1.StatefulSet), obj.(*appsv1.StatefulSet)
			keepControllerFields(o, n)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
)

// ControllerRevisionKind is apps/v1 ControllerRevision: the StatefulSet and
// DaemonSet controllers' record of each pod template they ran (its data the
// template as a strategic merge patch, as history.NewControllerRevision
// stores it), owned by the set; `rollout history` lists them and `rollout
// undo` applies one's template. Their content does not change once made
// but for the revision number (the controller's Update of a re-used
// revision).
var ControllerRevisionKind = &Kind{
	Name: "ControllerRevision", Plural: "controllerrevisions", Aliases: []string{"controllerrevision", "controllerrevision.apps", "controllerrevisions.apps"},
	Group: "apps", Version: "v1",
	newObject: func() object { return &appsv1.ControllerRevision{} },
	same: func(a, b object) bool {
		x, y := a.(*appsv1.ControllerRevision), b.(*appsv1.ControllerRevision)
		return reflect.DeepEqual(x.Data, y.Data) && x.Revision == y.Revision && sameMeta(x, y)
	},
	immutable: func(object) bool { return false },
}
