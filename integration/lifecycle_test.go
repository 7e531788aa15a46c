package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

// fastBackoff makes crash-loop backoff waits short (1s, 2s, 4s cap), like the
// kubelet's configurable backoff, so restarts can be observed quickly.
var fastBackoff = []string{"--crashloop-backoff-initial", "1s", "--crashloop-backoff-max", "4s"}

func (e *env) fast(args ...string) result {
	e.t.Helper()
	return e.must(append(append([]string{}, fastBackoff...), args...)...)
}

// events reads the pod's event list from its record.
func (e *env) events(p *corev1.Pod) []map[string]any {
	data, _ := os.ReadFile(filepath.Join(e.root, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), "events.jsonl"))
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

func TestInitContainerCrashLoopsUnderAlways(t *testing.T) {
	e := newEnv(t)
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: crashloop}
spec:
  initContainers:
  - {name: init, image: busybox:1.28, command: ['sh', '-c', 'echo attempt; exit 1']}
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`))
	seen := map[string]bool{}
	p := e.waitFor("crashloop", time.Minute, "restarted three times", func(p *corev1.Pod) bool {
		seen[e.status("crashloop")] = true
		return containerState(p, "init").RestartCount >= 3
	})
	for _, s := range []string{"Init:Error", "Init:CrashLoopBackOff"} {
		if !seen[s] {
			t.Errorf("STATUS never showed %s (saw %v)", s, seen)
		}
	}
	if p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase %s, want Pending", p.Status.Phase)
	}
	app := containerState(p, "app")
	if app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" || app.ContainerID != "" {
		t.Fatalf("app container %+v: must never start", app)
	}
	init := containerState(p, "init")
	if last := init.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || last.Reason != "Error" {
		t.Fatalf("lastState %+v", init.LastTerminationState)
	}
	// Each run has its own log; -p shows the previous one.
	if out := e.must("logs", "crashloop", "-c", "init", "-p").stdout; out != "attempt\n" {
		t.Fatalf("logs -p %q", out)
	}
	cond := corev1.PodCondition{}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodInitialized {
			cond = c
		}
	}
	if cond.Status != corev1.ConditionFalse || cond.Reason != "ContainersNotInitialized" || cond.Message != "containers with incomplete status: [init]" {
		t.Fatalf("Initialized condition %+v", cond)
	}
}

func TestAppContainerRestartsWithGrowingBackoff(t *testing.T) {
	e := newEnv(t)
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: flaky}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sh', '-c', 'date +%s.%N; exit 2']}
`))
	seen := map[string]bool{}
	p := e.waitFor("flaky", time.Minute, "restarted four times", func(p *corev1.Pod) bool {
		seen[e.status("flaky")] = true
		return containerState(p, "app").RestartCount >= 4
	})
	if !seen["CrashLoopBackOff"] {
		t.Errorf("STATUS never showed CrashLoopBackOff (saw %v)", seen)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s, want Running (restartPolicy Always)", p.Status.Phase)
	}
	// The gaps between runs grow: immediate, then 1s, 2s (kubelet: 0, 10s, 20s).
	var starts []time.Time
	for _, ev := range e.events(p) {
		if ev["reason"] == "Started" {
			ts, _ := time.Parse(time.RFC3339Nano, ev["time"].(string))
			starts = append(starts, ts)
		}
	}
	if len(starts) < 4 {
		t.Fatalf("%d Started events", len(starts))
	}
	g1, g2, g3 := starts[1].Sub(starts[0]), starts[2].Sub(starts[1]), starts[3].Sub(starts[2])
	t.Logf("gaps between runs: %s %s %s", g1, g2, g3)
	if g2 < time.Second || g3 < 2*time.Second {
		t.Fatalf("restarts did not back off: gaps %s %s %s", g1, g2, g3)
	}
	var backoffs int
	for _, ev := range e.events(p) {
		if ev["reason"] == "BackOff" {
			backoffs++
		}
	}
	if backoffs == 0 {
		t.Fatal("no BackOff event")
	}
}

func TestOnFailureRestartsUntilSuccess(t *testing.T) {
	e := newEnv(t)
	marker := t.TempDir()
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: onfailure}
spec:
  restartPolicy: OnFailure
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'echo run >> /m/runs; [ $(wc -l < /m/runs) -ge 3 ]']
    volumeMounts: [{name: m, mountPath: /m}]
  volumes: [{name: m, hostPath: {path: `+marker+`}}]
