package volumes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServiceAccountVolume(t *testing.T) {
	app := corev1.Container{Name: "app"}
	own := corev1.Container{Name: "own", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: ServiceAccountMountPath + "/"}}}
	mine := corev1.Volume{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}

	for _, tc := range []struct {
		name      string
		automount *bool
		want      bool
	}{
		{"default mounts it", nil, true},
		{"automountServiceAccountToken true", ptr(true), true},
		{"automountServiceAccountToken false", ptr(false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith("sa", []corev1.Volume{mine}, app, own)
			pod.Namespace = "team-a"
			pod.Spec.AutomountServiceAccountToken = tc.automount
			podDir := newPodDir(t)
			set := mustSetup(t, pod, Options{PodDir: podDir})
			t.Cleanup(func() {
				if err := Teardown(podDir); err != nil {
					t.Error(err)
				}
			})

			mounts, err := set.Mounts(&pod.Spec.Containers[0], nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want {
				if len(mounts) != 0 {
					t.Fatalf("mounts %+v, want none", mounts)
				}
				if _, err := os.Stat(filepath.Join(podDir, volumesDirName, serviceAccountDir)); !os.IsNotExist(err) {
					t.Fatalf("service-account volume exists (%v), want none", err)
				}
				return
			}
			if len(mounts) != 1 || mounts[0].Destination != ServiceAccountMountPath || !mounts[0].ReadOnly {
				t.Fatalf("mounts %+v, want one read-only mount at %s", mounts, ServiceAccountMountPath)
			}
			if got := mustRead(t, filepath.Join(mounts[0].Source, "namespace")); got != "team-a" {
				t.Errorf("namespace file = %q, want team-a", got)
			}
			// The kubelet's atomic writer layout: namespace -> ..data/namespace.
			if link, err := os.Readlink(filepath.Join(mounts[0].Source, "namespace")); err != nil || link != "..data/namespace" {
				t.Errorf("namespace is %q (%v), want a symlink to ..data/namespace", link, err)
			}
			if p := perm(t, filepath.Join(mounts[0].Source, "..data", "namespace")); p != 0o644 {
				t.Errorf("mode %v, want 0644", p)
			}
			if statfs(t, mounts[0].Source).Type != 0x01021994 { // TMPFS_MAGIC
				t.Error("service-account volume is not memory-backed")
			}
			// A container that mounts its own volume at the path keeps it.
			own, err := set.Mounts(&pod.Spec.Containers[1], nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(own) != 1 || own[0].Name != "mine" {
				t.Errorf("mounts of a container with its own volume there: %+v, want only its own", own)
			}
		})
	}
}
