package store

import (
	corev1 "k8s.io/api/core/v1"
)

// DescribeInfo is what `podrun describe` shows besides the Pod object.
type DescribeInfo struct {
	Requests, Limits corev1.ResourceList
	CgroupPath       string
	Events           []Event
}

// Describe gathers the pod's effective resources, cgroup and events.
func Describe(l Layout, rec *Record) (*DescribeInfo, error) {
	// The pod's cgroup is where its settings put it, whatever the flags now.
	info := &DescribeInfo{CgroupPath: rec.PodLayout(l).CgroupParent + "/pod" + string(rec.Pod.UID)}
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
