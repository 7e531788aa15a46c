package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}

// Scenarios of the kubelet's node e2e tests for container lifecycle
// (test/e2e_node/container_lifecycle_test.go), run end to end through podrun.
// Each container runs the e2e tests' ExecCommand script, which logs
// "<time> <name> Starting|Started|Delaying|Exiting" lines into a per-container
// file on a shared emptyDir and to its own stdout (the file is replayed on
// every start, so the latest log holds the whole history); lcOutput merges the
// containers' logs and sorts them by time, as the e2e helper parseOutput does.
// Busybox from Debian has no nmeter, so the time is ash's $EPOCHREALTIME.

type lcExec struct {
	ExitCode, StartDelay, Delay, TerminationSeconds int
	LoopForever                                     bool
	ContainerName                                   string
}

// lcCommand is container_lifecycle_pod_construction.go's ExecCommand.
func lcCommand(name string, c lcExec) []string {
	var cmd bytes.Buffer
	const now = "$EPOCHREALTIME"
	containerName := name
	if c.ContainerName != "" {
		containerName = c.ContainerName
	}
	log := fmt.Sprintf("/persistent/%s.log", containerName)
	fmt.Fprintf(&cmd, "touch %s; ", log)
	if c.ContainerName == "" {
		fmt.Fprintf(&cmd, "cat %s >> /proc/1/fd/1; ", log)
	}
	fmt.Fprintf(&cmd, "echo %s '%s Starting %d' | tee -a %s >> /proc/1/fd/1; ", now, name, c.StartDelay, log)
	fmt.Fprintf(&cmd, "_term() { sleep %d; echo %s '%s Exiting' | tee -a %s >> /proc/1/fd/1; exit %d; }; ", c.TerminationSeconds, now, name, log, c.ExitCode)
	fmt.Fprintf(&cmd, "trap _term TERM; ")
	if c.StartDelay != 0 {
		fmt.Fprintf(&cmd, "exec sleep %d & wait $!; ", c.StartDelay)
	}
	fmt.Fprintf(&cmd, "touch started; ")
	fmt.Fprintf(&cmd, "echo %s '%s Started' | tee -a %s >> /proc/1/fd/1; ", now, name, log)
	fmt.Fprintf(&cmd, "echo %s '%s Delaying %d' | tee -a %s >> /proc/1/fd/1; ", now, name, c.Delay, log)
	if c.Delay != 0 {
		fmt.Fprintf(&cmd, "exec sleep %d & wait $!; ", c.Delay)
	}
	if c.LoopForever {
		fmt.Fprintf(&cmd, "while true; do echo %s '%s Looping' | tee -a %s >> /proc/1/fd/1 ; sleep 1 ; done; ", now, name, log)
	}
	fmt.Fprintf(&cmd, "echo %s '%s Exiting'  | tee -a %s >> /proc/1/fd/1; ", now, name, log)
	fmt.Fprintf(&cmd, "exit %d", c.ExitCode)
	return []string{"sh", "-c", cmd.String()}
}

func lcC(name string, c lcExec) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.28", Command: lcCommand(name, c)}
}

func lcSidecar(c corev1.Container) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func lcHook(name, container string, c lcExec) *corev1.LifecycleHandler {
	c.ContainerName = container
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: lcCommand(name, c)}}
}

func lcExecProbe(cmd ...string) corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

// lcPod builds the pod as preparePod does: every container gets the shared
// emptyDir at /persistent and 15Mi/35Mi of memory.
func lcPod(name string, policy corev1.RestartPolicy, inits []corev1.Container, regular ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{}
	p.APIVersion, p.Kind, p.Name = "v1", "Pod", name
	p.Spec.RestartPolicy = policy
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("15Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("35Mi")},
	}
	mounts := []corev1.VolumeMount{{Name: "persistent", MountPath: "/persistent"}}
	for _, c := range inits {
		c.Resources, c.VolumeMounts = res, mounts
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for _, c := range regular {
		c.Resources, c.VolumeMounts = res, mounts
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "persistent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	return p
}

// lcApply applies the pod; fast makes restart backoff 1s, 2s, 4s (the
// kubelet's 10s, 20s, 40s … would only make the tests slower).
func (e *env) lcApply(p *corev1.Pod, fast bool) {
	e.t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		e.t.Fatal(err)
	}
	var args []string
	if fast {
		args = append(args, fastBackoff...)
	}
	e.must(append(args, "apply", e.manifest(string(data)))...)
}

type lcLine struct {
	ts        float64
	name, cmd string
}

type lcOutput []lcLine

func (o lcOutput) String() string {
	var b strings.Builder
	for i, v := range o {
		fmt.Fprintf(&b, "%d) %.3f %s %s\n", i, v.ts, v.name, v.cmd)
	}
	return b.String()
}

// lcOutput is parseOutput: every container's log (the previous one when
// the current has none or is empty), merged and sorted by time.
func (e *env) lcOutput(name string) lcOutput {
	e.t.Helper()
	p := e.pod(name)
	var buf bytes.Buffer
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		r := e.podrun("logs", name, "-c", cs.Name)
		// A run that has just started may not have replayed its file yet
		// (the kubelet shows a restart a relist later); its previous run's
		// log holds the same history.
		if r.code != 0 || (r.stdout == "" && cs.RestartCount > 0) {
			r = e.podrun("logs", name, "-c", cs.Name, "-p")
		}
		buf.WriteString(r.stdout)
	}
	var out lcOutput
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			e.t.Fatalf("log line %q has fewer than 3 fields", sc.Text())
		}
		ts, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			e.t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, lcLine{ts, f[1], f[2]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	return out
}

func (o lcOutput) find(name, cmd string, from int) int {
	for i := from; i < len(o); i++ {
		if o[i].name == name && o[i].cmd == cmd {
			return i
		}
	}
	return -1
}

