package controllers

import (
	"reflect"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

var statefulSetKind = &Kind{Store: store.StatefulSetKind, Sync: syncStatefulSet}

// StatefulSetPodName is a StatefulSet's pod of ordinal i: `<set>-<i>`.
func StatefulSetPodName(set string, i int) string { return set + "-" + strconv.Itoa(i) }

// statefulSetOrdinal is getOrdinal: the ordinal of a pod named
// `<set>-<i>`, -1 for another name.
func statefulSetOrdinal(set string, p *corev1.Pod) int {
	rest, ok := strings.CutPrefix(p.Name, set+"-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return -1
	}
	return i
}

// StatefulSetPodTemplate is the template of a StatefulSet's pod of ordinal
// i (newVersionedStatefulSetPod, initIdentity, updateIdentity): the
// pod-name and pod-index labels, the controller-revision-hash label, the
// hostname `<set>-<i>` and the Service as subdomain, so that
// `<set>-<i>.<service>.<ns>.svc.cluster.local` resolves with a headless
// Service.
func StatefulSetPodTemplate(set *appsv1.StatefulSet, i int, revision string) *corev1.PodTemplateSpec {
	t := set.Spec.Template.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	name := StatefulSetPodName(set.Name, i)
	t.Labels[appsv1.StatefulSetPodNameLabel] = name
	t.Labels[appsv1.PodIndexLabel] = strconv.Itoa(i)
	t.Labels[appsv1.StatefulSetRevisionLabel] = revision
	t.Spec.Hostname = name
	t.Spec.Subdomain = set.Spec.ServiceName
	podspec.StatefulSetClaimVolumes(set, &t.Spec, i)
	return t
}

// ensureClaims makes the ordinal's claims of the volumeClaimTemplates that
// do not exist yet (createPersistentVolumeClaims). They are not owned by the
// set: they outlive its pods and the set itself, as Kubernetes' default
// persistentVolumeClaimRetentionPolicy (Retain) keeps them.
func (c *Context) ensureClaims(set *appsv1.StatefulSet, i int) error {
	for ti := range set.Spec.VolumeClaimTemplates {
		claim := podspec.StatefulSetClaim(set, &set.Spec.VolumeClaimTemplates[ti], i)
		if _, err := c.L.Claim(set.Namespace, claim.Name); err == nil {
			continue
		}
		if _, err := c.L.Put(store.ClaimKind, claim); err != nil {
			return err
		}
		c.Log.Info("created claim", "claim", set.Namespace+"/"+claim.Name, "owner", "StatefulSet/"+set.Name)
	}
	return nil
}

// statefulSetRevision names the set's current template
// (`<set>-<hash>`, the ControllerRevision's name).
func statefulSetRevision(set *appsv1.StatefulSet) string {
	return set.Name + "-" + ComputeHash(&set.Spec.Template, set.Status.CollisionCount)
}

// syncStatefulSet is the StatefulSet controller's updateStatefulSet
// (pkg/controller/statefulset/stateful_set_control.go) for one host: pods
// `<set>-0..N-1` made in ordinal order (OrderedReady: the next once every
// earlier one is Running and Ready; Parallel: all at once), finished pods
// deleted and made again under the same name, pods outside the ordinals deleted
// highest ordinal first (one at a time under OrderedReady), and, under
// RollingUpdate, pods of an old template deleted highest ordinal first, one
// at a time, once all are Ready (they come back with the new one; those
// below the partition come back with the current revision's template).
// Pods and claims are adopted and owned as the controller does (ClaimPods,
// the ControllerRevisions of history.go, the claims' retention policy).
func syncStatefulSet(c *Context, obj store.Object) error {
	set := obj.(*appsv1.StatefulSet)
	revision := statefulSetRevision(set)
	// getPodsForStatefulSet: orphans named as the set's pods are adopted,
	// pods whose labels no longer match released.
	if err := c.ClaimPodsFiltered(store.StatefulSetKind, set, set.Spec.Selector, func(p *corev1.Pod) bool {
		return statefulSetOrdinal(set.Name, p) >= 0
	}); err != nil {
		return err
	}
	inUse := map[string]bool{set.Status.CurrentRevision: true}
	for _, p := range c.OwnedPods(set.UID) {
		inUse[p.Labels[appsv1.StatefulSetRevisionLabel]] = true
	}
	revisions, err := c.syncRevisions(store.StatefulSetKind, set, &set.Spec.Template, revision, set.Spec.RevisionHistoryLimit, inUse)
	if err != nil {
		return err
	}
	start := 0 // spec.ordinals.start: the ordinals are start..start+replicas-1
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	// newVersionedStatefulSetPod: under RollingUpdate an ordinal below the
	// partition is made with the current revision's template.
	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	templateFor := func(i int) *corev1.PodTemplateSpec {
		if cur := revisions[set.Status.CurrentRevision]; i < start+partition && cur != nil && cur.Name != revision {
			if t, err := RevisionTemplate(cur); err == nil {
				old := set.DeepCopy()
				old.Spec.Template = *t
				return StatefulSetPodTemplate(old, i, cur.Name)
			}
		}
		return StatefulSetPodTemplate(set, i, revision)
	}
	replicas := int(replicasOf(set.Spec.Replicas))
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	live := map[int]*corev1.Pod{}
	var condemned []*corev1.Pod
	for _, p := range c.OwnedPods(set.UID) {
		i := statefulSetOrdinal(set.Name, p)
		switch {
		case i < 0:
			continue
		case i < start || i >= start+replicas:
			condemned = append(condemned, p)
		default:
			live[i] = p
		}
	}
	// Ordinals whose pod is still going away cannot be made again yet.
	notDeleting := map[string]bool{}
	for _, p := range c.OwnedPods(set.UID) {
		notDeleting[string(p.UID)] = true
	}
	terminating := map[int]bool{}
	for _, p := range c.AllOwnedPods(set.UID) {
		if i := statefulSetOrdinal(set.Name, p); i >= 0 && !notDeleting[string(p.UID)] {
			terminating[i] = true
		}
	}
	healthy := len(terminating) == 0
	for i := start; i < start+replicas; i++ {
		p := live[i]
		if p != nil && p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			// A finished pod is deleted and made again with its name (one
			// being deleted already goes: stateful_set_control.go).
			c.DeletePod(p, set.UID, p.Status.Phase == corev1.PodFailed)
			delete(live, i)
			terminating[i] = true
			p = nil
		}
		if p == nil {
			healthy = false
			if terminating[i] {
				if ordered {
					break
				}
				continue
			}
			if err = c.ensureClaims(set, i); err != nil {
				break
			}
			var made *corev1.Pod
			made, err = c.CreatePodNamed(store.StatefulSetKind, set, templateFor(i), StatefulSetPodName(set.Name, i))
			if err != nil || made == nil {
				break
			}
			live[i] = made
			if ordered {
				break
			}
			continue
		}
		if !(p.Status.Phase == corev1.PodRunning && IsPodReady(p)) {
			healthy = false
			if ordered {
				break
			}
		}
	}
	// The claims' owners under the retention policy.
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		for i, p := range live {
			c.syncClaimOwners(set, i, p, false)
		}
		for _, p := range condemned {
			c.syncClaimOwners(set, statefulSetOrdinal(set.Name, p), p, true)
		}
	}
	// Scale down: highest ordinal first.
	sort.Slice(condemned, func(a, b int) bool {
		return statefulSetOrdinal(set.Name, condemned[a]) > statefulSetOrdinal(set.Name, condemned[b])
	})
	for _, p := range condemned {
		if ordered && (!healthy || len(terminating) > 0) {
			break
		}
		c.DeletePod(p, set.UID, false)
		terminating[statefulSetOrdinal(set.Name, p)] = true
		if ordered {
			break
		}
	}
	// Rolling update (updateStatefulSetAfterInvariantEstablished with
	// MaxUnavailableStatefulSet, beta and on since Kubernetes 1.37): pods of
	// an old revision are deleted highest ordinal first, as many as
	// maxUnavailable leaves room for once the unavailable ones (not Ready
	// for minReadySeconds, or going away) are counted; under OrderedReady
	// only once every pod is Running and Ready, under Parallel the old
	// revision's unavailable pods first, then available ones within the budget.
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && len(condemned) == 0 && (healthy && len(live) == replicas || !ordered) {
		maxUnavailable := statefulSetMaxUnavailable(set, replicas)
		old := func(p *corev1.Pod) bool { return p.Labels[appsv1.StatefulSetRevisionLabel] != revision }
		unavailable, needing := 0, 0
		isUnavailable := func(i int) bool {
			p := live[i]
			return p == nil || terminating[i] || !(IsPodReady(p) && c.IsPodAvailable(p, set.Spec.MinReadySeconds))
		}
		for i := start; i < start+replicas; i++ {
			if isUnavailable(i) {
				unavailable++
				if p := live[i]; !ordered && p != nil && old(p) && !terminating[i] {
					needing++
				}
			}
		}
		budget := maxUnavailable - unavailable
		if !ordered && needing > 0 {
			// Phase 1: the old revision's pods that are unavailable anyway.
			for i := start + replicas - 1; i >= start+partition; i-- {
				if p := live[i]; p != nil && old(p) && !terminating[i] && isUnavailable(i) {
					c.DeletePod(p, set.UID, false)
					terminating[i] = true
				}
			}
		}
		for i := start + replicas - 1; i >= start+partition && budget > 0; i-- {
			if p := live[i]; p != nil && old(p) && !terminating[i] && (ordered || !isUnavailable(i)) {
				c.DeletePod(p, set.UID, false)
				terminating[i] = true
				budget--
			}
		}
	}
	st := appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CollisionCount: set.Status.CollisionCount, UpdateRevision: revision, CurrentRevision: set.Status.CurrentRevision}
	for _, p := range live {
		st.Replicas++
		if IsPodReady(p) {
			st.ReadyReplicas++
			if c.IsPodAvailable(p, set.Spec.MinReadySeconds) {
				st.AvailableReplicas++
			}
		}
		if p.Labels[appsv1.StatefulSetRevisionLabel] == revision {
			st.UpdatedReplicas++
		}
	}
	if st.UpdatedReplicas == int32(replicas) && st.ReadyReplicas == int32(replicas) || st.CurrentRevision == "" {
		st.CurrentRevision = revision
	}
	for _, p := range live {
		if p.Labels[appsv1.StatefulSetRevisionLabel] == st.CurrentRevision {
			st.CurrentReplicas++
		}
	}
	if uerr := c.UpdateStatus(store.StatefulSetKind, set, func(cur store.Object) bool {
		s := cur.(*appsv1.StatefulSet)
		if reflect.DeepEqual(s.Status, st) {
			return false
		}
		s.Status = st
		return true
	}); uerr != nil && err == nil {
		err = uerr
	}
	return err
}

