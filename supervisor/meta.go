package supervisor

import (
	"errors"
	"fmt"
	"maps"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/store"
)

// ErrUnchanged is UpdateMeta's answer when change left the pod as it was.
var ErrUnchanged = errors.New("unchanged")

// UpdateMeta changes a pod's labels or annotations as an update of its
// metadata does (kubectl label and annotate): under the pod name's
// reservation, change edits a copy of the stored pod's metadata; the record
// keeps the hash of what was applied (an apply of the same manifest stays
// unchanged, as kubectl apply's three-way merge leaves what it did not set),
// and the supervisor is told, as for an apply that changes labels.
func UpdateMeta(l store.Layout, namespace, name string, change func(pod *corev1.Pod) error) (*corev1.Pod, error) {
	lock, err := l.LockName(namespace, "pods", name)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	rec, err := store.FindPod(l, namespace, name)
	if err != nil {
		return nil, err
	}
	if rec.Broken != nil {
		return nil, fmt.Errorf("pod %s: its record cannot be read: %v", rec.Key(), rec.Broken)
	}
	pod := rec.Pod.DeepCopy()
	if err := change(pod); err != nil {
		return nil, err
	}
	if maps.Equal(pod.Labels, rec.Pod.Labels) && maps.Equal(pod.Annotations, rec.Pod.Annotations) {
		return pod, ErrUnchanged
	}
	applied, _ := os.ReadFile(rec.Paths.AppliedFile())
	if err := store.UpdateSpec(rec.Paths, pod, string(applied)); err != nil {
		return nil, err
	}
	if pid := store.SupervisorPid(rec.Paths); pid > 0 && !store.IsTerminal(rec.Pod) {
		if err := request(rec.Paths, pid, func(r *store.Request) { r.Update++ }); err != nil {
			return nil, fmt.Errorf("updating pod %s: %w", rec.Key(), err)
		}
	}
	return pod, nil
}
