package controllers

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
)

var replicaSetKind = &Kind{Store: store.ReplicaSetKind, Sync: syncReplicaSet}

// burstReplicas is the ReplicaSet controller's cap on pods made or deleted
// in one sync.
const burstReplicas = 500

// syncReplicaSet is the ReplicaSet controller's syncReplicaSet and
// manageReplicas (pkg/controller/replicaset/replica_set.go): finished pods
// are deleted (podrun has no pod garbage collector, see DeletePod's backoff),
// missing replicas made, extra ones deleted in ActivePods order, and the
// status (replicas, readyReplicas, availableReplicas) written. Pods are
// claimed first (ClaimPods): orphans matching the selector adopted, owned
// ones that no longer match released.
func syncReplicaSet(c *Context, obj store.Object) error {
	rs := obj.(*appsv1.ReplicaSet)
	if err := c.ClaimPods(store.ReplicaSetKind, rs, rs.Spec.Selector); err != nil {
		return err
	}
	active := c.ReplacingFinished(rs.UID)
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	diff := len(active) - int(want)
	var err error
	switch {
	case diff < 0:
		for range min(-diff, burstReplicas) {
			var p *corev1.Pod
			p, err = c.CreatePod(store.ReplicaSetKind, rs, &rs.Spec.Template, rs.Name+"-")
			if err != nil || p == nil {
				break
			}
			active = append(active, p)
		}
	case diff > 0:
		for _, p := range PodsToDelete(active, min(diff, burstReplicas)) {
			c.DeletePod(p, rs.UID, false)
			active = remove(active, p.UID)
		}
	}
	st := c.replicaSetStatus(rs, active)
	if st.AvailableReplicas == want {
		c.ctrl.resetBackoff(rs.UID)
	}
	if uerr := c.SetStatus(store.ReplicaSetKind, rs, st); uerr != nil && err == nil {
		err = uerr
	}
	return err
}

// ReplacingFinished returns the owner's active pods and deletes its finished
// ones, so that they are replaced (a Failed one backs the owner off): the
// ReplicaSet and DaemonSet controllers' way with pods that must keep running.
func (c *Context) ReplacingFinished(uid types.UID) []*corev1.Pod {
	var active []*corev1.Pod
	for _, p := range c.OwnedPods(uid) {
		switch {
		case p.DeletionTimestamp != nil:
			// Being deleted (its end, Failed or Succeeded, is no failure
			// of the owner's): neither active nor deleted again.
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			c.DeletePod(p, uid, p.Status.Phase == corev1.PodFailed)
		default:
			active = append(active, p)
		}
	}
	return active
}

func remove(pods []*corev1.Pod, uid types.UID) []*corev1.Pod {
	out := pods[:0:0]
	for _, p := range pods {
		if p.UID != uid {
			out = append(out, p)
		}
	}
	return out
}

// replicaSetStatus is calculateStatus (replica_set_utils.go).
func (c *Context) replicaSetStatus(rs *appsv1.ReplicaSet, active []*corev1.Pod) appsv1.ReplicaSetStatus {
	st := appsv1.ReplicaSetStatus{Replicas: int32(len(active)), ObservedGeneration: rs.Generation}
	// terminatingReplicas (DeploymentReplicaSetTerminatingReplicas, beta and
	// on since 1.35): its pods going away that have not finished
	// (controller.CountTerminatingPods).
	terminating := int32(0)
	for _, p := range c.AllOwnedPods(rs.UID) {
		if (p.DeletionTimestamp != nil || c.ctrl.isDeleting(p.UID)) && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			terminating++
		}
	}
	st.TerminatingReplicas = &terminating
	tmplLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	for _, p := range active {
		if tmplLabels.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if IsPodReady(p) {
			st.ReadyReplicas++
			if c.IsPodAvailable(p, rs.Spec.MinReadySeconds) {
				st.AvailableReplicas++
			}
		}
	}
	return st
}

// PodsToDelete picks n pods to delete when scaling down, in the order of the
// ReplicaSet controller's getPodsToDelete (controller.ActivePods, simplified
// for one node): not yet running before running, not ready before ready,
// ready for less time before longer, more restarts before fewer, newer
// before older.
func PodsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	s := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(s, func(i, j int) bool { return activeLess(s[i], s[j]) })
	if n > len(s) {
		n = len(s)
	}
	return s[:n]
}

func activeLess(a, b *corev1.Pod) bool {
	rank := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if ra, rb := rank[a.Status.Phase], rank[b.Status.Phase]; ra != rb {
		return ra < rb
	}
	if ra, rb := IsPodReady(a), IsPodReady(b); ra != rb {
		return !ra
	}
	if IsPodReady(a) {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(&tb) {
			return tb.Before(&ta) // ready for less time first
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

func readySince(p *corev1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

func (ct *controllers) resetBackoff(uid types.UID) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	delete(ct.backoff, uid)
}

// ClaimPods is the ControllerRefManager's ClaimPods
// (pkg/controller/controller_ref_manager.go) over the pass's pods of the
// owner's namespace: an active pod with no controller whose labels match
// the selector is adopted (the owner's controller ownerReference added); a
// pod the owner controls whose labels no longer match is released (that
// ownerReference removed). Pods being deleted are neither adopted nor
// released. The pass's view of the pods follows.
func (c *Context) ClaimPods(k *store.Kind, owner store.Object, selector *metav1.LabelSelector) error {
	return c.ClaimPodsFiltered(k, owner, selector, nil)
}

// ClaimPodsFiltered is ClaimPods with the controllers' filter of the pods
// they may adopt (a StatefulSet's isMemberOf: `<set>-<ordinal>` only).
func (c *Context) ClaimPodsFiltered(k *store.Kind, owner store.Object, selector *metav1.LabelSelector, filter func(*corev1.Pod) bool) error {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return err
	}
	if selector == nil || sel.Empty() {
		return nil // validation requires a selector; an empty one claims nothing
	}
	for _, p := range c.pods {
		if p.Namespace != owner.GetNamespace() || p.DeletionTimestamp != nil {
			continue
		}
		ref := metav1.GetControllerOf(p)
		matches := sel.Matches(labels.Set(p.Labels))
		var change func([]metav1.OwnerReference) []metav1.OwnerReference
		switch {
		case ref != nil && ref.UID == owner.GetUID() && !matches:
			// ReleasePod
			change = func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				var out []metav1.OwnerReference
				for _, r := range refs {
					if r.UID != owner.GetUID() {
						out = append(out, r)
					}
				}
				return out
			}
		case ref == nil && matches && IsPodActive(p) && (filter == nil || filter(p)):
			// AdoptPod
			change = func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				for _, r := range refs {
					if ref := r; ref.Controller != nil && *ref.Controller {
						return refs // claimed meanwhile
					}
				}
				return append(refs, ControllerRef(k, owner))
			}
		default:
			continue
		}
		refs, err := c.L.UpdatePodOwners(p.Namespace, p.Name, p.UID, change)
		if err != nil {
			c.Log.Warn("claiming pod", "pod", p.Namespace+"/"+p.Name, "owner", k.Name+"/"+owner.GetName(), "err", err)
			continue
		}
		p.OwnerReferences = refs
		if ref == nil {
			c.Log.Info("adopted pod", "pod", p.Namespace+"/"+p.Name, "owner", k.Name+"/"+owner.GetName())
		} else {
			c.Log.Info("released pod", "pod", p.Namespace+"/"+p.Name, "owner", k.Name+"/"+owner.GetName())
		}
	}
	return nil
}
