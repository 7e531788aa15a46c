package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/systemd"
	corev1 "k8s.io/api/core/v1"
)

// cgLimits are the values of one cgroup as the kubelet derives them
// (pkg/kubelet/cm/helpers_linux.go): cpu.shares, the CFS quota over its
// period, the memory limit. -1 means no limit.
type cgLimits struct {
	shares, quota, period, memory int64
}

func (l cgLimits) String() string {
	return fmt.Sprintf("shares %d, quota %d/%d, memory %d", l.shares, l.quota, l.period, l.memory)
}

var cgNoLimits = cgLimits{shares: 2, quota: -1, period: -1, memory: -1}

// cgGate makes an init container wait until the test has read its cgroup:
// init containers run one by one and are gone once they exit.
func cgGate(name, resources string) string {
	return fmt.Sprintf(`
  - name: %s
    image: busybox:1.28
    command: ['sh', '-c', 'until [ -e /gate/%s ]; do sleep 0.1; done']
    volumeMounts: [{name: gate, mountPath: /gate}]
    resources: %s`, name, name, resources)
}

func TestCgroupsPodAndContainerValues(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		spec  string // initContainers and containers
		inits []string
		qos   corev1.PodQOSClass
		pod   cgLimits
		// Every container's own cgroup, init containers included.
		containers map[string]cgLimits
		// The effective pod values `podrun describe` shows.
		requests, limits map[string]string
	}{
		{
			// The seed example: init limits 100m/1Gi and 50m/2Gi, two apps at
			// 10m/1100Mi. Effective: max(100m, 2×10m) = 100m cpu, max(2Gi,
			// 2×1100Mi) = 2200Mi memory; requests default to the limits.
			name: "seed-guaranteed",
			spec: `
  initContainers:` + cgGate("init-1", "{limits: {cpu: 100m, memory: 1Gi}}") + cgGate("init-2", "{limits: {cpu: 50m, memory: 2Gi}}") + `
  containers:
  - {name: app-1, image: busybox:1.28, command: ` + netIdle + `, resources: {limits: {cpu: 10m, memory: 1100Mi}}}
  - {name: app-2, image: busybox:1.28, command: ` + netIdle + `, resources: {limits: {cpu: 10m, memory: 1100Mi}}}`,
			inits: []string{"init-1", "init-2"},
			qos:   corev1.PodQOSGuaranteed,
			pod:   cgLimits{shares: 102, quota: 10000, period: 100000, memory: 2200 << 20},
			containers: map[string]cgLimits{
				"init-1": {shares: 102, quota: 10000, period: 100000, memory: 1 << 30},
				"init-2": {shares: 51, quota: 5000, period: 100000, memory: 2 << 30},
				"app-1":  {shares: 10, quota: 1000, period: 100000, memory: 1100 << 20},
				"app-2":  {shares: 10, quota: 1000, period: 100000, memory: 1100 << 20},
			},
			requests: map[string]string{"cpu": "100m", "memory": "2200Mi"},
			limits:   map[string]string{"cpu": "100m", "memory": "2200Mi"},
		},
		{
			name: "besteffort",
			spec: `
  containers:
  - {name: app, image: busybox:1.28, command: ` + netIdle + `}`,
			qos:        corev1.PodQOSBestEffort,
			pod:        cgNoLimits,
			containers: map[string]cgLimits{"app": cgNoLimits},
		},
		{
			// Every container declares a cpu limit, so the pod gets a quota
			// (300m); one lacks a memory limit, so the pod gets none.
			name: "burstable-one-without-memory-limit",
			spec: `
  containers:
  - name: limited
    image: busybox:1.28
    command: ` + netIdle + `
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}
  - name: unlimited-memory
    image: busybox:1.28
    command: ` + netIdle + `
    resources: {requests: {cpu: 50m}, limits: {cpu: 100m}}`,
			qos: corev1.PodQOSBurstable,
			pod: cgLimits{shares: 153, quota: 30000, period: 100000, memory: -1},
			containers: map[string]cgLimits{
				"limited":          {shares: 102, quota: 20000, period: 100000, memory: 128 << 20},
				"unlimited-memory": {shares: 51, quota: 10000, period: 100000, memory: -1},
			},
			// podrun shows a limit only where the pod has one (podspec.EffectiveLimits);
			// resource.PodLimits would add the 128Mi that only one container declares.
			requests: map[string]string{"cpu": "150m", "memory": "64Mi"},
			limits:   map[string]string{"cpu": "300m"},
		},
		{
			// Pod-level resources (PodLevelResources): the pod cgroup takes
			// spec.resources' limits whatever the containers declare; the pod's
			// requests default to the containers' aggregate (memory 64Mi, from
			// the capped container's limit) or, without one, to the pod limit
			// (cpu 500m). Requests below the limits: Burstable. A container
			// without a cpu or memory limit of its own takes the pod's
			// (kuberuntime's getCPULimit, getMemoryLimit), its shares too
			// when it has no cpu request.
			name: "pod-level-resources",
			spec: `
  resources: {limits: {cpu: 500m, memory: 128Mi}}
  containers:
  - {name: free, image: busybox:1.28, command: ` + netIdle + `}
  - {name: capped, image: busybox:1.28, command: ` + netIdle + `, resources: {limits: {memory: 64Mi}}}`,
			qos: corev1.PodQOSBurstable,
			pod: cgLimits{shares: 512, quota: 50000, period: 100000, memory: 128 << 20},
			containers: map[string]cgLimits{
				"free":   {shares: 512, quota: 50000, period: 100000, memory: 128 << 20},
				"capped": {shares: 512, quota: 50000, period: 100000, memory: 64 << 20},
			},
			requests: map[string]string{"cpu": "500m", "memory": "64Mi"},
			limits:   map[string]string{"cpu": "500m", "memory": "128Mi"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cgSubEnv(e, t)
			gate := t.TempDir()
			e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:%s
  volumes: [{name: gate, hostPath: {path: %s}}]
`, tc.name, tc.spec, gate))
			p := e.pod(tc.name)
			podRel := e.podCgroupRel(p)
			check := func(what, rel string, want cgLimits) {
				t.Helper()
				if got := cgRead(t, rel); got != cgExpected(want) {
					t.Errorf("%s cgroup %s: %v, want %v", what, rel, got, cgExpected(want))
				}
			}
			running := func(name string) string {
				t.Helper()
				p := e.waitFor(tc.name, time.Minute, name+" running", func(p *corev1.Pod) bool {
					return containerState(p, name).State.Running != nil
				})
				return strings.TrimPrefix(containerState(p, name).ContainerID, "podrun://")
			}
			inPod := func(name, id string) {
				t.Helper()
				rel := e.containerCgroupRel(p, id)
				check("container "+name, rel, tc.containers[name])
				if procs := cgProcs(t, rel); len(procs) == 0 {
					t.Errorf("container %s: no process in its cgroup %s", name, rel)
				}
				if n, want := len(cgroupDirs(rel)), len(cgroupDirs(podRel)); n != want || n == 0 {
					t.Errorf("container %s has its cgroup in %d hierarchies, the pod in %d", name, n, want)
				}
			}

			// The pod cgroup has its final values from the first init
			// container on, and init containers run in children of it with
			// their own values.
			for _, name := range tc.inits {
				id := running(name)
				check("pod", podRel, tc.pod)
				inPod(name, id)
				if err := os.WriteFile(filepath.Join(gate, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ids := map[string]string{}
			for _, c := range p.Spec.Containers {
				ids[c.Name] = running(c.Name)
			}
			check("pod", podRel, tc.pod)
			for name, id := range ids {
				inPod(name, id)
			}
			if got := e.pod(tc.name).Status.QOSClass; got != tc.qos {
				t.Errorf("status.qosClass %q, want %q", got, tc.qos)
			}

			d := e.must("describe", tc.name).stdout
			if got := cgDescribeField(d, "QoS Class"); got != string(tc.qos) {
				t.Errorf("describe shows QoS Class %q, want %q", got, tc.qos)
			}
			if got := cgDescribeField(d, "Pod Cgroup"); got != podRel {
				t.Errorf("describe shows Pod Cgroup %q, want %q", got, podRel)
			}
			requests, limits := cgDescribeEffective(d)
			if !cgSameMap(requests, tc.requests) || !cgSameMap(limits, tc.limits) {
				t.Errorf("describe shows effective requests %v and limits %v, want %v and %v\n%s", requests, limits, tc.requests, tc.limits, d)
			}

			// A container may be deleted before its shell installs the
			// TERM trap (at 10m cpu a shell starts slowly): do not wait 30s.
			e.must("delete", tc.name, "--grace-period", "1")
			if left := cgPodDirs(e, p); len(left) != 0 {
				t.Errorf("pod cgroup left after delete: %v", left)
			}
		})
	}
}

// The OOM killer's verdict shows in the container status as the kubelet
// reports it, and the restart policy applies to it like to any failure.
func TestCgroupsOOMKilledContainer(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		policy corev1.RestartPolicy
		check  func(t *testing.T, e *env, name string)
	}{
		{corev1.RestartPolicyNever, func(t *testing.T, e *env, name string) {
			p := e.waitPhase(name, corev1.PodFailed, time.Minute)
			cgCheckOOM(t, "state", containerState(p, "hog").State.Terminated)
			if got := e.status(name); got != "OOMKilled" {
				t.Errorf("STATUS %q, want OOMKilled", got)
			}
		}},
		{corev1.RestartPolicyOnFailure, func(t *testing.T, e *env, name string) {
			p := e.waitFor(name, time.Minute, "restarted after the OOM kill", func(p *corev1.Pod) bool {
				return containerState(p, "hog").RestartCount > 0
			})
			cgCheckOOM(t, "lastState", containerState(p, "hog").LastTerminationState.Terminated)
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("phase %s while the container restarts, want Running", p.Status.Phase)
			}
		}},
	}
	// The shell grows a variable to 100MB through a pipe: real RSS, charged
	// to the container, far past its 32Mi.
	for _, tc := range cases {
		e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: oom-%s}
spec:
  restartPolicy: %s
  containers:
  - name: hog
    image: busybox:1.28
    command: ['sh', '-c', 'x=$(head -c 100000000 /dev/zero | tr "\0" a); echo survived with ${#x} bytes']
    resources: {limits: {memory: 32Mi}}
`, strings.ToLower(string(tc.policy)), tc.policy))
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := cgSubEnv(e, t)
			name := "oom-" + strings.ToLower(string(tc.policy))
			tc.check(t, e, name)
			if out := e.must("logs", name).stdout; strings.Contains(out, "survived") {
				t.Errorf("the container outlived its memory limit: %q", out)
			}
		})
	}
}

