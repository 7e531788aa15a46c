package controllers

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ComputeHash is the controllers' hash of a pod template
// (pkg/controller/controller_utils.go ComputeHash): fnv32a over the
// template's deep dump (hashutil.DeepHashObject) and the collision count,
// rendered with rand.SafeEncodeString. It names a Deployment's ReplicaSets
// (`<deployment>-<hash>`) and is their pod-template-hash label.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	hasher.Reset()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		hasher.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}

// EqualIgnoreHash reports whether two pod templates are the same but for
// the pod-template-hash label (deploymentutil.EqualIgnoreHash).
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	delete(x.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(y.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(x.Labels) == 0 {
		x.Labels = nil
	}
	if len(y.Labels) == 0 {
		y.Labels = nil
	}
	return equality.Semantic.DeepEqual(x, y)
}