func (o lcOutput) runTogetherLhsFirst(lhs, rhs string) error {
	ls := o.find(lhs, "Started", 0)
	if ls == -1 {
		return fmt.Errorf("%s never started", lhs)
	}
	rs := o.find(rhs, "Started", ls+1)
	if rs == -1 {
		return fmt.Errorf("%s never started after %s", rhs, lhs)
	}
	le := o.find(lhs, "Exiting", ls+1)
	if le == -1 {
		return fmt.Errorf("%s never exited", lhs)
	}
	if rs > le {
		return fmt.Errorf("expected %s to start before %s exited", rhs, lhs)
	}
	re := o.find(rhs, "Exiting", rs+1)
	if re == -1 {
		return fmt.Errorf("%s never exited", rhs)
	}
	if ls > re {
		return fmt.Errorf("expected %s to start before %s exited", lhs, rhs)
	}
	return nil
}

func (o lcOutput) RunTogether(lhs, rhs string) error {
	if err := o.runTogetherLhsFirst(lhs, rhs); err != nil {
		if err := o.runTogetherLhsFirst(rhs, lhs); err != nil {
			return err
		}
	}
	return nil
}

func (o lcOutput) StartsBefore(lhs, rhs string) error {
	ls := o.find(lhs, "Started", 0)
	if ls == -1 {
		return fmt.Errorf("%s never started", lhs)
	}
	if o.find(rhs, "Starting", ls+1) == -1 {
		return fmt.Errorf("%s did not start after %s", rhs, lhs)
	}
	return nil
}

func (o lcOutput) DoesntStartAfter(lhs, rhs string) error {
	rs := o.find(rhs, "Starting", 0)
	if rs == -1 {
		return fmt.Errorf("%s never started", rhs)
	}
	if o.find(lhs, "Started", rs+1) != -1 {
		return fmt.Errorf("expected %s not to start after %s", lhs, rhs)
	}
	return nil
}

func (o lcOutput) ExitsBefore(lhs, rhs string) error {
	le := o.find(lhs, "Exiting", 0)
	if le == -1 {
		return fmt.Errorf("%s never exited", lhs)
	}
	if o.find(rhs, "Exiting", le+1) == -1 {
		return fmt.Errorf("%s did not exit after %s", rhs, lhs)
	}
	return nil
}

func (o lcOutput) Starts(name string) error {
	if o.find(name, "Started", 0) == -1 {
		return fmt.Errorf("%s never started", name)
	}
	return nil
}

func (o lcOutput) DoesntStart(name string) error {
	if o.find(name, "Started", 0) != -1 {
		return fmt.Errorf("%s started, but must not", name)
	}
	return nil
}

func (o lcOutput) Exits(name string) error {
	if o.find(name, "Exiting", 0) == -1 {
		return fmt.Errorf("%s never exited", name)
	}
	return nil
}

func (o lcOutput) HasRestarted(name string) error {
	i := o.find(name, "Starting", 0)
	if i == -1 {
		return fmt.Errorf("%s never started", name)
	}
	if o.find(name, "Starting", i+1) == -1 {
		return fmt.Errorf("%s never restarted", name)
	}
	return nil
}

func (o lcOutput) HasNotRestarted(name string) error {
	i := o.find(name, "Starting", 0)
	if i == -1 {
		return fmt.Errorf("%s never started", name)
	}
	if o.find(name, "Starting", i+1) != -1 {
		return fmt.Errorf("%s restarted, but must not", name)
	}
	return nil
}

// timeOf is the time (ms) of name's first cmd line, or of its last with last.
func (o lcOutput) timeOf(name, cmd string, last bool) (float64, error) {
	idx := -1
	for i, v := range o {
		if v.name == name && v.cmd == cmd {
			idx = i
			if !last {
				break
			}
		}
	}
	if idx == -1 {
		return 0, fmt.Errorf("no %s %s", name, cmd)
	}
	return o[idx].ts * 1000, nil
}

// lcCheck reports every failed ordering assertion with the merged log.
func lcCheck(t *testing.T, o lcOutput, errs ...error) {
	t.Helper()
	failed := false
	for _, err := range errs {
		if err != nil {
			t.Error(err)
			failed = true
		}
	}
	if failed {
		t.Logf("merged log:\n%s", o)
	}
}

func lcNotRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func lcRestarts(p *corev1.Pod, init bool, i int) int32 {
	s := p.Status.ContainerStatuses
	if init {
		s = p.Status.InitContainerStatuses
	}
	if i >= len(s) {
		return 0
	}
	return s[i].RestartCount
}

func lcSeconds(n int64) *int64 { return &n }

var _ = time.Second

// lcScenario is one e2e test: a pod, the state to wait for, and the
// assertions the e2e test makes once it is reached.
type lcScenario struct {
	pod     *corev1.Pod
	fast    bool
	timeout time.Duration
	what    string
	until   func(*corev1.Pod) bool
	check   func(t *testing.T, p *corev1.Pod, o lcOutput)
}

