package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resizePodYAML is pod_resize.go's kind of pod: two Burstable containers,
// c2's memory under resizePolicy RestartContainer.
const resizePodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: rz}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 0
  containers:
  - name: c1
    image: busybox:1.28
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 20m, memory: 20Mi}
      limits: {cpu: 30m, memory: 30Mi}
  - name: c2
    image: busybox:1.28
    command: ["sleep", "3600"]
    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]
    resources:
      requests: {cpu: 20m, memory: 20Mi}
      limits: {cpu: 30m, memory: 30Mi}
`

// The pods/resize subresource, as test/e2e/common/node/pod_resize.go drives
// it: kubectl patch --subresource resize changes a running pod's cpu and
// memory in place; a container whose resizePolicy says RestartContainer for
// a changed resource is restarted; the status reports what is allocated;
// the API server's refusals; a resize the node cannot hold stays pending
// (Infeasible) until a resize that fits replaces it.
func TestPodResize(t *testing.T) {
	e := newEnv(t)
	e.apply(resizePodYAML)
	running := func(what string, restarts map[string]int32) *corev1.Pod {
		t.Helper()
		return e.waitFor("rz", time.Minute, what, func(p *corev1.Pod) bool {
			for name, n := range restarts {
				s := containerState(p, name)
				if s.State.Running == nil || s.RestartCount != n {
					return false
				}
			}
			return true
		})
	}
	res := func(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
		}
	}
	// check compares the containers' status resources and cgroups, and the
	// pod cgroup, with want.
	check := func(p *corev1.Pod, want map[string]corev1.ResourceRequirements) {
		t.Helper()
		var pod cgLimits
		pod.quota, pod.period = 0, 100000
		for name, r := range want {
			s := containerState(p, name)
			if s.Resources == nil || !equality.Semantic.DeepEqual(*s.Resources, r) {
				t.Errorf("container %s: status resources %+v, want %+v", name, s.Resources, r)
			}
			got := cgRead(t, e.containerCgroupRel(p, strings.TrimPrefix(s.ContainerID, "podrun://")))
			l := cgLimits{shares: r.Requests.Cpu().MilliValue() * 1024 / 1000, quota: r.Limits.Cpu().MilliValue() * 100, period: 100000, memory: r.Limits.Memory().Value()}
			if got != cgExpected(l) {
				t.Errorf("container %s: cgroup %+v, want %+v", name, got, cgExpected(l))
			}
			pod.quota += l.quota
			pod.memory += l.memory
			pod.shares += r.Requests.Cpu().MilliValue()
		}
		pod.shares = pod.shares * 1024 / 1000
		if got := cgRead(t, e.podCgroupRel(p)); got != cgExpected(pod) {
			t.Errorf("pod cgroup: %+v, want %+v", got, cgExpected(pod))
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
				t.Errorf("resize condition left: %+v", c)
			}
		}
	}
	p := running("both running", map[string]int32{"c1": 0, "c2": 0})
	check(p, map[string]corev1.ResourceRequirements{"c1": res("20m", "30m", "20Mi", "30Mi"), "c2": res("20m", "30m", "20Mi", "30Mi")})

	// c1: more cpu, a lower memory limit, in place; c2: a higher memory
	// limit under RestartContainer restarts it.
	if r := e.must("patch", "pod", "rz", "--subresource", "resize", "-p",
		`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"25m"},"limits":{"cpu":"35m","memory":"25Mi"}}},{"name":"c2","resources":{"limits":{"memory":"35Mi"}}}]}}`); r.stdout != "pod/rz patched\n" {
		t.Fatalf("resize: %s", r)
	}
	want := map[string]corev1.ResourceRequirements{"c1": res("25m", "35m", "20Mi", "25Mi"), "c2": res("20m", "30m", "20Mi", "35Mi")}
	p = e.waitFor("rz", time.Minute, "the resize actuated", func(p *corev1.Pod) bool {
		c1, c2 := containerState(p, "c1"), containerState(p, "c2")
		return c2.RestartCount == 1 && c2.State.Running != nil && c1.Resources != nil && equality.Semantic.DeepEqual(*c1.Resources, want["c1"])
	})
	if n := containerState(p, "c1").RestartCount; n != 0 {
		t.Errorf("c1 was restarted by an in-place resize: restartCount %d", n)
	}
	if p.Generation != 2 || p.Status.ObservedGeneration != 2 {
		t.Errorf("generation %d, observedGeneration %d after the resize, want 2 and 2", p.Generation, p.Status.ObservedGeneration)
	}
	if got := p.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, want["c1"]) {
		t.Errorf("c1's spec after the resize: %+v", got)
	}
	check(p, want)
	if r := e.must("events"); !strings.Contains(r.stdout, "Container c2 resize requires restart") {
		t.Errorf("no Killing event for c2's restart: %s", r)
	}

	// The API server's refusals (pod_resize.go doPodResizeErrorTests).
	e.mustFail(
		failure{[]string{"patch", "pod", "rz", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c1","resources":{"limits":{"memory":null}}}]}}`}, 2, "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		failure{[]string{"patch", "pod", "rz", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"35m","memory":"25Mi"}}},{"name":"c2","resources":{"requests":{"cpu":"30m","memory":"35Mi"}}}]}}`}, 2, `spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`},
		failure{[]string{"patch", "pod", "rz", "--subresource", "resize", "--type", "json", "-p", `[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:other"}]`}, 2, "spec: Forbidden: only cpu and memory resources are mutable"},
		failure{[]string{"patch", "pod", "rz", "--subresource", "resize", "--type", "json", "-p", `[{"op":"move","from":"/spec/containers/0","path":"/spec/containers/1"}]`}, 2, "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"},
	)

	// More cpu than the node has: pending, Infeasible, nothing changes.
	e.must("patch", "pod", "rz", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}}]}}`)
	p = e.waitFor("rz", 30*time.Second, "the resize pending", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending {
				return c.Reason == corev1.PodReasonInfeasible && strings.HasPrefix(c.Message, "Node didn't have enough capacity: cpu, requested: 1000020, capacity: ")
			}
		}
		return false
	})
	if got := containerState(p, "c1").Resources; !equality.Semantic.DeepEqual(*got, want["c1"]) {
		t.Errorf("c1's status resources after an infeasible resize: %+v", got)
	}
	// Back to the start (a rollback): c2 restarts again, the condition goes.
	e.must("patch", "pod", "rz", "--subresource", "resize", "-p",
		`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"20m"},"limits":{"cpu":"30m","memory":"30Mi"}}},{"name":"c2","resources":{"limits":{"memory":"30Mi"}}}]}}`)
	want = map[string]corev1.ResourceRequirements{"c1": res("20m", "30m", "20Mi", "30Mi"), "c2": res("20m", "30m", "20Mi", "30Mi")}
	p = e.waitFor("rz", time.Minute, "the rollback actuated", func(p *corev1.Pod) bool {
		c1, c2 := containerState(p, "c1"), containerState(p, "c2")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending {
				return false
			}
		}
		return c2.RestartCount == 2 && c2.State.Running != nil && c1.Resources != nil && equality.Semantic.DeepEqual(*c1.Resources, want["c1"])
	})
	check(p, want)
	// A memory limit under what the container uses is not written: the
	// resize stays in progress with the kubelet's error, the status keeps
	// the limit the container has, and a resize that fits replaces it.
	e.must("exec", "rz", "-c", "c1", "--", "sh", "-c", "head -c 28000000 /dev/zero > /tmp/fill")
	e.must("patch", "pod", "rz", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c1","resources":{"limits":{"memory":"20Mi"}}}]}}`)
	below := regexp.MustCompile(`memory limit \(\d+\) below current usage`)
	p = e.waitFor("rz", 30*time.Second, "the resize in progress with an error", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizeInProgress {
				return c.Reason == corev1.PodReasonError && below.MatchString(c.Message)
			}
		}
		return false
	})
	if got := containerState(p, "c1"); got.RestartCount != 0 || !equality.Semantic.DeepEqual(*got.Resources, want["c1"]) {
		t.Errorf("c1 after a resize below its usage: restartCount %d, resources %+v", got.RestartCount, got.Resources)
	}
	e.must("patch", "pod", "rz", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c1","resources":{"limits":{"memory":"30Mi"}}}]}}`)
	p = e.waitFor("rz", 30*time.Second, "the error gone", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizeInProgress {
				return false
			}
		}
		return true
	})
	check(p, want)
	// The manifest applied again leaves the resized pod as it is, as
	// kubectl apply's three-way patch does.
	if r := e.must("apply", "-f", e.manifest(resizePodYAML)); r.stdout != "pod/rz unchanged\n" {
		t.Errorf("apply of the manifest after the resizes: %s", r)
	}
}

