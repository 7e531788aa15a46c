package store

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/cgroups"
)

// DescribeInfo is what `podrun describe` shows besides the Pod object.
type DescribeInfo struct {
	Requests, Limits corev1.ResourceList
	CgroupPath       string
	Events           []Event
}

// Describe gathers the pod's effective resources, cgroup and events.
func Describe(l Layout, rec *Record) (*DescribeInfo, error) {
	// The pod's cgroup is where its settings put it (its parent and its
	// driver's naming: a slice under systemd), whatever the flags now.
	pl := rec.PodLayout(l)
	info := &DescribeInfo{CgroupPath: cgroups.PodPath(pl.CgroupParent, string(rec.Pod.UID), pl.CgroupDriver)}
	if plan, err := rec.Plan(); err == nil {
		info.Requests, info.Limits = plan.Requests, plan.Limits
	}
	ev, err := ReadEvents(rec.Paths)
	if err != nil {
		return nil, err
	}
	info.Events = ev
	return info, nil
}
