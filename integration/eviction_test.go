package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's local storage evictions (pkg/kubelet/eviction
// localStorageEviction; test/e2e_node/eviction_test.go's
// LocalStorageCapacityIsolationEviction): a pod whose emptyDir outgrows its
// sizeLimit, or whose container outgrows its ephemeral-storage limit, is
// evicted — Failed, reason Evicted, the eviction manager's message, a
// Warning Evicted event, its containers not started again — while a pod
// within its limits keeps running.
func TestLocalStorageEviction(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: emptydir-hog}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'dd if=/dev/zero of=/cache/f bs=1024 count=2048 && sleep 3600']
    volumeMounts: [{name: cache, mountPath: /cache}]
  volumes:
  - {name: cache, emptyDir: {sizeLimit: 1Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: container-hog}
spec:
  containers:
  - name: writer
    image: busybox:1.28
    command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/f bs=1024 count=2048 && sleep 3600']
    resources: {limits: {ephemeral-storage: 1Mi}}
  - name: idle
    image: busybox:1.28
    command: ['sleep', '3600']
    resources: {limits: {ephemeral-storage: 100Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: within}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'dd if=/dev/zero of=/cache/f bs=1024 count=1024 && dd if=/dev/zero of=/tmp/f bs=1024 count=512 && sleep 3600']
    resources: {limits: {ephemeral-storage: 10Mi}}
    volumeMounts: [{name: cache, mountPath: /cache}]
  volumes:
  - {name: cache, emptyDir: {sizeLimit: 10Mi}}
`)
	for pod, want := range map[string]string{
		"emptydir-hog":  `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `,
		"container-hog": `Container writer exceeded its local ephemeral storage limit "1Mi". `,
	} {
		p := e.waitPhase(pod, corev1.PodFailed, 60*time.Second)
		if p.Status.Reason != "Evicted" || p.Status.Message != want {
			t.Errorf("pod %s: reason %q message %q, want Evicted %q", pod, p.Status.Reason, p.Status.Message, want)
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.State.Terminated == nil || st.RestartCount != 0 || st.Ready {
				t.Errorf("pod %s container %s: %+v, want terminated once, not ready", pod, st.Name, st)
			}
		}
		if ev := e.must("events", "--for", "pod/"+pod).stdout; !strings.Contains(ev, "Warning") || !strings.Contains(ev, "Evicted") || !strings.Contains(ev, strings.TrimSpace(want)) {
			t.Errorf("pod %s events:\n%s", pod, ev)
		}
		if strings.Contains(e.must("get", "pod", pod).stdout, "Running") {
			t.Errorf("pod %s: still shown Running", pod)
		}
	}
	// The evicted pod's volumes are gone (the volume manager tears down a
	// terminated pod's volumes), its record and logs stay.
	p := e.pod("emptydir-hog")
	dir := filepath.Join(e.root, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), "volumes")
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		t.Errorf("the evicted pod's volumes are still there: %v", entries)
	}
	// Both evictions took at least one monitoring period: the pod within
	// its limits has been looked at and keeps running.
	if w := e.pod("within"); w.Status.Phase != corev1.PodRunning || w.Status.Reason != "" {
		t.Errorf("pod within its limits: phase %s reason %q, want Running", w.Status.Phase, w.Status.Reason)
	}
	if describe := e.must("describe", "pod", "emptydir-hog").stdout; !strings.Contains(describe, "Reason:") || !strings.Contains(describe, "Evicted") {
		t.Errorf("describe does not show the eviction:\n%s", describe)
	}
}
