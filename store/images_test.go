package store

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The images a pod keeps from rmi and prune: its init, app and ephemeral
// containers' and its image volumes'.
func TestSpecImages(t *testing.T) {
	r := &Record{Pod: &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers:      []corev1.Container{{Image: "init"}},
		Containers:          []corev1.Container{{Image: "app"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Image: "debug"}}},
		Volumes:             []corev1.Volume{{VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "data"}}}},
	}}}
	if got := specImages(r); !slices.Equal(got, []string{"init", "app", "debug", "data"}) {
		t.Fatalf("specImages = %v", got)
	}
}
