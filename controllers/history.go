package controllers

import (
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podrun/podrun/store"
)

// The ControllerRevisions of StatefulSets and DaemonSets
// (pkg/controller/history, statefulset's getPatch/newRevision and the
// daemon set's snapshot/dedupCurHistories): one per pod template the set
// ran, named `<set>-<hash>` (the hash the pods' controller-revision-hash
// label carries), numbered in the order the templates were rolled out; a
// template that comes back (a rollback) takes the next number on its old
// revision. The oldest ones no pod uses are removed past
// revisionHistoryLimit.

// templatePatch is the revision data of a template: the strategic merge
// patch {"spec":{"template":{…,"$patch":"replace"}}} that getPatch stores.
func templatePatch(t *corev1.PodTemplateSpec) (runtime.RawExtension, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return runtime.RawExtension{}, err
	}
	m["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
	return runtime.RawExtension{Raw: data}, err
}

// RevisionTemplate is the pod template a ControllerRevision holds (what
// kubectl's rollbackers and ApplyRevision read from its data).
func RevisionTemplate(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	raw := rev.Data.Raw
	var patch struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &patch); err != nil || patch.Spec.Template == nil {
		return nil, fmt.Errorf("controller revision %s holds no pod template", rev.Name)
	}
	delete(patch.Spec.Template, "$patch")
	data, err := json.Marshal(patch.Spec.Template)
	if err != nil {
		return nil, err
	}
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// OwnedRevisions lists the ControllerRevisions whose controller is owner,
// oldest revision first (history.SortControllerRevisions).
func OwnedRevisions(l store.Layout, owner metav1.Object) []*appsv1.ControllerRevision {
	objs, _ := l.List(store.ControllerRevisionKind, owner.GetNamespace())
	var out []*appsv1.ControllerRevision
	for _, o := range objs {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, o.(*appsv1.ControllerRevision))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Revision != out[j].Revision {
			return out[i].Revision < out[j].Revision
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// syncRevisions makes sure the owner's template of the given name has a
// ControllerRevision holding the highest revision (getStatefulSetRevisions,
// constructHistory), removes the oldest ones past limit that are not in
// use, and returns the revisions by name.
func (c *Context) syncRevisions(k *store.Kind, owner store.Object, tmpl *corev1.PodTemplateSpec, name string, limit *int32, inUse map[string]bool) (map[string]*appsv1.ControllerRevision, error) {
	revs := OwnedRevisions(c.L, owner)
	data, err := templatePatch(tmpl)
	if err != nil {
		return nil, err
	}
	var max int64
	var cur *appsv1.ControllerRevision
	for _, r := range revs {
		max = r.Revision
		if r.Name == name {
			cur = r
		}
	}
	switch {
	case cur == nil:
		cur = &appsv1.ControllerRevision{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ControllerRevision"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.GetNamespace(),
				Labels:          map[string]string{},
				Annotations:     map[string]string{},
				OwnerReferences: []metav1.OwnerReference{ControllerRef(k, owner)}},
			Data: data, Revision: max + 1,
		}
		for key, v := range tmpl.Labels {
			cur.Labels[key] = v
		}
		for key, v := range owner.GetAnnotations() {
			cur.Annotations[key] = v
		}
		if _, err := c.L.Put(store.ControllerRevisionKind, cur); err != nil {
			return nil, err
		}
		c.Log.Info("created controller revision", "revision", owner.GetNamespace()+"/"+name, "number", cur.Revision)
		revs = append(revs, cur)
	case cur.Revision < max:
		// A template rolled out again: its revision becomes the newest.
		if err := c.L.Update(store.ControllerRevisionKind, owner.GetNamespace(), name, func(o store.Object) error {
			o.(*appsv1.ControllerRevision).Revision = max + 1
			return nil
		}); err != nil {
			return nil, err
		}
		cur.Revision = max + 1
		sort.SliceStable(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	}
	// truncateHistory: the oldest revisions no pod runs go past the limit.
	keep := 10
	if limit != nil {
		keep = int(*limit)
	}
	var unused []*appsv1.ControllerRevision
	for _, r := range revs {
		if r.Name != name && !inUse[r.Name] {
			unused = append(unused, r)
		}
	}
	removed := map[string]bool{}
	for i := 0; i < len(unused)-keep; i++ {
		_ = c.L.Remove(store.ControllerRevisionKind, unused[i].Namespace, unused[i].Name)
		removed[unused[i].Name] = true
	}
	out := map[string]*appsv1.ControllerRevision{}
	for _, r := range revs {
		if !removed[r.Name] {
			out[r.Name] = r
		}
	}
	return out, nil
}