// lcRun runs the scenarios in one env, at most lcConcurrent pods at a time
// (the e2e checks compare times to the second and below; an overloaded host
// would only test its scheduler), waits for each one's state and checks it as
// soon as it is reached (later restarts would add lines).
func lcRun(t *testing.T, scenarios []lcScenario) {
	e := newEnv(t)
	const lcConcurrent = 6
	next, running := 0, 0
	if only := os.Getenv("PODRUN_TEST_LC_ONLY"); only != "" { // to run one scenario by hand
		var keep []lcScenario
		for _, s := range scenarios {
			if s.pod.Name == only {
				keep = append(keep, s)
			}
		}
		scenarios = keep
	}
	started := make([]time.Time, len(scenarios))
	done := make([]bool, len(scenarios))
	for left := len(scenarios); left > 0; {
		for running < lcConcurrent && next < len(scenarios) {
			e.lcApply(scenarios[next].pod, scenarios[next].fast)
			started[next] = time.Now()
			next++
			running++
		}
		for i, s := range scenarios[:next] {
			if done[i] {
				continue
			}
			name := s.pod.Name
			p := e.pod(name)
			finished := false
			if s.until(p) {
				o := e.lcOutput(name)
				p = e.pod(name)
				if !t.Run(name, func(t *testing.T) { s.check(t, p, o) }) {
					for _, ev := range e.events(p) {
						t.Logf("%s event: %v %v %v %v", name, ev["time"], ev["reason"], ev["object"], ev["message"])
					}
				}
				finished = true
			} else if time.Since(started[i]) > s.timeout*timeoutScale {
				data, _ := json.MarshalIndent(p.Status, "", "  ")
				t.Errorf("pod %s: not %s after %s; status:\n%s\nlog:\n%s\nsupervisor log:\n%s", name, s.what, s.timeout, data, e.lcOutput(name), e.supervisorLog(p))
				finished = true
			}
			if finished {
				done[i] = true
				left--
				running--
				e.must("delete", name, "--force")
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lcNotRunningWithin(d time.Duration) (time.Duration, string, func(*corev1.Pod) bool) {
	return d, "no longer running", lcNotRunning
}

func lcPhase(t *testing.T, p *corev1.Pod, want corev1.PodPhase) {
	t.Helper()
	if p.Status.Phase != want {
		t.Errorf("phase %s, want %s", p.Status.Phase, want)
	}
}

const invalidImage = "invalid.registry.k8s.io/invalid/alpine:3.1"

func lcInitWaiting(i int, reason string) (time.Duration, string, func(*corev1.Pod) bool) {
	return time.Minute, "init container waiting " + reason, func(p *corev1.Pod) bool {
		s := p.Status.InitContainerStatuses
		return len(s) > i && s[i].State.Waiting != nil && s[i].State.Waiting.Reason == reason
	}
}

func lcInitRestarted(i int, n int32) (time.Duration, string, func(*corev1.Pod) bool) {
	return 2 * time.Minute, fmt.Sprintf("init container %d restarted %d times", i, n), func(p *corev1.Pod) bool { return lcRestarts(p, true, i) >= n }
}

func lcRestarted(i int, n int32) (time.Duration, string, func(*corev1.Pod) bool) {
	return 2 * time.Minute, fmt.Sprintf("container %d restarted %d times", i, n), func(p *corev1.Pod) bool { return lcRestarts(p, false, i) >= n }
}

func lcScen(p *corev1.Pod, fast bool, w func() (time.Duration, string, func(*corev1.Pod) bool), check func(t *testing.T, p *corev1.Pod, o lcOutput)) lcScenario {
	d, what, until := w()
	return lcScenario{pod: p, fast: fast, timeout: d, what: what, until: until, check: check}
}

// TestE2ELifecycle runs the scenarios of container_lifecycle_test.go and
// init_container.go together, the longest first.
func TestE2ELifecycle(t *testing.T) {
	sc := append(lcInitAndHookScenarios(), lcSidecarScenarios()...)
	sort.SliceStable(sc, func(i, j int) bool { return sc[i].timeout > sc[j].timeout })
	lcRun(t, sc)
}

// The "Containers Lifecycle" (NodeConformance) block: plain init containers,
// postStart ordering, restarts, and probe-triggered preStop hooks.
func lcInitAndHookScenarios() []lcScenario {
	never, always := corev1.RestartPolicyNever, corev1.RestartPolicyAlways
	notRunning := func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(time.Minute) }
	var sc []lcScenario

	// should launch init container serially before a regular container
	reg := lcC("regular-1", lcExec{StartDelay: 5, Delay: 1})
	reg.StartupProbe = &corev1.Probe{ProbeHandler: lcExecProbe("test", "-f", "started")}
	sc = append(sc, lcScen(lcPod("init-serial", never, []corev1.Container{
		lcC("init-1", lcExec{Delay: 1}), lcC("init-2", lcExec{Delay: 1}), lcC("init-3", lcExec{Delay: 1}),
	}, reg), false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		lcCheck(t, o, o.StartsBefore("init-1", "init-2"), o.ExitsBefore("init-1", "init-2"),
			o.StartsBefore("init-2", "init-3"), o.ExitsBefore("init-2", "init-3"),
			o.StartsBefore("init-3", "regular-1"), o.ExitsBefore("init-3", "regular-1"))
		lcPhase(t, p, corev1.PodSucceeded)
	}))

	// should not launch regular containers if an init container fails
	sc = append(sc, lcScen(lcPod("init-fails", never, []corev1.Container{lcC("init-1", lcExec{Delay: 1, ExitCode: 1})},
		lcC("regular-1", lcExec{Delay: 1})), false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		lcCheck(t, o, o.Starts("init-1"), o.Exits("init-1"), o.DoesntStart("regular-1"))
		lcPhase(t, p, corev1.PodFailed)
		if term := containerState(p, "init-1").State.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" {
			t.Errorf("init-1 state %+v, want terminated 1/Error", containerState(p, "init-1").State)
		}
		if w := containerState(p, "regular-1").State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("regular-1 state %+v, want waiting PodInitializing", containerState(p, "regular-1").State)
		}
	}))

	// should run Init container to completion before call to PostStart of regular container
	reg = lcC("regular-1", lcExec{Delay: 10})
	reg.Lifecycle = &corev1.Lifecycle{PostStart: lcHook("PostStart-regular-1", "regular-1", lcExec{Delay: 1})}
	sc = append(sc, lcScen(lcPod("init-before-poststart", never, []corev1.Container{lcC("init-1", lcExec{Delay: 1})}, reg),
		false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.StartsBefore("init-1", "PostStart-regular-1"), o.ExitsBefore("init-1", "PostStart-regular-1"))
		}))

	// should restart failing container when pod restartPolicy is Always
	sc = append(sc, lcScen(lcPod("restart-always", always, nil, lcC("regular-1", lcExec{Delay: 1, ExitCode: 1})),
		true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcRestarted(0, 3) }, func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.Starts("regular-1"), o.StartsBefore("regular-1", "regular-1"), o.ExitsBefore("regular-1", "regular-1"))
		}))

	// should not launch second container before PostStart of the first container completed
	reg = lcC("regular-1", lcExec{Delay: 10})
	reg.Lifecycle = &corev1.Lifecycle{PostStart: lcHook("PostStart-regular-1", "regular-1", lcExec{Delay: 1})}
	sc = append(sc, lcScen(lcPod("poststart-blocks-second", never, nil, reg, lcC("regular-2", lcExec{Delay: 1})),
		false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.StartsBefore("PostStart-regular-1", "regular-2"), o.ExitsBefore("PostStart-regular-1", "regular-2"))
		}))

	// an init container fails to start because of a bad image (restartPolicy Never)
	bad := lcC("init1-1", lcExec{Delay: 600})
	bad.Image = invalidImage
	sc = append(sc, lcScen(lcPod("bad-image", never, []corev1.Container{bad}, lcC("regular-1", lcExec{Delay: 1})),
		false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitWaiting(0, "ImagePullBackOff") }, func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.DoesntStart("init1-1"), o.DoesntStart("regular-1"))
			lcPhase(t, p, corev1.PodPending)
		}))

	// shouldn't restart init containers upon regular container restart
	sc = append(sc, lcScen(lcPod("init-not-restarted", always, []corev1.Container{
		lcC("init-1", lcExec{Delay: 1}), lcC("init-2", lcExec{Delay: 1}), lcC("init-3", lcExec{Delay: 1}),
	}, lcC("regular-1", lcExec{Delay: 10, ExitCode: -1})), true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcRestarted(0, 3) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.StartsBefore("init-1", "init-2"), o.ExitsBefore("init-1", "init-2"),
				o.StartsBefore("init-2", "init-3"), o.ExitsBefore("init-2", "init-3"),
				o.StartsBefore("init-3", "regular-1"), o.ExitsBefore("init-3", "regular-1"),
				o.HasNotRestarted("init-1"), o.HasNotRestarted("init-2"), o.HasNotRestarted("init-3"), o.HasRestarted("regular-1"))
		}))

	// should call the container's preStop hook and terminate it if its startup / liveness probe fails
	for _, kind := range []string{"startup", "liveness"} {
		reg := lcC("regular-1", lcExec{Delay: 100, TerminationSeconds: 15})
		probe := &corev1.Probe{ProbeHandler: lcExecProbe("sh", "-c", "exit 1"), InitialDelaySeconds: 10, FailureThreshold: 1}
		if kind == "startup" {
			reg.StartupProbe = probe
		} else {
			reg.LivenessProbe = probe
		}
		reg.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-regular-1", "regular-1", lcExec{Delay: 1})}
		sc = append(sc, lcScen(lcPod("prestop-on-"+kind+"-failure", never, nil, reg), false,
			func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(2 * time.Minute) },
			func(t *testing.T, p *corev1.Pod, o lcOutput) {
				lcCheck(t, o, o.RunTogether("regular-1", "PreStop-regular-1"), o.Starts("PreStop-regular-1"), o.Exits("regular-1"))
			}))
	}

	// a pod is terminating because its liveness probe fails: readiness probes
	// run while in preStop, liveness probes do not
	reg = lcC("regular-1", lcExec{Delay: 100, TerminationSeconds: 15})
	reg.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: lcCommand("Liveness-regular-1", lcExec{ExitCode: 1, ContainerName: "regular-1"})}},
		InitialDelaySeconds: 10, PeriodSeconds: 1, FailureThreshold: 1}
	reg.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-regular-1", "regular-1", lcExec{Delay: 1})}
	reg.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: lcCommand("Readiness-regular-1", lcExec{ContainerName: "regular-1"})}},
		InitialDelaySeconds: 1, PeriodSeconds: 1}
	p := lcPod("readiness-in-prestop", never, nil, reg)
	p.Spec.TerminationGracePeriodSeconds = lcSeconds(100)
	sc = append(sc, lcScen(p, false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(2 * time.Minute) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.RunTogether("PreStop-regular-1", "Readiness-regular-1"))
			if o.RunTogether("PreStop-regular-1", "Liveness-regular-1") == nil {
				lcCheck(t, o, fmt.Errorf("a liveness probe ran during the preStop hook"))
			}
		}))

	// ... and a sidecar's liveness probe and restarts wait while the app
	// container's preStop hook runs (the kubelet's pod worker is in killContainer)
	reg = lcC("regular-1", lcExec{Delay: 100, TerminationSeconds: 15})
	reg.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: lcCommand("Liveness-regular-1", lcExec{ExitCode: 1, ContainerName: "regular-1"})}},
		InitialDelaySeconds: 10, PeriodSeconds: 1, FailureThreshold: 1}
	reg.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-regular-1", "regular-1", lcExec{Delay: 40})}
	side := lcSidecar(lcC("restartable-init-1", lcExec{Delay: 100, TerminationSeconds: 1}))
	side.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: lcCommand("Liveness-restartable-init-1", lcExec{ExitCode: 1, ContainerName: "restartable-init-1"})}},
		InitialDelaySeconds: 1, PeriodSeconds: 1, FailureThreshold: 1}
	p = lcPod("sidecar-liveness-in-prestop", never, []corev1.Container{side}, reg)
	p.Spec.TerminationGracePeriodSeconds = lcSeconds(100)
	sc = append(sc, lcScen(p, false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(3 * time.Minute) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			if o.runTogetherLhsFirst("PreStop-regular-1", "Liveness-restartable-init-1") == nil {
				lcCheck(t, o, fmt.Errorf("the sidecar's liveness probe ran during the app container's preStop hook"))
			}
			if o.runTogetherLhsFirst("PreStop-regular-1", "restartable-init-1") == nil {
				lcCheck(t, o, fmt.Errorf("the sidecar restarted during the app container's preStop hook"))
			}
		}))
	// test/e2e/common/node/init_container.go (InitContainer, NodeConformance)
	plain := func(name string, cmd ...string) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox:1.28", Command: cmd}
	}
	initialized := func(t *testing.T, p *corev1.Pod, status corev1.ConditionStatus, reason, message string) {
		t.Helper()
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodInitialized {
				if c.Status != status || c.Reason != reason || c.Message != message {
					t.Errorf("Initialized condition %+v, want %s/%q/%q", c, status, reason, message)
				}
				return
			}
		}
		t.Errorf("no Initialized condition in %+v", p.Status.Conditions)
	}
	initsDone := func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionTrue {
				t.Errorf("Initialized condition %+v, want True", c)
			}
		}
		if len(p.Status.InitContainerStatuses) != 2 {
			t.Errorf("%d init container statuses", len(p.Status.InitContainerStatuses))
		}
		for _, s := range p.Status.InitContainerStatuses {
			if !s.Ready || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
				t.Errorf("init container %s: ready %v state %+v, want ready and terminated with 0", s.Name, s.Ready, s.State)
			}
		}
	}
	// should invoke init containers on a RestartNever pod
	sc = append(sc, lcScen(&corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "pod-init-never"}, Spec: corev1.PodSpec{
		RestartPolicy:  never,
		InitContainers: []corev1.Container{plain("init1", "/bin/true"), plain("init2", "/bin/true")},
		Containers:     []corev1.Container{plain("run1", "/bin/true")},
	}}, false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		lcPhase(t, p, corev1.PodSucceeded)
		initsDone(t, p)
	}))
	// should invoke init containers on a RestartAlways pod
	sc = append(sc, lcScen(&corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "pod-init-always"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{plain("init1", "/bin/true"), plain("init2", "/bin/true")},
		Containers:     []corev1.Container{plain("run1", "sleep", "3600")},
	}}, false, func() (time.Duration, string, func(*corev1.Pod) bool) {
		return time.Minute, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }
	}, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		initsDone(t, p)
	}))
	// should not start app containers if init containers fail on a RestartAlways pod
	sc = append(sc, lcScen(&corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "pod-init-fail-always"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{plain("init1", "/bin/false"), plain("init2", "/bin/true")},
		Containers:     []corev1.Container{plain("run1", "sleep", "3600")},
	}}, true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitRestarted(0, 3) }, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		lcPhase(t, p, corev1.PodPending)
		initialized(t, p, corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: [init1 init2]")
		for _, n := range []string{"init2", "run1"} {
			if w := containerState(p, n).State.Waiting; w == nil || w.Reason != "PodInitializing" {
				t.Errorf("%s state %+v, want waiting PodInitializing", n, containerState(p, n).State)
			}
		}
		if last := containerState(p, "init1").LastTerminationState.Terminated; last == nil || last.ExitCode == 0 {
			t.Errorf("init1 last state %+v, want a failure", containerState(p, "init1").LastTerminationState)
		}
	}))
	// should not start app containers and fail the pod if init containers fail on a RestartNever pod
	sc = append(sc, lcScen(&corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "pod-init-fail-never"}, Spec: corev1.PodSpec{
		RestartPolicy:  never,
		InitContainers: []corev1.Container{plain("init1", "/bin/true"), plain("init2", "/bin/false")},
		Containers:     []corev1.Container{plain("run1", "/bin/true")},
	}}, false, notRunning, func(t *testing.T, p *corev1.Pod, o lcOutput) {
		lcPhase(t, p, corev1.PodFailed)
		initialized(t, p, corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: [init2]")
		if term := containerState(p, "init2").State.Terminated; term == nil || term.ExitCode == 0 {
			t.Errorf("init2 state %+v, want failed", containerState(p, "init2").State)
		}
		if containerState(p, "run1").State.Waiting == nil {
			t.Errorf("run1 state %+v, want waiting", containerState(p, "run1").State)
		}
	}))
	return sc
}

