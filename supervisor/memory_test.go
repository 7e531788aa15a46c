package supervisor

import (
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStarted(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	done := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
	for _, c := range []struct {
		st   corev1.PodStatus
		want bool
	}{
		{corev1.PodStatus{Phase: corev1.PodPending}, false},
		{corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting}}, false},
		{corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running, waiting}}, false},
		{corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running, done}}, true},
		{corev1.PodStatus{Phase: corev1.PodFailed}, true},
	} {
		if got := started(c.st); got != c.want {
			t.Errorf("started(%+v) = %v", c.st, got)
		}
	}
}

func rssFile(t *testing.T) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssFile:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no RssFile")
	return 0
}

// releaseMemory unmaps the executable's code and read-only data, and the
// process goes on running: the pages come back on use.
func TestReleaseMemoryDropsExeMappings(t *testing.T) {
	before := rssFile(t)
	releaseMemory()
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before releaseMemory, %d kB after", before, after)
	}
	// Code and data of the binary still work (and its writable data kept).
	if !started(corev1.PodStatus{Phase: corev1.PodSucceeded}) || DefaultBackoffMax == 0 {
		t.Error("the binary's code or data changed")
	}
	t.Logf("RssFile %d kB → %d kB", before, after)
}
