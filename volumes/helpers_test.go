package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newPodDir returns a fresh pod directory whose volumes are torn down when the
// test ends, pass or fail, and checks that no mount is left behind.
func newPodDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("these tests mount tmpfs and bind mounts and must run as root")
	}
	dir := filepath.Join(t.TempDir(), "default_web_"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Teardown(dir); err != nil {
			t.Errorf("cleanup Teardown: %v", err)
		}
		if left, err := Leftovers(dir); err != nil || len(left) != 0 {
			t.Errorf("cleanup: mounts left under %s: %v (%v)", dir, left, err)
			for i := len(left) - 1; i >= 0; i-- {
				_ = unix.Unmount(left[i], unix.MNT_DETACH)
			}
		}
	})
	return dir
}

// podWith builds a pod without the service-account volume, so that tests of
// other volumes see only theirs (serviceaccount_test.go turns it on).
func podWith(name string, vols []corev1.Volume, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Volumes: vols, Containers: containers, AutomountServiceAccountToken: ptr(false)},
	}
}

func mustSetup(t *testing.T, pod *corev1.Pod, opts Options) *Set {
	t.Helper()
	set, _, err := Setup(pod, opts)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return set
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func statfs(t *testing.T, path string) unix.Statfs_t {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (os.ModePerm | os.ModeSticky | os.ModeSetgid)
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func ptr[T any](v T) *T { return &v }

type stubFields struct{}

func (stubFields) FieldRef(path string) (string, error) {
	switch path {
	case "metadata.name":
		return "name-from-resolver", nil
	case "metadata.labels['app']":
		return "app-from-resolver", nil
	}
	return "", fmt.Errorf("stub: unknown field %s", path)
}

func (stubFields) ResourceFieldRef(container string, ref *corev1.ResourceFieldSelector) (string, error) {
	return container + "/" + ref.Resource, nil
}
