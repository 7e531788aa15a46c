package store

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// The apps/v1 workload kinds: objects whose pods the controllers process
// (package controllers) makes and keeps. Their status is the controllers';
// an apply keeps it and bumps metadata.generation when the spec changed, as
// the API server's update strategies for them do.
var (
	DeploymentKind = &Kind{
		Name: "Deployment", Plural: "deployments", Aliases: []string{"deployment", "deploy", "deployment.apps", "deployments.apps"},
		Group: "apps", Version: "v1",
		newObject: func() object { return &appsv1.Deployment{} },
		same: func(a, b object) bool {
			x, y := a.(*appsv1.Deployment), b.(*appsv1.Deployment)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*appsv1.Deployment), obj.(*appsv1.Deployment)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
	ReplicaSetKind = &Kind{
		Name: "ReplicaSet", Plural: "replicasets", Aliases: []string{"replicaset", "rs", "replicaset.apps", "replicasets.apps"},
		Group: "apps", Version: "v1",
		newObject: func() object { return &appsv1.ReplicaSet{} },
		same: func(a, b object) bool {
			x, y := a.(*appsv1.ReplicaSet), b.(*appsv1.ReplicaSet)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*appsv1.ReplicaSet), obj.(*appsv1.ReplicaSet)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
	DaemonSetKind = &Kind{
		Name: "DaemonSet", Plural: "daemonsets", Aliases: []string{"daemonset", "ds", "daemonset.apps", "daemonsets.apps"},
		Group: "apps", Version: "v1",
		newObject: func() object { return &appsv1.DaemonSet{} },
		same: func(a, b object) bool {
			x, y := a.(*appsv1.DaemonSet), b.(*appsv1.DaemonSet)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*appsv1.DaemonSet), obj.(*appsv1.DaemonSet)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
)

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

// The batch/v1 kinds and StatefulSet: Jobs and StatefulSets are run by the
// controllers process; a CronJob is stored (its schedule is not run, see
// README) and `create job --from=cronjob/x` makes a Job of it.
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
			x, y := a.(*appsv1.StatefulSet), b.(*appsv1.StatefulSet)
			return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
		},
		immutable: func(object) bool { return false },
		update: func(old, obj object) {
			o, n := old.(*appsv1.StatefulSet), obj.(*appsv1.StatefulSet)
			n.Status = o.Status
			n.Generation = nextGeneration(o.Generation, !reflect.DeepEqual(o.Spec, n.Spec))
		},
	}
)
