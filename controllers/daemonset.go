package controllers

import (
	"os"
	goruntime "runtime"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/store"
)

var daemonSetKind = &Kind{Store: store.DaemonSetKind, Sync: syncDaemonSet}

// nodeLabels are the well-known labels the kubelet puts on its Node, which
// a DaemonSet's nodeSelector is matched against: this host is the one node.
func nodeLabels() labels.Set {
	host, _ := os.Hostname()
	return labels.Set{"kubernetes.io/hostname": host, "kubernetes.io/os": goruntime.GOOS, "kubernetes.io/arch": goruntime.GOARCH}
}

// syncDaemonSet is the DaemonSet controller's manage and rollingUpdate
// (pkg/controller/daemon) for one node, this host: one pod when the
// template's nodeSelector matches the node (tolerations and affinity are not
// looked at), a failed pod deleted and made again with backoff, a pod of an
// older template replaced by the RollingUpdate strategy (maxSurge 0: the old
// pod goes, then the new one comes; maxSurge 1: the new one first, the old
// goes once the new is available; OnDelete: only when deleted), and the
// status written. Pods carry the controller-revision-hash label of the
// template (ComputeHash, where the controller hashes a ControllerRevision).
func syncDaemonSet(c *Context, obj store.Object) error {
	ds := obj.(*appsv1.DaemonSet)
	hash := ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	shouldRun := labels.SelectorFromSet(ds.Spec.Template.Spec.NodeSelector).Matches(nodeLabels())
	// getDaemonPods: orphans the selector matches are adopted, pods whose
	// labels no longer match released.
	if err := c.ClaimPods(store.DaemonSetKind, ds, ds.Spec.Selector); err != nil {
		return err
	}
	inUse := map[string]bool{}
	for _, p := range c.OwnedPods(ds.UID) {
		inUse[ds.Name+"-"+p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
	}
	if _, err := c.syncRevisions(store.DaemonSetKind, ds, &ds.Spec.Template, ds.Name+"-"+hash, ds.Spec.RevisionHistoryLimit, inUse); err != nil {
		return err
	}
	active := c.ReplacingFinished(ds.UID)
	var updated []*corev1.Pod
	for _, p := range active {
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
			updated = append(updated, p)
		}
	}
	sort.SliceStable(active, func(i, j int) bool { return active[i].CreationTimestamp.Before(&active[j].CreationTimestamp) })
	var err error
	create := func() {
		tmpl := ds.Spec.Template.DeepCopy()
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		tmpl.Labels[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(ds.Generation, 10)
		var p *corev1.Pod
		p, err = c.CreatePod(store.DaemonSetKind, ds, tmpl, ds.Name+"-")
		if p != nil {
			active = append(active, p)
			updated = append(updated, p)
		}
	}
	switch {
	case !shouldRun:
		for _, p := range active {
			c.DeletePod(p, ds.UID, false)
		}
		active, updated = nil, nil
	case len(active) == 0:
		create()
	case len(updated) == 0 && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType:
		surge := 0
		if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			surge, _ = intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxSurge, intstr.FromInt32(0)), 1, true)
		}
		if surge > 0 {
			create()
		} else {
			for _, p := range active {
				c.DeletePod(p, ds.UID, false)
			}
			active = nil
		}
	case len(updated) > 0 && len(active) > 1:
		// The new pod is there: the old ones go once it is available
		// (surge), and a node never keeps two pods of the same template.
		if c.IsPodAvailable(updated[0], ds.Spec.MinReadySeconds) {
			for _, p := range active {
				if p.UID != updated[0].UID {
					c.DeletePod(p, ds.UID, false)
				}
			}
			active, updated = updated[:1], updated[:1]
		}
	}
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount}
	if shouldRun {
		st.DesiredNumberScheduled = 1
	}
	if len(active) > 0 {
		st.CurrentNumberScheduled = 1
		if !shouldRun {
			st.NumberMisscheduled = 1
		}
	}
	for _, p := range active {
		if IsPodReady(p) {
			st.NumberReady = 1
			if c.IsPodAvailable(p, ds.Spec.MinReadySeconds) {
				st.NumberAvailable = 1
			}
		}
	}
	if len(updated) > 0 {
		st.UpdatedNumberScheduled = 1
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if st.NumberAvailable == st.DesiredNumberScheduled {
		c.ctrl.resetBackoff(ds.UID)
	}
	if uerr := c.SetStatus(store.DaemonSetKind, ds, st); uerr != nil && err == nil {
		err = uerr
	}
	return err
}
