package store

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdatePodOwners changes the ownerReferences of a pod in its record
// (pod.json), under the pod's name reservation: the controllers' adoption
// and release of pods (ControllerRefManager's patch of
// metadata.ownerReferences). The pod must still be the one with uid. The
// supervisor does not read ownerReferences; the next record read has them.
func (l Layout) UpdatePodOwners(namespace, name string, uid types.UID, change func([]metav1.OwnerReference) []metav1.OwnerReference) ([]metav1.OwnerReference, error) {
	lock, err := l.LockName(namespace, "pods", name)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	rec, err := FindPod(l, namespace, name)
	if err != nil {
		return nil, err
	}
	if rec.Pod.UID != uid {
		return nil, fmt.Errorf("pod %s/%s is not the one with uid %s", namespace, name, uid)
	}
	var p corev1.Pod
	if err := ReadJSON(rec.Paths.SpecFile(), &p); err != nil {
		return nil, err
	}
	p.OwnerReferences = change(p.OwnerReferences)
	if err := WriteJSON(rec.Paths.SpecFile(), &p); err != nil {
		return nil, fmt.Errorf("updating the record of pod %s/%s: %w", namespace, name, err)
	}
	return p.OwnerReferences, nil
}