// The SidecarContainers block: restartable init containers under each
// restartPolicy, startup and liveness probes, termination order.
func lcSidecarScenarios() []lcScenario {
	never, onFailure, always := corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways
	var sc []lcScenario
	name := func(policy corev1.RestartPolicy, s string) string { return strings.ToLower(string(policy)) + "-" + s }

	// three init containers and two restartable init containers (Never)
	sc = append(sc, lcScen(lcPod("sidecars-start-serially", never, []corev1.Container{
		lcC("init-1", lcExec{Delay: 1}),
		lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600})),
		lcC("init-2", lcExec{Delay: 1}),
		lcSidecar(lcC("restartable-init-2", lcExec{Delay: 600})),
		lcC("init-3", lcExec{Delay: 1}),
	}, lcC("regular-1", lcExec{Delay: 1})), false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(time.Minute) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcPhase(t, p, corev1.PodSucceeded)
			lcCheck(t, o, o.StartsBefore("init-1", "restartable-init-1"), o.ExitsBefore("init-1", "restartable-init-1"),
				o.StartsBefore("restartable-init-1", "init-2"), o.RunTogether("restartable-init-1", "init-2"),
				o.StartsBefore("init-2", "restartable-init-2"), o.ExitsBefore("init-2", "restartable-init-2"),
				o.StartsBefore("restartable-init-2", "init-3"),
				o.RunTogether("restartable-init-1", "restartable-init-2"), o.RunTogether("restartable-init-1", "init-3"), o.RunTogether("restartable-init-2", "init-3"),
				o.StartsBefore("init-3", "regular-1"), o.ExitsBefore("init-3", "regular-1"),
				o.RunTogether("restartable-init-1", "regular-1"), o.RunTogether("restartable-init-2", "regular-1"))
		}))

	for _, policy := range []corev1.RestartPolicy{never, onFailure, always} {
		policy := policy
		// a restartable init container runs continuously
		until := func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(time.Minute) }
		if policy == always {
			until = func() (time.Duration, string, func(*corev1.Pod) bool) { return lcRestarted(0, 2) }
		}
		sc = append(sc, lcScen(lcPod(name(policy, "sidecar-continuous"), policy, []corev1.Container{lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600}))},
			lcC("regular-1", lcExec{Delay: 1})), policy == always, until, func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.DoesntStartAfter("restartable-init-1", "regular-1"))
			if policy == always {
				lcCheck(t, o, o.HasRestarted("regular-1"))
			} else {
				lcPhase(t, p, corev1.PodSucceeded)
				lcCheck(t, o, o.Exits("regular-1"))
			}
		}))

		// a restartable init container fails to start because of a bad image
		bad := lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600}))
		bad.Image = invalidImage
		sc = append(sc, lcScen(lcPod(name(policy, "sidecar-bad-image"), policy, []corev1.Container{bad}, lcC("regular-1", lcExec{Delay: 1})),
			false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitWaiting(0, "ImagePullBackOff") },
			func(t *testing.T, p *corev1.Pod, o lcOutput) {
				lcCheck(t, o, o.DoesntStart("restartable-init-1"), o.DoesntStart("regular-1"))
				lcPhase(t, p, corev1.PodPending)
			}))

		// a restartable init container starts and exits with exit code 0 / 1 continuously
		for _, code := range []int{0, 1} {
			until := func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(2 * time.Minute) }
			if policy == always {
				until = func() (time.Duration, string, func(*corev1.Pod) bool) { return lcRestarted(0, 1) }
			}
			sc = append(sc, lcScen(lcPod(name(policy, fmt.Sprintf("sidecar-exit-%d", code)), policy, []corev1.Container{
				lcSidecar(lcC("restartable-init-1", lcExec{Delay: 5, ExitCode: code})),
				lcC("init-1", lcExec{Delay: 5}),
			}, lcC("regular-1", lcExec{Delay: 20})), true, until, func(t *testing.T, p *corev1.Pod, o lcOutput) {
				if policy != always {
					lcPhase(t, p, corev1.PodSucceeded)
					lcCheck(t, o, o.Exits("regular-1"))
				} else {
					lcCheck(t, o, o.Starts("regular-1"))
				}
				lcCheck(t, o, o.StartsBefore("restartable-init-1", "regular-1"), o.StartsBefore("regular-1", "restartable-init-1"))
			}))
		}

		// an Init container before restartable init container fails
		pod := lcPod(name(policy, "init-fails-before-sidecar"), policy, []corev1.Container{
			lcC("init-1", lcExec{Delay: 1, ExitCode: 1}),
			lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600})),
		}, lcC("regular-1", lcExec{Delay: 600}))
		if policy == never {
			sc = append(sc, lcScen(pod, false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(time.Minute) },
				func(t *testing.T, p *corev1.Pod, o lcOutput) {
					lcPhase(t, p, corev1.PodFailed)
					lcCheck(t, o, o.Exits("init-1"), o.DoesntStart("restartable-init-1"))
				}))
		} else {
			sc = append(sc, lcScen(pod, true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitRestarted(0, 3) },
				func(t *testing.T, p *corev1.Pod, o lcOutput) {
					lcPhase(t, p, corev1.PodPending)
					lcCheck(t, o, o.HasRestarted("init-1"), o.DoesntStart("restartable-init-1"))
				}))
		}

		// an Init container after restartable init container fails
		pod = lcPod(name(policy, "init-fails-after-sidecar"), policy, []corev1.Container{
			lcSidecar(lcC("restartable-init-1", lcExec{Delay: 5, ExitCode: 1})),
			lcC("init-1", lcExec{Delay: 1, ExitCode: 1}),
		}, lcC("regular-1", lcExec{Delay: 600}))
		if policy == never {
			sc = append(sc, lcScen(pod, false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(time.Minute) },
				func(t *testing.T, p *corev1.Pod, o lcOutput) {
					lcPhase(t, p, corev1.PodFailed)
					lcCheck(t, o, o.Exits("init-1"), o.RunTogether("restartable-init-1", "init-1"))
				}))
		} else {
			sc = append(sc, lcScen(pod, true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitRestarted(1, 3) },
				func(t *testing.T, p *corev1.Pod, o lcOutput) {
					lcPhase(t, p, corev1.PodPending)
					lcCheck(t, o, o.HasRestarted("init-1"), o.RunTogether("restartable-init-1", "init-1"))
				}))
		}
	}

	// should launch restartable init containers serially considering the startup probe
	s1 := lcSidecar(lcC("restartable-init-1", lcExec{StartDelay: 10, Delay: 600}))
	s1.StartupProbe = &corev1.Probe{ProbeHandler: lcExecProbe("test", "-f", "started")}
	s2 := lcSidecar(lcC("restartable-init-2", lcExec{StartDelay: 10, Delay: 600}))
	s2.StartupProbe = &corev1.Probe{ProbeHandler: lcExecProbe("test", "-f", "started")}
	sc = append(sc, lcScen(lcPod("sidecars-startup-probe-serial", never, []corev1.Container{s1, s2}, lcC("regular-1", lcExec{Delay: 1})),
		false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(2 * time.Minute) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.StartsBefore("restartable-init-1", "restartable-init-2"), o.StartsBefore("restartable-init-2", "regular-1"))
		}))

	// the restartable init container's startup probe fails: preStop hook, no next container
	s1 = lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600, TerminationSeconds: 15}))
	s1.StartupProbe = &corev1.Probe{InitialDelaySeconds: 5, FailureThreshold: 1, ProbeHandler: lcExecProbe("sh", "-c", "exit 1")}
	s1.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-restartable-init-1", "restartable-init-1", lcExec{Delay: 1})}
	sc = append(sc, lcScen(lcPod("sidecar-startup-fails", always, []corev1.Container{s1}, lcC("regular-1", lcExec{Delay: 1})),
		true, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcInitRestarted(0, 2) },
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcPhase(t, p, corev1.PodPending)
			lcCheck(t, o, o.RunTogether("restartable-init-1", "PreStop-restartable-init-1"), o.Starts("PreStop-restartable-init-1"),
				o.Exits("restartable-init-1"), o.DoesntStart("regular-1"))
		}))

	// the restartable init container's liveness probe fails: preStop hook, next container starts
	s1 = lcSidecar(lcC("restartable-init-1", lcExec{Delay: 600, TerminationSeconds: 15}))
	s1.LivenessProbe = &corev1.Probe{InitialDelaySeconds: 5, FailureThreshold: 1, ProbeHandler: lcExecProbe("sh", "-c", "exit 1")}
	s1.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-restartable-init-1", "restartable-init-1", lcExec{Delay: 1})}
	sc = append(sc, lcScen(lcPod("sidecar-liveness-fails", always, []corev1.Container{s1}, lcC("regular-1", lcExec{Delay: 1})),
		true, func() (time.Duration, string, func(*corev1.Pod) bool) {
			return 2 * time.Minute, "sidecar restarted twice and regular once", func(p *corev1.Pod) bool {
				return lcRestarts(p, true, 0) >= 2 && lcRestarts(p, false, 0) >= 1
			}
		},
		func(t *testing.T, p *corev1.Pod, o lcOutput) {
			lcCheck(t, o, o.RunTogether("restartable-init-1", "PreStop-restartable-init-1"), o.Starts("PreStop-restartable-init-1"),
				o.Exits("restartable-init-1"), o.Starts("regular-1"))
		}))

	// should terminate sidecars in reverse order after all main containers have exited;
	// with preStop hooks that never exit; with preStop hooks called simultaneously
	for _, hook := range []string{"", "forever", "simultaneous"} {
		var inits []corev1.Container
		for i := 1; i <= 3; i++ {
			n := fmt.Sprintf("restartable-init-%d", i)
			c := lcSidecar(lcC(n, lcExec{Delay: 60, TerminationSeconds: 5}))
			switch hook {
			case "forever":
				c.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-"+n, n, lcExec{LoopForever: true})}
			case "simultaneous":
				c.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-"+n, n, lcExec{Delay: 1})}
			}
			inits = append(inits, c)
		}
		hook := hook
		sc = append(sc, lcScen(lcPod("serialize-termination"+map[string]string{"": "", "forever": "-prestop-forever", "simultaneous": "-simul-prestop"}[hook], never, inits,
			lcC("regular-1", lcExec{Delay: 5})), false, func() (time.Duration, string, func(*corev1.Pod) bool) { return lcNotRunningWithin(2 * time.Minute) },
			func(t *testing.T, p *corev1.Pod, o lcOutput) {
				lcCheck(t, o, o.StartsBefore("restartable-init-1", "restartable-init-2"), o.StartsBefore("restartable-init-1", "restartable-init-3"),
					o.StartsBefore("restartable-init-2", "restartable-init-3"), o.StartsBefore("restartable-init-1", "regular-1"),
					o.StartsBefore("restartable-init-2", "regular-1"), o.StartsBefore("restartable-init-3", "regular-1"))
				if hook != "forever" {
					lcCheck(t, o, o.ExitsBefore("regular-1", "restartable-init-1"), o.ExitsBefore("regular-1", "restartable-init-2"),
						o.ExitsBefore("regular-1", "restartable-init-3"),
						o.ExitsBefore("restartable-init-3", "restartable-init-2"), o.ExitsBefore("restartable-init-2", "restartable-init-1"))
				}
				// The e2e test wants the hooks to start within 500 ms of each
				// other and to loop for 32 s ± 1 s (30 s grace, then SIGTERM and
				// the 2 s minimum before SIGKILL). The hooks' own clocks carry the
				// host's load (on this shared CI host, a second and more between
				// a sidecar's stop and its hook's first line), so the lifetime is
				// checked against each container's end as podrun records it: the
				// container ran ~32 s from its pod's termination, and its hook
				// looped until then.
				if hook == "" {
					return
				}
				end, err := o.timeOf("regular-1", "Exiting", false)
				lcCheck(t, o, err)
				var first []float64
				for i := 1; i <= 3; i++ {
					c := fmt.Sprintf("restartable-init-%d", i)
					n := "PreStop-" + c
					s, err := o.timeOf(n, "Starting", false)
					lcCheck(t, o, err)
					first = append(first, s)
					if hook != "forever" {
						continue
					}
					last, err := o.timeOf(n, "Looping", true)
					lcCheck(t, o, err)
					term := containerState(p, c).State.Terminated
					if term == nil || term.ExitCode != 137 {
						t.Errorf("%s ended %+v, want SIGKILLed (137)", c, term)
						continue
					}
					killed := float64(term.FinishedAt.UnixMilli())
					if d := killed - end; d < 31000 || d > 35000 {
						t.Errorf("%s was killed %.0f ms after regular-1 exited, want ~32000 (30 s grace + 2 s)", c, d)
					}
					if d := killed - last; d > 1500 {
						lcCheck(t, o, fmt.Errorf("%s's hook last looped %.0f ms before its container was killed: cut short", c, d))
					}
				}
				for i := 1; i < len(first); i++ {
					if d := first[i] - first[0]; d > 1000 || d < -1000 {
						lcCheck(t, o, fmt.Errorf("preStop hooks started at %v, not together (±1 s)", first))
					}
				}
			}))
	}
	return sc
}