`))
	p := e.waitPhase("onfailure", corev1.PodSucceeded, time.Minute)
	if rc := containerState(p, "app").RestartCount; rc != 2 {
		t.Fatalf("restartCount %d, want 2", rc)
	}
	if s := e.status("onfailure"); s != "Completed" {
		t.Fatalf("STATUS %s", s)
	}
}

func TestPodRestartRerunsInitContainers(t *testing.T) {
	e := newEnv(t)
	marker := t.TempDir()
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: again}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: init
    image: busybox:1.28
    command: ['sh', '-c', 'echo init >> /m/log']
    volumeMounts: [{name: m, mountPath: /m}]
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'trap "exit 0" TERM; echo app >> /m/log; sleep 3600 & wait']
    volumeMounts: [{name: m, mountPath: /m}]
  volumes: [{name: m, hostPath: {path: `+marker+`}}]
`, "--wait")
	e.must("restart", "again")
	p := e.waitFor("again", time.Minute, "running again", func(p *corev1.Pod) bool {
		return containerState(p, "app").RestartCount == 1 && containerState(p, "app").State.Running != nil
	})
	// Running means the app's process was started, not that its shell has
	// written yet: wait for its line.
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(marker, "log"))
		if got = strings.Fields(string(data)); len(got) >= 4 || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, []string{"init", "app", "init", "app"}) {
		t.Fatalf("runs %v, want init app init app", got)
	}
	if rc := containerState(p, "init").RestartCount; rc != 1 {
		t.Fatalf("init restartCount %d", rc)
	}
}

func TestActiveDeadlineFailsThePod(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 3
  initContainers:
  - {name: init, image: busybox:1.28, command: ['true']}
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	seen := map[string]bool{}
	p := e.waitFor("deadline", time.Minute, "failed with DeadlineExceeded and stopped", func(p *corev1.Pod) bool {
		seen[e.status("deadline")] = true
		return p.Status.Phase == corev1.PodFailed && containerState(p, "app").State.Terminated != nil
	})
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if !seen["DeadlineExceeded"] {
		t.Errorf("STATUS never showed DeadlineExceeded (saw %v)", seen)
	}
	// The deadline counts the init containers too and the pod stops for good.
	time.Sleep(time.Second)
	if p2 := e.pod("deadline"); containerState(p2, "app").RestartCount != 0 {
		t.Fatalf("app restarted after the deadline")
	}
}

func TestJobWithSidecarSucceeds(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      initContainers:
      - name: logshipper
        image: busybox:1.28
        restartPolicy: Always
        command: ['sh', '-c', 'trap "echo sidecar stopping; exit 0" TERM; echo sidecar up; while true; do sleep 0.1; done']
      containers:
      - {name: work, image: busybox:1.28, command: ['sh', '-c', 'echo working; sleep 1']}
`)
	// The Job controller names its pod job-<5 chars>.
	e.must("wait", "--for=condition=complete", "job/job", "--timeout", "60s")
	pods := e.jobPods("job")
	if len(pods) != 1 || !strings.HasPrefix(pods[0].Name, "job-") {
		t.Fatalf("%d pods", len(pods))
	}
	name := pods[0].Name
	p := e.pod(name)
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	side := containerState(p, "logshipper").State.Terminated
	work := containerState(p, "work").State.Terminated
	if side == nil || work == nil {
		t.Fatalf("sidecar %+v work %+v: both must have stopped", side, work)
	}
	if side.FinishedAt.Before(&work.FinishedAt) {
		t.Fatalf("the sidecar stopped (%s) before the app container (%s)", side.FinishedAt, work.FinishedAt)
	}
	if out := e.must("logs", name, "-c", "logshipper").stdout; out != "sidecar up\nsidecar stopping\n" {
		t.Fatalf("sidecar logs %q: it must be asked to stop with SIGTERM", out)
	}
	if s := e.status(name); s != "Completed" {
		t.Fatalf("STATUS %s", s)
	}
	if p.Labels["job-name"] != "job" {
		t.Fatalf("labels %v, want job-name=job", p.Labels)
	}
}

func TestTerminationMessages(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: messages}
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: busybox:1.28
    command: ['sh', '-c', 'echo -n "written to the file" > /dev/termination-log']
  - name: custom-path
    image: busybox:1.28
    terminationMessagePath: /tmp/my-message
    command: ['sh', '-c', 'echo -n custom > /tmp/my-message; exit 1']
  - name: fallback
    image: busybox:1.28
    terminationMessagePolicy: FallbackToLogsOnError
    command: ['sh', '-c', 'echo first; echo last words; exit 3']
  - name: fallback-success
    image: busybox:1.28
    terminationMessagePolicy: FallbackToLogsOnError
    command: ['sh', '-c', 'echo not a message']
`)
	p := e.waitPhase("messages", corev1.PodFailed, time.Minute)
	for name, want := range map[string]string{
		"file":             "written to the file",
		"custom-path":      "custom",
		"fallback":         "first\nlast words\n",
		"fallback-success": "",
	} {
		term := containerState(p, name).State.Terminated
		if term == nil || term.Message != want {
			t.Errorf("%s: message %+v, want %q", name, term, want)
		}
	}
}