func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// syncClaimOwners is updateClaimOwnerRefForSetAndPod
// (stateful_set_utils.go) for the claims of ordinal i: under the
// persistentVolumeClaimRetentionPolicy, WhenDeleted Delete makes the set
// an owner of the claims of the ordinals it keeps, WhenScaled Delete makes
// the pod of an ordinal beyond replicas the owner of its claims; the
// garbage collection (collectClaims) removes a claim once its owners are
// gone. A claim another object controls is left alone
// (hasUnexpectedController).
func (c *Context) syncClaimOwners(set *appsv1.StatefulSet, i int, pod *corev1.Pod, scaledDown bool) {
	policy := set.Spec.PersistentVolumeClaimRetentionPolicy
	deleteWithSet, deleteWithPod := false, false
	if policy != nil {
		deleteWithSet = policy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && !(scaledDown && policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
		deleteWithPod = scaledDown && policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	setRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID}
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	for ti := range set.Spec.VolumeClaimTemplates {
		name := podspec.StatefulSetClaimName(set, &set.Spec.VolumeClaimTemplates[ti], i)
		claim, err := c.L.Claim(set.Namespace, name)
		if err != nil || claim.DeletionTimestamp != nil {
			continue
		}
		if ref := metav1.GetControllerOf(claim); ref != nil && ref.UID != set.UID && ref.UID != pod.UID {
			continue
		}
		want := withOwner(withOwner(claim.OwnerReferences, setRef, deleteWithSet), podRef, deleteWithPod)
		if reflect.DeepEqual(want, claim.OwnerReferences) {
			continue
		}
		if err := c.L.Update(store.ClaimKind, set.Namespace, name, func(o store.Object) error {
			cl := o.(*corev1.PersistentVolumeClaim)
			cl.OwnerReferences = withOwner(withOwner(cl.OwnerReferences, setRef, deleteWithSet), podRef, deleteWithPod)
			return nil
		}); err != nil {
			c.Log.Warn("updating claim owners", "claim", set.Namespace+"/"+name, "err", err)
		}
	}
}

// withOwner adds ref to refs (by UID) when want, removes it otherwise.
func withOwner(refs []metav1.OwnerReference, ref metav1.OwnerReference, want bool) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	has := false
	for _, r := range refs {
		if r.UID == ref.UID {
			if !want {
				continue
			}
			has = true
		}
		out = append(out, r)
	}
	if want && !has {
		out = append(out, ref)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// collectClaims is the garbage collector's part for claims: a claim whose
// owners are StatefulSets and pods that are all gone is deleted (a pod
// still using it keeps its volume until it goes).
func (c *Context) collectClaims() {
	claims, _ := c.L.List(store.ClaimKind, "")
	pods := map[types.UID]bool{}
	for _, p := range c.pods {
		pods[p.UID] = true
	}
	for _, o := range claims {
		refs := o.GetOwnerReferences()
		if len(refs) == 0 || o.GetDeletionTimestamp() != nil {
			continue
		}
		gone := true
		for _, r := range refs {
			switch {
			case r.Kind == "StatefulSet" && r.APIVersion == "apps/v1" && !c.objects[r.UID]:
			case r.Kind == "Pod" && r.APIVersion == "v1" && !pods[r.UID]:
			default:
				gone = false
			}
		}
		if gone {
			c.Log.Info("deleting claim whose owners are gone", "claim", o.GetNamespace()+"/"+o.GetName())
			_ = c.L.Remove(store.ClaimKind, o.GetNamespace(), o.GetName())
		}
	}
}

// statefulSetMaxUnavailable is getStatefulSetMaxUnavailable: the rolling
// update's maxUnavailable (default 1) scaled to the replicas, rounded down,
// at least 1.
func statefulSetMaxUnavailable(set *appsv1.StatefulSet, replicas int) int {
	v := intstr.FromInt32(1)
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		v = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