// Deletion: "should not hang in termination if terminated during
// initialization" (container_lifecycle_test.go), "should not hang when
// terminating pods mounting non-existent volumes" (terminate_pods_test.go)
// and "should respect termination grace period seconds [with long-running
// preStop hook]" (container_lifecycle_test.go).
func TestE2ELifecycleTermination(t *testing.T) {
	e := newEnv(t)
	always := corev1.RestartPolicyAlways
	never := corev1.RestartPolicyNever
	var inits []corev1.Container
	inits = append(inits, lcC("start-init", lcExec{Delay: 300}))
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("restartable-init-%d", i)
		c := lcSidecar(lcC(n, lcExec{Delay: 60, TerminationSeconds: 5}))
		c.Lifecycle = &corev1.Lifecycle{PreStop: lcHook("PreStop-"+n, n, lcExec{Delay: 1})}
		inits = append(inits, c)
	}
	e.lcApply(lcPod("dont-hang-if-terminated-in-init", never, inits, lcC("regular-1", lcExec{Delay: 5})), false)

	secret := corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "pod1"}, Spec: corev1.PodSpec{
		RestartPolicy: always,
		Containers: []corev1.Container{{Name: "container1", Image: "busybox:1.28",
			VolumeMounts: []corev1.VolumeMount{{Name: "vol1", MountPath: "/mnt/vol1"}}}},
		Volumes: []corev1.Volume{{Name: "vol1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "non-existent-d1e2"}}}},
	}}
	e.lcApply(&secret, false)

	e.lcApply(lcPod("initialized-pod", always, []corev1.Container{
		lcC("init-1", lcExec{Delay: 5}),
		lcSidecar(lcC("restartable-init-2", lcExec{Delay: 300})),
		lcC("init-3", lcExec{Delay: 5}),
	}, lcC("regular-1", lcExec{Delay: 300})), false)

	grace := func(name string, hook bool) *corev1.Pod {
		p := &corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: lcSeconds(30),
			Containers:                    []corev1.Container{{Name: "busybox", Image: "busybox:1.28", Command: []string{"sleep", "10000"}}},
		}}
		if hook {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "10000"}}}}
		}
		return p
	}
	e.lcApply(grace("pod-termination-grace-period", false), false)
	e.lcApply(grace("pod-termination-grace-period-prestop", true), false)

	// lifecycle_hook.go's PodLifecycleSleepAction tests: the pause image is
	// a shell that exits on SIGTERM here.
	sleeper := func(name string, seconds int64) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: "busybox:1.28",
				Command:   []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: seconds}}}}},
		}}
	}
	e.lcApply(sleeper("prestop-sleep-5", 5), false)
	e.lcApply(sleeper("prestop-sleep-15-grace-2", 15), false)
	ended := sleeper("prestop-sleep-20-terminated", 20)
	ended.Spec.RestartPolicy = never
	ended.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "exit 0"}
	e.lcApply(ended, false)

	// The two grace-period pods are deleted in the background: each takes its 30 s.
	type deleted struct {
		name string
		took time.Duration
		r    result
	}
	bounds := map[string][2]time.Duration{
		"pod-termination-grace-period":         {0, 60 * time.Second},
		"pod-termination-grace-period-prestop": {0, 60 * time.Second},
		"prestop-sleep-5":                      {5 * time.Second, 30 * time.Second},
		"prestop-sleep-15-grace-2":             {2 * time.Second, 15 * time.Second},
		"prestop-sleep-20-terminated":          {0, 15 * time.Second},
	}
	results := make(chan deleted, len(bounds))
	for name := range bounds {
		args := []string{"delete", name}
		if name == "prestop-sleep-15-grace-2" {
			args = append(args, "--grace-period", "2")
		}
		if name == "prestop-sleep-20-terminated" {
			e.waitFor(name, time.Minute, "terminated", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
			})
		} else {
			e.waitPhase(name, corev1.PodRunning, time.Minute)
		}
		go func() {
			start := time.Now()
			r := e.podrun(args...)
			results <- deleted{name, time.Since(start), r}
		}()
	}

	// "should restart the containers in right order after the node reboot"
	// (the SidecarContainers variant): podrun restart stands for the
	// sandbox the kubelet finds stopped.
	e.waitPhase("initialized-pod", corev1.PodRunning, time.Minute)
	e.must("restart", "initialized-pod")
	e.waitFor("initialized-pod", time.Minute, "re-initialized and running", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
	time.Sleep(time.Second) // regular-1 replays its file
	o := e.lcOutput("initialized-pod")
	var idx []int
	for round := 0; round < 2; round++ {
		for _, n := range []string{"init-1", "restartable-init-2", "init-3", "regular-1"} {
			from := 0
			if round == 1 {
				from = o.find(n, "Started", 0) + 1
			}
			idx = append(idx, o.find(n, "Started", from))
		}
	}
	for i := range idx {
		if idx[i] == -1 || (i%4 != 0 && idx[i] < idx[i-1]) {
			lcCheck(t, o, fmt.Errorf("after the restart, the containers did not start again in order init-1, restartable-init-2, init-3, regular-1 (indexes %v)", idx))
			break
		}
	}

	e.waitFor("dont-hang-if-terminated-in-init", time.Minute, "running its first init container", func(p *corev1.Pod) bool {
		s := p.Status.InitContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(s) > 0 && s[0].Started != nil && *s[0].Started && s[0].State.Running != nil
	})
	start := time.Now()
	e.must("delete", "dont-hang-if-terminated-in-init", "--grace-period", "3")
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("deleting the pod stopped in its first init container took %s, want < 5s (3 s grace + 2 s)", took)
	}

	e.waitFor("pod1", 20*time.Second, "ContainersReady False", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionFalse {
				return true
			}
		}
		return false
	})
	start = time.Now()
	e.must("delete", "pod1")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("deleting the pod whose secret is missing took %s, want ≤ 10s", took)
	}

	for range bounds {
		d := <-results
		if d.r.code != 0 {
			t.Errorf("delete %s: %s", d.name, d.r)
		}
		if b := bounds[d.name]; d.took < b[0] || d.took > b[1] {
			t.Errorf("delete %s took %s, want between %s and %s", d.name, d.took, b[0], b[1])
		}
		t.Logf("delete %s took %s", d.name, d.took)
	}
}