func TestEnvFromManifestObjectsAndDownwardAPI(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {MODE: fast, GREETING: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata:
  name: envpod
  labels: {app: demo}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'echo "$GREETING $WHO $MODE $PASSWORD $POD_NAME $POD_NS $POD_IP $MEM" $(ARG)']
    env:
    - {name: WHO, value: world}
    - {name: ARG, value: expanded}
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: creds, key: password}}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: MEM
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    envFrom:
    - configMapRef: {name: settings}
    resources:
      limits: {memory: 64Mi}
`)
	p := e.waitPhase("envpod", corev1.PodSucceeded, time.Minute)
	want := "hello world fast s3cret envpod default " + p.Status.PodIP + " 64 expanded\n"
	if out := e.must("logs", "envpod").stdout; out != want {
		t.Fatalf("env printed %q, want %q", out, want)
	}
}

func TestShareProcessNamespace(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: shared}
spec:
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: first, image: busybox:1.28, command: ['sleep', '3600']}
  - name: second
    image: busybox:1.28
    command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
`, "--wait")
	// Containers see each other's processes, with the pod's holder as PID 1.
	out := e.must("exec", "shared", "-c", "second", "--", "ps", "-o", "pid,comm").stdout
	if !strings.Contains(out, "sleep") || !strings.Contains(out, "\n    1 ") {
		t.Fatalf("ps in a shared process namespace:\n%s", out)
	}
	// The holder sits in a sandbox cgroup of its own below the pod's, as the
	// kubelet's pause container does: on cgroup v2 a pod cgroup holding a
	// process could not give the container cgroups their controllers.
	uid := string(e.pod("shared").UID)
	podDirs := podCgroupDirs(t, uid)
	if len(podDirs) == 0 {
		t.Fatalf("no cgroup of pod %s found", uid)
	}
	holders := 0
	for _, d := range podDirs {
		if procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs")); len(strings.TrimSpace(string(procs))) > 0 {
			t.Errorf("pod cgroup %s holds processes %q; its helpers belong in its sandbox cgroup", d, procs)
		}
		sandboxes, _ := filepath.Glob(filepath.Join(d, "*sandbox*"))
		for _, sb := range sandboxes {
			procs, _ := os.ReadFile(filepath.Join(sb, "cgroup.procs"))
			for _, pid := range strings.Fields(string(procs)) {
				cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				if !strings.HasSuffix(string(cmdline), "\x00pause\x00") {
					t.Errorf("sandbox cgroup %s holds %s (%q), not only the holder", sb, pid, cmdline)
				}
				holders++
			}
		}
	}
	if holders == 0 {
		t.Errorf("the PID namespace holder is in no sandbox cgroup below %v", podDirs)
	}
	// Without sharing, a container sees only its own.
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  containers:
  - {name: first, image: busybox:1.28, command: ['sleep', '3600']}
  - {name: second, image: busybox:1.28, command: ['sleep', '3601']}
