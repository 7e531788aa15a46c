package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

func writeBytes(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiskUsageCountsBlocksAndLinksOnce(t *testing.T) {
	dir := t.TempDir()
	writeBytes(t, filepath.Join(dir, "a", "f"), 256<<10)
	if err := os.Link(filepath.Join(dir, "a", "f"), filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	got := diskUsage(dir)
	if got < 256<<10 || got > 256<<10+64<<10 {
		t.Fatalf("diskUsage = %d, want about 256 KiB (the linked file once, the symlink not followed)", got)
	}
	if diskUsage(filepath.Join(dir, "missing")) != 0 {
		t.Fatal("a missing path must use nothing")
	}
}

// The checks of localStorageEviction, in its order, with the kubelet's
// messages (pkg/kubelet/eviction/helpers.go).
func TestLocalStorageChecks(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	newPod := func() *corev1.Pod {
		pod := testPod(corev1.RestartPolicyAlways, []string{"init"}, []string{"app", "other"})
		pod.Spec.Volumes = []corev1.Volume{
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Mi")}}},
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}
		return pod
	}
	setup := func(t *testing.T, pod *corev1.Pod) (storageLimits, store.PodPaths, string, bool) {
		root := t.TempDir()
		paths := store.PodPaths{Dir: filepath.Join(root, "pod"), RunDir: filepath.Join(root, "run")}
		cache := filepath.Join(paths.Dir, "volumes", "cache")
		vols := []volumes.Volume{{Name: "cache", Path: cache}, {Name: "mem", Path: filepath.Join(root, "mem"), Medium: corev1.StorageMediumMemory}}
		l, ok := localStorageLimits(pod, vols, paths)
		return l, paths, cache, ok
	}

	t.Run("emptyDir over its sizeLimit", func(t *testing.T) {
		l, _, cache, ok := setup(t, newPod())
		if !ok {
			t.Fatal("a sizeLimit must be monitored")
		}
		writeBytes(t, filepath.Join(cache, "small"), 512<<10)
		if msg := l.check(); msg != "" {
			t.Fatalf("evicted within the limit: %q", msg)
		}
		writeBytes(t, filepath.Join(cache, "big"), 1<<20)
		if msg, want := l.check(), `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `; msg != want {
			t.Fatalf("message %q, want %q", msg, want)
		}
	})

	t.Run("pod limit before container limit", func(t *testing.T) {
		pod := newPod()
		pod.Spec.Volumes[0].EmptyDir.SizeLimit = nil
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: *q("1Mi")}
		pod.Spec.Containers[1].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: *q("2Mi")}
		l, paths, cache, ok := setup(t, pod)
		if !ok {
			t.Fatal("ephemeral-storage limits must be monitored")
		}
		// The app's writable layer over its own limit, the pod (3Mi) within its.
		writeBytes(t, filepath.Join(paths.ContainerDir("app"), "upper", "tmp", "f"), 1<<20+4096)
		if msg, want := l.check(), `Container app exceeded its local ephemeral storage limit "1Mi". `; msg != want {
			t.Fatalf("message %q, want %q", msg, want)
		}
		// The init container's logs and an emptyDir count towards the pod.
		writeBytes(t, paths.LogFile("init", 0), 1<<20)
		writeBytes(t, filepath.Join(cache, "f"), 1<<20)
		if msg, want := l.check(), `Pod ephemeral local storage usage exceeds the total limit of containers 3Mi. `; msg != want {
			t.Fatalf("message %q, want %q", msg, want)
		}
	})

	t.Run("nothing to monitor", func(t *testing.T) {
		pod := newPod()
		pod.Spec.Volumes[0].EmptyDir.SizeLimit = nil
		if _, _, _, ok := setup(t, pod); ok {
			t.Fatal("a pod without limits must not be monitored")
		}
	})

	t.Run("critical pods are never evicted", func(t *testing.T) {
		pod := newPod()
		prio := int32(2000001000)
		pod.Spec.Priority = &prio
		if _, _, _, ok := setup(t, pod); ok {
			t.Fatal("a system-node-critical pod must not be monitored")
		}
	})
}

func TestEvictionFailsThePodOnceItsContainersStopped(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	h := newHarness(t, pod)
	h.r.handle(t, "app").sigterm = false // ignores SIGTERM: killed after the 1s grace
	msg := `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `
	h.m.post(message{evict: msg})
	h.settle()
	if h.status.Phase != corev1.PodRunning || h.status.Reason != "" {
		t.Fatalf("phase %s reason %q while the container stops, want Running and no reason yet", h.status.Phase, h.status.Reason)
	}
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15"}) {
		t.Fatalf("signals %v, want SIGTERM", got)
	}
	h.step(time.Second)
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15", "app:9"}) {
		t.Fatalf("signals %v, want SIGKILL after the eviction's 1s grace period", got)
	}
	if h.status.Phase != corev1.PodFailed || h.status.Reason != ReasonEvicted || h.status.Message != msg {
		t.Fatalf("phase %s reason %q message %q, want Failed Evicted %q", h.status.Phase, h.status.Reason, h.status.Message, msg)
	}
	h.step(time.Minute)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"app"}) {
		t.Fatalf("started %v: an evicted pod's containers must not start again", got)
	}
}
