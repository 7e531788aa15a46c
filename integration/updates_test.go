package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func updatePod(label, imageB, extra string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: upd, labels: {app: ` + label + `}}
spec:
  terminationGracePeriodSeconds: 1
` + extra + `  containers:
  - {name: a, image: busybox:1.28, command: ['sleep', '3600']}
  - {name: b, image: ` + imageB + `, command: ['sleep', '3600']}
`
}

// apply updates a running pod as the API server allows: labels restart
// nothing, a changed image restarts exactly that container, a lowered
// deadline takes effect, other changes are refused and --force replaces.
func TestUpdateInPlace(t *testing.T) {
	e := newEnv(t)
	e.must("load", "-i", testImage, "--tag", "busybox:other")
	e.apply(`
apiVersion: v1
kind: Service
metadata: {name: v2}
spec: {selector: {app: v2}, ports: [{port: 80}]}
`)
	e.apply(updatePod("v1", "busybox:1.28", ""), "--wait")
	before := e.pod("upd")
	started := func(p *corev1.Pod, name string) string {
		s := containerState(p, name)
		if s.State.Running == nil {
			t.Fatalf("container %s is not running: %+v", name, s.State)
		}
		return s.State.Running.StartedAt.String()
	}

	// Labels: configured, nothing restarts, the Service's endpoints follow.
	if r := e.apply(updatePod("v2", "busybox:1.28", "")); r.stdout != "pod/upd configured\n" {
		t.Fatalf("label update: %s", r)
	}
	if r := e.apply(updatePod("v2", "busybox:1.28", "")); r.stdout != "pod/upd unchanged\n" {
		t.Fatalf("label update again: %s", r)
	}
	if r := e.must("get", "endpoints", "v2"); !strings.Contains(r.stdout, before.Status.PodIP+":80") {
		t.Fatalf("endpoints after the label update: %s", r)
	}
	time.Sleep(time.Second)
	p := e.pod("upd")
	for _, c := range []string{"a", "b"} {
		if containerState(p, c).RestartCount != 0 || started(p, c) != started(before, c) {
			t.Fatalf("a label update restarted container %s: %+v", c, containerState(p, c))
		}
	}
	if p.Labels["app"] != "v2" {
		t.Fatalf("labels after update: %v", p.Labels)
	}

	// Image of b: b alone is killed and started again with it.
	if r := e.apply(updatePod("v2", "busybox:other", "")); r.stdout != "pod/upd configured\n" {
		t.Fatalf("image update: %s", r)
	}
	p = e.waitFor("upd", 30*time.Second, "b restarted with the new image", func(p *corev1.Pod) bool {
		b := containerState(p, "b")
		return b.RestartCount == 1 && b.State.Running != nil && strings.HasSuffix(b.Image, "busybox:other")
	})
	if a := containerState(p, "a"); a.RestartCount != 0 || started(p, "a") != started(before, "a") {
		t.Fatalf("the image update of b restarted a: %+v", a)
	}
	if r := e.must("describe", "upd"); !strings.Contains(r.stdout, "Container b definition changed, will be restarted") {
		t.Fatalf("no event for the image update: %s", r)
	}

	// Any other change is refused with the API server's message.
	r := e.podrun("apply", e.manifest(strings.Replace(updatePod("v2", "busybox:other", ""), "'3600'", "'3601'", 1)))
	if r.code != 2 || !strings.Contains(r.stderr, `The Pod "upd" is invalid: spec: Forbidden: pod updates may not change fields other than`) {
		t.Fatalf("a command update: %s", r)
	}
	// A lowered deadline takes effect.
	e.apply(updatePod("v2", "busybox:other", "  activeDeadlineSeconds: 1\n"))
	p = e.waitPhase("upd", corev1.PodFailed, 30*time.Second)
	if p.Status.Reason != "DeadlineExceeded" {
		t.Fatalf("after the deadline update: %s %s", p.Status.Phase, p.Status.Reason)
	}
	// --force replaces the pod.
	if r := e.must("apply", e.manifest(updatePod("v3", "busybox:1.28", "")), "--force"); r.stdout != "pod/upd replaced\n" {
		t.Fatalf("apply --force: %s", r)
	}
}

// test/e2e/node/pods.go "Pod Generation": a new pod is generation 1 whatever
// the manifest says; a spec update (tolerations, deadline, an image) is a
// new generation, metadata and a client-set generation are not; a graceful
// deletion is one more. The kubelet reports the generation it acted on as
// status.observedGeneration and on its conditions.
func TestPodGeneration(t *testing.T) {
	e := newEnv(t)
	e.must("load", "-i", testImage, "--tag", "busybox:other")
	manifest := func(meta, spec, image string) string {
		return `
