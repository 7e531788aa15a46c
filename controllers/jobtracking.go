package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podrun/podrun/store"
)

// jobTracking is what the Job controller's pod finalizer
// (batch.kubernetes.io/job-tracking, Kubernetes >= 1.26) guarantees there:
// a pod of the Job deleted before it finished is seen and counted as failed
// (trackJobStatusAndRemoveFinalizers: "Terminating pods are counted as
// failed"), even when it is gone before the controller looks. podrun's pod
// records have no finalizers, so the controllers keep, per running Job,
// the pods that were active at the last pass and those counted as failed
// because they were deleted, in <root>/controllers/jobs/<job uid>.json.
type jobTracking struct {
	Known   []types.UID `json:"known,omitempty"`
	Deleted []types.UID `json:"deleted,omitempty"`
}

func jobTrackingDir(l store.Layout) string { return filepath.Join(Dir(l), "jobs") }

func jobTrackingPath(l store.Layout, uid types.UID) string {
	return filepath.Join(jobTrackingDir(l), string(uid)+".json")
}

// deletedJobPods returns the UIDs of the Job's pods deleted before they
// finished (not by the controller): those active at the last pass that are
// gone now, or being deleted and not Succeeded; with those counted before.
func (c *Context) deletedJobPods(uid types.UID, all []*corev1.Pod) (jobTracking, map[types.UID]bool) {
	var tr jobTracking
	_ = store.ReadJSON(jobTrackingPath(c.L, uid), &tr)
	deleted := map[types.UID]bool{}
	for _, u := range tr.Deleted {
		deleted[u] = true
	}
	present := map[types.UID]*corev1.Pod{}
	for _, p := range all {
		present[p.UID] = p
	}
	for _, u := range tr.Known {
		p, ok := present[u]
		if !ok || (p.DeletionTimestamp != nil && !c.ctrl.isDeleting(u) && p.Status.Phase != corev1.PodSucceeded) {
			deleted[u] = true
		}
	}
	return tr, deleted
}

// saveJobTracking records the Job's active pods (those the controller is
// not deleting) and the deleted ones counted, when they changed.
func (c *Context) saveJobTracking(uid types.UID, old jobTracking, active []*corev1.Pod, deleted map[types.UID]bool) error {
	var tr jobTracking
	for _, p := range active {
		if !c.ctrl.isDeleting(p.UID) && !deleted[p.UID] {
			tr.Known = append(tr.Known, p.UID)
		}
	}
	for u := range deleted {
		tr.Deleted = append(tr.Deleted, u)
	}
	slices.Sort(tr.Known)
	slices.Sort(tr.Deleted)
	if slices.Equal(tr.Known, old.Known) && slices.Equal(tr.Deleted, old.Deleted) {
		return nil
	}
	if err := os.MkdirAll(jobTrackingDir(c.L), 0o700); err != nil {
		return err
	}
	return store.WriteJSON(jobTrackingPath(c.L, uid), tr)
}

// forgetJobTracking drops the records of Jobs that are finished or gone.
func (c *Context) forgetJobTracking(running map[types.UID]bool) {
	entries, _ := os.ReadDir(jobTrackingDir(c.L))
	for _, e := range entries {
		uid := types.UID(strings.TrimSuffix(e.Name(), ".json"))
		if !running[uid] {
			_ = os.Remove(filepath.Join(jobTrackingDir(c.L), e.Name()))
		}
	}
}

func (ct *controllers) isDeleting(uid types.UID) bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.deleting[uid]
}
