package volumes

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMemoryDirKeepsSecretsOffThePodDir: with MemoryDir, secret and projected
// volumes are tmpfs under MemoryDir, subPath binds too, and no Secret value
// is anywhere under the pod directory; Teardown(MemoryDir) releases them.
func TestMemoryDirKeepsSecretsOffThePodDir(t *testing.T) {
	podDir := newPodDir(t)
	memDir := newPodDir(t)
	const value = "s3cr3t-value-prl-4711"
	objs := Objects{Secrets: map[string]*corev1.Secret{"creds": {ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte(value)}}}}
	pod := podWith("p", []corev1.Volume{
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}}},
		emptyDirVol("scratch", corev1.EmptyDirVolumeSource{}),
	})
	set := mustSetup(t, pod, Options{PodDir: podDir, MemoryDir: memDir, Objects: objs})
	for _, name := range []string{"sec", "proj"} {
		v, _ := set.Volume(name)
		if filepath.Dir(v.Path) != filepath.Join(memDir, "volumes") {
			t.Errorf("volume %s at %s, want under %s", name, v.Path, memDir)
		}
		if st := statfs(t, v.Path); st.Type != unix.TMPFS_MAGIC {
			t.Errorf("volume %s is not on tmpfs", name)
		}
		if got := mustRead(t, filepath.Join(v.Path, "password")); got != value {
			t.Errorf("volume %s: password %q", name, got)
		}
	}
	if v, _ := set.Volume("scratch"); filepath.Dir(v.Path) != filepath.Join(podDir, "volumes") {
		t.Errorf("emptyDir at %s, want under the pod directory", v.Path)
	}
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "sec", MountPath: "/pw", SubPath: "password"}}}
	mounts, err := set.Mounts(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(mounts[0].Source)))) != memDir {
		t.Errorf("subPath bind at %s, want under %s", mounts[0].Source, memDir)
	}
	_ = filepath.WalkDir(podDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(value)) {
				t.Errorf("the Secret value is in %s", p)
			}
		}
		return nil
	})
	if err := Teardown(memDir); err != nil {
		t.Fatal(err)
	}
	if left, _ := Leftovers(memDir); len(left) != 0 {
		t.Errorf("Teardown(MemoryDir) left %v", left)
	}
}