`, "--wait")
	out = e.must("exec", "private", "-c", "second", "--", "ps", "-o", "args").stdout
	if strings.Contains(out, "3600") {
		t.Fatalf("a private process namespace shows the other container:\n%s", out)
	}
}

// podCgroupDirs finds the pod's cgroup directories in every hierarchy, in the
// cgroupfs layout (pod<uid>) and the systemd one (...-pod<uid_>.slice).
func podCgroupDirs(t *testing.T, uid string) []string {
	t.Helper()
	names := map[string]bool{"pod" + uid: true}
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if names[d.Name()] || strings.HasSuffix(d.Name(), "-pod"+strings.ReplaceAll(uid, "-", "_")+".slice") {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

func TestLostSupervisorShowsUnknownAndApplyRestartsThePod(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: phoenix}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: init, image: busybox:1.28, command: ['true']}
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	e.must("apply", manifest, "--wait")
	p := e.pod("phoenix")
	e.crashSupervisor(string(p.UID))
	lost := e.pod("phoenix")
	if lost.Status.Phase != corev1.PodUnknown || e.status("phoenix") != "Unknown" {
		t.Fatalf("phase %s STATUS %s, want Unknown once nothing supervises the pod", lost.Status.Phase, e.status("phoenix"))
	}
	if r := e.must("apply", manifest, "--wait"); !strings.Contains(r.stdout, "pod/phoenix restarted") {
		t.Fatalf("apply of a lost pod: %s", r)
	}
	back := e.pod("phoenix")
	if back.UID != p.UID || back.Status.Phase != corev1.PodRunning {
		t.Fatalf("uid %s phase %s", back.UID, back.Status.Phase)
	}
	app := containerState(back, "app")
	if app.RestartCount != 1 || app.LastTerminationState.Terminated == nil || app.LastTerminationState.Terminated.Reason != "ContainerStatusUnknown" {
		t.Fatalf("app %+v: want restartCount 1 and the lost run as lastState", app)
	}
	if containerState(back, "init").RestartCount != 1 {
		t.Fatalf("init containers did not run again: %+v", containerState(back, "init"))
	}
	// Applying once more while it runs changes nothing.
	if r := e.must("apply", manifest); !strings.Contains(r.stdout, "unchanged") {
		t.Fatalf("apply again: %s", r)
	}
}

// With the kubelet's own backoff (10s, then 20s), in real time: the first
// restart comes at once, the next ones wait 10s and 20s.
func TestRealTimeBackoffDelays(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: realtime}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sh', '-c', 'exit 1']}
`)
	p := e.waitFor("realtime", 90*time.Second, "started four times", func(p *corev1.Pod) bool {
		return containerState(p, "app").RestartCount >= 3
	})
	var starts []time.Time
	for _, ev := range e.events(p) {
		if ev["reason"] == "Started" {
			ts, _ := time.Parse(time.RFC3339Nano, ev["time"].(string))
			starts = append(starts, ts)
		}
	}
	if len(starts) < 4 {
		t.Fatalf("%d Started events", len(starts))
	}
	gaps := []time.Duration{starts[1].Sub(starts[0]), starts[2].Sub(starts[1]), starts[3].Sub(starts[2])}
	t.Logf("gaps between runs: %v", gaps)
	if gaps[0] >= 5*time.Second || gaps[1] < 10*time.Second || gaps[1] >= 15*time.Second || gaps[2] < 20*time.Second || gaps[2] >= 25*time.Second {
		t.Fatalf("gaps %v, want about 1s, 10s, 20s", gaps)
	}
}

func TestImageStopSignalAndStatusStrings(t *testing.T) {
	e := newEnv(t)
	// The busybox image again, with STOPSIGNAL SIGUSR1.
	var layers []archive.Layer
	for _, l := range imgDockerArchiveLayers(t, testImage) {
		layers = append(layers, archive.Layer{Tar: l})
	}
	img := imgWriteArchive(t, archive.DockerArchive, "stopsig:1", v1.ImageConfig{
		Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"sh"}, StopSignal: "SIGUSR1",
	}, layers...)
	e.must("load", "-i", img)
	out := t.TempDir()
	// kubectl walks the containers from the last: with "done" last and
	// "failing" before it, STATUS is NotReady, then Error once "failing" fails.
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: sig}
spec:
  terminationGracePeriodSeconds: 20
  restartPolicy: Never
  containers:
  - name: app
    image: stopsig:1
    imagePullPolicy: Never
    command: ['sh', '-c', 'trap "echo USR1 > /out/sig; sleep 2; exit 0" USR1; trap "echo TERM > /out/sig; exit 0" TERM; while true; do sleep 0.1; done']
    volumeMounts: [{name: out, mountPath: /out}]
  - name: failing
    image: busybox:1.28
    command: ['sh', '-c', 'sleep 2; exit 4']
  - name: done
    image: busybox:1.28
    command: ['true']
  volumes: [{name: out, hostPath: {path: ` + out + `}}]
`)
	// One container completed, one running: NotReady, as kubectl says.
	e.waitFor("sig", 30*time.Second, "NotReady", func(*corev1.Pod) bool { return e.status("sig") == "NotReady" })
	e.waitFor("sig", 30*time.Second, "Error", func(*corev1.Pod) bool { return e.status("sig") == "Error" })
	// Terminating while the delete runs, then the image's stop signal ends the container.
	done := make(chan result, 1)
	go func() { done <- e.podrun("delete", "sig") }()
	seenTerminating := false
	for i := 0; i < 100 && !seenTerminating; i++ {
		r := e.podrun("get", "sig")
		seenTerminating = strings.Contains(r.stdout, "Terminating")
		if r.code != 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("delete: %s", r)
	}
	if !seenTerminating {
		t.Error("STATUS never showed Terminating during the delete")
	}
	if data, _ := os.ReadFile(filepath.Join(out, "sig")); string(data) != "USR1\n" {
		t.Fatalf("the container was stopped with %q, want the image's STOPSIGNAL (USR1)", data)
	}
}