// cgSubEnv is e reporting to a subtest: the harness's helpers fail the
// test they were made for, and a subtest must not FailNow its parent.
func cgSubEnv(e *env, t *testing.T) *env {
	sub := *e
	sub.t = t
	return &sub
}

func cgCheckOOM(t *testing.T, what string, term *corev1.ContainerStateTerminated) {
	t.Helper()
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("%s %+v, want terminated with reason OOMKilled and exit code 137", what, term)
	}
}

// Delete removes the pod cgroup and every child in every hierarchy after
// the processes in them are gone, also when the supervisor was killed.
func TestCgroupsRemovedOnDeleteAlsoAfterSupervisorCrash(t *testing.T) {
	e := newEnv(t)
	for _, crash := range []bool{false, true} {
		name := "tidy"
		if crash {
			name = "crashed"
		}
		t.Run(name, func(t *testing.T) {
			e := cgSubEnv(e, t)
			// A child process of the container's init, and a container that
			// ignores SIGTERM: delete must still empty and remove every cgroup.
			e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: forks
    image: busybox:1.28
    command: ['sh', '-c', 'sleep 3600 & sleep 3600']
    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}}
  - name: idle
    image: busybox:1.28
    command: %s
`, name, netIdle), "--wait")
			p := e.pod(name)
			podRel := e.podCgroupRel(p)
			pids := cgTreeProcs(t, podRel)
			if len(pids) < 3 {
				t.Fatalf("processes in the pod cgroup: %v, want at least 3", pids)
			}
			if crash {
				e.crashSupervisor(string(p.UID))
				if len(cgPodDirs(e, p)) == 0 || len(cgTreeProcs(t, podRel)) != len(pids) {
					t.Fatal("the crash should have left the pod cgroup and its processes behind")
				}
			}
			e.must("delete", name, "--grace-period", "1")
			for _, pid := range pids {
				waitGone(t, pid)
			}
			if left := cgPodDirs(e, p); len(left) != 0 {
				t.Errorf("left after delete: %v", left)
			}
		})
	}
}

// cgExpected adapts kubelet values to what the host's cgroup version
// shows: on v2, cpu.weight from the shares (opencontainers/cgroups'
// conversion, which podrun documents).
func cgExpected(l cgLimits) cgLimits {
	if l.quota == -1 {
		l.period = -1 // not compared without a quota
	}
	if cg.IsCgroup2UnifiedMode() {
		l.shares = int64(cg.ConvertCPUSharesToCgroupV2Value(uint64(l.shares)))
	}
	return l
}

// cgRead reads a cgroup's values (rel is its path below the mounts); on v2
// shares holds cpu.weight.
func cgRead(t *testing.T, rel string) cgLimits {
	t.Helper()
	var l cgLimits
	if cg.IsCgroup2UnifiedMode() {
		dir := filepath.Join("/sys/fs/cgroup", rel)
		l.shares = cgInt(t, cgFile(t, dir, "cpu.weight"))
		f := strings.Fields(cgFile(t, dir, "cpu.max"))
		if len(f) != 2 {
			t.Fatalf("%s/cpu.max: %q", dir, f)
		}
		l.quota, l.period = -1, -1
		if f[0] != "max" {
			l.quota, l.period = cgInt(t, f[0]), cgInt(t, f[1])
		}
		l.memory = -1
		if m := cgFile(t, dir, "memory.max"); m != "max" {
			l.memory = cgInt(t, m)
		}
		return l
	}
	cpu, mem := cgMount(t, "cpu"), cgMount(t, "memory")
	l.shares = cgInt(t, cgFile(t, filepath.Join(cpu, rel), "cpu.shares"))
	l.quota = cgInt(t, cgFile(t, filepath.Join(cpu, rel), "cpu.cfs_quota_us"))
	l.period = -1
	if l.quota != -1 {
		l.period = cgInt(t, cgFile(t, filepath.Join(cpu, rel), "cpu.cfs_period_us"))
	}
	l.memory = cgInt(t, cgFile(t, filepath.Join(mem, rel), "memory.limit_in_bytes"))
	if l.memory >= 1<<62 { // v1 writes "unlimited" as the page-rounded maximum
		l.memory = -1
	}
	return l
}

func cgMount(t *testing.T, controller string) string {
	t.Helper()
	m, err := cg.FindCgroupMountpoint("", controller)
	if err != nil {
		t.Fatalf("finding the %s cgroup hierarchy: %v", controller, err)
	}
	return m
}

func cgFile(t *testing.T, dir, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("reading cgroup file: %v", err)
	}
	return strings.TrimSpace(string(data))
}

func cgInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("cgroup value %q: %v", s, err)
	}
	return n
}

// cgProcs lists the processes of one cgroup (memory hierarchy on v1).
func cgProcs(t *testing.T, rel string) []string {
	t.Helper()
	return cgDirProcs(t, cgMemoryDir(t, rel))
}

// cgTreeProcs lists the processes of a cgroup and all its descendants.
func cgTreeProcs(t *testing.T, rel string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(cgMemoryDir(t, rel), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			out = append(out, cgDirProcs(t, p)...)
		}
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("walking cgroup %s: %v", rel, err)
	}
	return out
}

// cgMemoryDir is the host directory of a cgroup: the unified one on v2, the memory hierarchy's on v1.
func cgMemoryDir(t *testing.T, rel string) string {
	t.Helper()
	if cg.IsCgroup2UnifiedMode() {
		return filepath.Join("/sys/fs/cgroup", rel)
	}
	return filepath.Join(cgMount(t, "memory"), rel)
}

func cgDirProcs(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatalf("reading the processes of cgroup %s: %v", dir, err)
	}
	return strings.Fields(string(data))
}

// cgPodDirs lists the pod's cgroup directories, in any hierarchy, that still exist.
func cgPodDirs(e *env, p *corev1.Pod) []string {
	return append(cgroupDirs(filepath.Join(e.cgroupParent, "pod"+string(p.UID))), cgroupDirs(systemdPodRel(e.t, e.cgroupParent, p))...)
}

// cgroupDriver is the driver the pod was applied with, as its record keeps it
// (record.json's settings; teardown and describe use it, not the current flags).
func (e *env) cgroupDriver(p *corev1.Pod) string {
	data, err := os.ReadFile(filepath.Join(e.root, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "record.json"))
	if err != nil {
		e.t.Fatalf("the pod's record: %v", err)
	}
	var rec struct {
		Settings struct {
			CgroupDriver string `json:"cgroupDriver"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Settings.CgroupDriver == "" {
		e.t.Fatalf("the pod's recorded cgroup driver: %v (%s)", err, data)
	}
	return rec.Settings.CgroupDriver
}

// podCgroupRel is the pod cgroup's path below the mounts: <parent>/pod<uid>,
// or the kubelet's systemd naming, <parent>.slice/<parent>-pod<uid>.slice.
func (e *env) podCgroupRel(p *corev1.Pod) string {
	if e.cgroupDriver(p) != "systemd" {
		return filepath.Join(e.cgroupParent, "pod"+string(p.UID))
	}
	return systemdPodRel(e.t, e.cgroupParent, p)
}

func systemdPodRel(t *testing.T, cgroupParent string, p *corev1.Pod) string {
	parent := strings.ReplaceAll(strings.Trim(cgroupParent, "/"), "-", "_")
	rel, err := systemd.ExpandSlice(parent + "-pod" + strings.ReplaceAll(string(p.UID), "-", "_") + ".slice")
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// containerCgroupRel is the container's cgroup: a child of the pod's, a
// podrun-<id>.scope under the systemd driver.
func (e *env) containerCgroupRel(p *corev1.Pod, id string) string {
	if e.cgroupDriver(p) == "systemd" {
		return filepath.Join(e.podCgroupRel(p), "podrun-"+id+".scope")
	}
	return filepath.Join(e.podCgroupRel(p), id)
}

// cgDescribeField returns the value of a top-level `Key: value` line of describe output.
func cgDescribeField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cgDescribeEffective parses the "Effective Resources:" section of describe output.
func cgDescribeEffective(out string) (requests, limits map[string]string) {
	requests, limits = map[string]string{}, map[string]string{}
	var cur map[string]string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "Effective Resources:":
			in = true
		case !in:
		case !strings.HasPrefix(line, " "):
			return requests, limits
		case strings.TrimSpace(line) == "Limits:":
			cur = limits
		case strings.TrimSpace(line) == "Requests:":
			cur = requests
		case cur != nil:
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				cur[k] = strings.TrimSpace(v)
			}
		}
	}
	return requests, limits
}

func cgSameMap(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