apiVersion: v1
kind: Pod
metadata: {name: gen, generation: 100` + meta + `}
spec:
  terminationGracePeriodSeconds: 60
` + spec + `  initContainers:
  - {name: init, image: busybox:1.28, command: ['true']}
  containers:
  - {name: c, image: ` + image + `, command: ['sleep', '3600']}
`
	}
	check := func(step string, want int64) {
		t.Helper()
		p := e.waitFor("gen", 30*time.Second, fmt.Sprintf("observed generation %d", want), func(p *corev1.Pod) bool {
			return p.Status.ObservedGeneration == want
		})
		if p.Generation != want {
			t.Fatalf("%s: generation %d, want %d", step, p.Generation, want)
		}
		for _, c := range p.Status.Conditions {
			if c.ObservedGeneration != want {
				t.Errorf("%s: condition %s observedGeneration %d, want %d", step, c.Type, c.ObservedGeneration, want)
			}
		}
	}
	e.apply(manifest("", "", "busybox:1.28"), "--wait")
	check("created", 1)
	e.apply(manifest("", "", "busybox:1.28"))
	check("empty update", 1)
	tolerations := "  tolerations: [{key: foo, operator: Equal, value: bar, effect: NoSchedule}]\n"
	e.apply(manifest("", tolerations, "busybox:1.28"))
	check("tolerations", 2)
	deadline := tolerations + "  activeDeadlineSeconds: 5000\n"
	e.apply(manifest("", deadline, "busybox:1.28"))
	check("activeDeadlineSeconds", 3)
	e.apply(manifest("", deadline, "busybox:other"))
	check("container image", 4)
	e.apply(manifest(", annotations: {key: value}", deadline, "busybox:other"))
	check("annotations", 4)
	e.must("delete", "pod", "gen", "--wait=false")
	check("graceful deletion", 5)
	e.must("delete", "pod", "gen", "--force")
}

// test/e2e/node/pods.go "pod with negative grace period": the API server
// warns about a negative terminationGracePeriodSeconds and stores 1, on
// create and on update.
func TestNegativeGracePeriodIsStoredAsOne(t *testing.T) {
	e := newEnv(t)
	manifest := func(label string) string {
		return `
apiVersion: v1
kind: Pod
metadata: {name: neg, labels: {v: "` + label + `"}}
spec:
  terminationGracePeriodSeconds: -1
  restartPolicy: OnFailure
  containers:
  - {name: foo, image: busybox:1.28, command: ['/bin/sh', '-c', 'sleep 10000']}
`
	}
	r := e.apply(manifest("1"))
	if !strings.Contains(r.stderr, "Warning: spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1") {
		t.Errorf("no warning: %s", r)
	}
	grace := func() int64 {
		p := e.pod("neg")
		if p.Spec.TerminationGracePeriodSeconds == nil {
			t.Fatal("terminationGracePeriodSeconds is nil")
		}
		return *p.Spec.TerminationGracePeriodSeconds
	}
	if g := grace(); g != 1 {
		t.Fatalf("stored terminationGracePeriodSeconds %d, want 1", g)
	}
	if r := e.apply(manifest("2")); r.stdout != "pod/neg configured\n" {
		t.Fatalf("update with a negative grace period: %s", r)
	}
	if g := grace(); g != 1 {
		t.Fatalf("terminationGracePeriodSeconds %d after the update, want 1", g)
	}
	e.must("delete", "pod", "neg", "--force")
}