// A pod with pod-level resources, as pod_level_resources_resize.go's
// "PLR guaranteed qos" pods: c1 declares no cpu or memory of its own and so
// runs under the pod's limits; init has its own resources.
const resizePodLevelYAML = `
apiVersion: v1
kind: Pod
metadata: {name: plr}
spec:
  terminationGracePeriodSeconds: 0
  resources:
    requests: {cpu: 100m, memory: 64Mi}
    limits: {cpu: 100m, memory: 64Mi}
  initContainers:
  - name: init
    image: busybox:1.28
    command: ["true"]
    resources:
      requests: {cpu: 20m, memory: 20Mi}
      limits: {cpu: 20m, memory: 20Mi}
  containers:
  - name: c1
    image: busybox:1.28
    command: ["sleep", "3600"]
    resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]
`

// Pod-level resources resized in place (InPlacePodLevelResourcesVerticalScaling,
// beta since Kubernetes 1.36) and a plain init container's resources
// (InPlacePodVerticalScalingInitContainers, GA in 1.37): the pod cgroup and
// the cgroup of a container that falls back on the pod's limits follow,
// that container restarts for its cpu policy, and the status's pod-level
// resources and allocatedResources report the new values.
func TestPodLevelResize(t *testing.T) {
	e := newEnv(t)
	e.apply(resizePodLevelYAML)
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	check := func(p *corev1.Pod, cpu, mem string) {
		t.Helper()
		q, m := resource.MustParse(cpu), resource.MustParse(mem)
		want := cgLimits{shares: q.MilliValue() * 1024 / 1000, quota: q.MilliValue() * 100, period: 100000, memory: m.Value()}
		if got := cgRead(t, e.podCgroupRel(p)); got != cgExpected(want) {
			t.Errorf("pod cgroup: %+v, want %+v", got, cgExpected(want))
		}
		c1 := containerState(p, "c1")
		if got := cgRead(t, e.containerCgroupRel(p, strings.TrimPrefix(c1.ContainerID, "podrun://"))); got != cgExpected(want) {
			t.Errorf("c1's cgroup (the pod's limits): %+v, want %+v", got, cgExpected(want))
		}
		res := corev1.ResourceRequirements{Requests: rl(cpu, mem), Limits: rl(cpu, mem)}
		if p.Status.Resources == nil || !equality.Semantic.DeepEqual(*p.Status.Resources, res) || !equality.Semantic.DeepEqual(p.Status.AllocatedResources, res.Requests) {
			t.Errorf("status resources %+v, allocatedResources %v; want %+v", p.Status.Resources, p.Status.AllocatedResources, res)
		}
	}
	p := e.waitFor("plr", time.Minute, "running", func(p *corev1.Pod) bool { return containerState(p, "c1").State.Running != nil })
	check(p, "100m", "64Mi")
	if st := containerState(p, "init"); st.Resources == nil || !equality.Semantic.DeepEqual(st.AllocatedResources, rl("20m", "20Mi")) {
		t.Errorf("init's status resources %+v, allocated %v", st.Resources, st.AllocatedResources)
	}
	e.must("patch", "pod", "plr", "--subresource", "resize", "-p",
		`{"spec":{"resources":{"requests":{"cpu":"200m","memory":"128Mi"},"limits":{"cpu":"200m","memory":"128Mi"}},"initContainers":[{"name":"init","resources":{"requests":{"cpu":"30m"},"limits":{"cpu":"30m"}}}]}}`)
	p = e.waitFor("plr", time.Minute, "the resize actuated", func(p *corev1.Pod) bool {
		c1 := containerState(p, "c1")
		return c1.RestartCount == 1 && c1.State.Running != nil && p.Status.Resources != nil && p.Status.Resources.Limits.Cpu().MilliValue() == 200
	})
	check(p, "200m", "128Mi")
	if got := p.Spec.InitContainers[0].Resources.Limits.Cpu().MilliValue(); got != 30 {
		t.Errorf("init's cpu limit after the resize: %dm", got)
	}
	if st := containerState(p, "init"); st.RestartCount != 0 {
		t.Errorf("init ran again: restartCount %d", st.RestartCount)
	}
	e.mustFail(
		failure{[]string{"patch", "pod", "plr", "--subresource", "resize", "-p", `{"spec":{"resources":{"limits":{"memory":null}}}}`}, 2, "spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"},
		failure{[]string{"patch", "pod", "plr", "--subresource", "resize", "-p", `{"spec":{"resources":{"limits":{"ephemeral-storage":"1Gi"}}}}`}, 2, `spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage"`},
	)
}
