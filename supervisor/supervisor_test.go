package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/store"
)

// fakeRunner starts fake containers whose exits the test controls.
type fakeRunner struct {
	clock   *clocktesting.FakeClock
	mu      sync.Mutex
	started []string // container names in start order
	signals []string // "name:signal"
	running map[string]*fakeHandle
	failing map[string]error // Start fails with this
	n       int
	// execCode is what exec probes and hooks in a container exit with.
	execCode map[string]int
	// execs lists "name:command" of every exec; a command "block" runs
	// until its context ends.
	execs []string
	// silent containers write no output.
	silent map[string]bool
	// gate holds execs of the command "gate" until it is closed.
	gate chan struct{}
	// targets lists "name->true" for every ephemeral start given a running target.
	targets []string
}

type fakeHandle struct {
	r       *fakeRunner
	name    string
	id      string
	start   time.Time
	exitc   chan int32
	once    sync.Once
	sigterm bool // exits on SIGTERM
	output  chan struct{}
}

func newFakeRunner(clk *clocktesting.FakeClock) *fakeRunner {
	return &fakeRunner{clock: clk, running: map[string]*fakeHandle{}, failing: map[string]error{}, execCode: map[string]int{}, silent: map[string]bool{}, gate: make(chan struct{})}
}

func (r *fakeRunner) Start(_ context.Context, c *corev1.Container, restartCount int32) (containerHandle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, c.Name)
	if err := r.failing[c.Name]; err != nil {
		return nil, err
	}
	r.n++
	h := &fakeHandle{r: r, name: c.Name, id: fmt.Sprintf("id%d", r.n), start: r.clock.Now(), exitc: make(chan int32, 1), sigterm: true, output: make(chan struct{})}
	if !r.silent[c.Name] {
		close(h.output)
	}
	r.running[c.Name] = h
	return h, nil
}

func (r *fakeRunner) StartEphemeral(ctx context.Context, c *corev1.Container, target containerHandle) (containerHandle, error) {
	r.mu.Lock()
	r.targets = append(r.targets, fmt.Sprintf("%s->%v", c.Name, target != nil))
	r.mu.Unlock()
	return r.Start(ctx, c, 0)
}

func (r *fakeRunner) StopSignal(*corev1.Container) syscall.Signal { return syscall.SIGTERM }

func (h *fakeHandle) ID() string { return h.id }

func (h *fakeHandle) Image() (string, string) { return "docker.io/library/busybox:1.28", "sha256:0" }

func (h *fakeHandle) Exec(ctx context.Context, cmd []string) (int, []byte, error) {
	h.r.mu.Lock()
	h.r.execs = append(h.r.execs, h.name+":"+strings.Join(cmd, " "))
	code := h.r.execCode[h.name]
	h.r.mu.Unlock()
	if len(cmd) > 0 && cmd[0] == "block" {
		<-ctx.Done()
		return 137, nil, ctx.Err()
	}
	if len(cmd) > 0 && cmd[0] == "gate" {
		select {
		case <-h.r.gate:
		case <-ctx.Done():
			return 137, nil, ctx.Err()
		}
	}
	return code, []byte("exec " + strings.Join(cmd, " ")), nil
}

func (h *fakeHandle) Output() <-chan struct{}     { return h.output }
func (h *fakeHandle) User() *corev1.ContainerUser { return nil }

func (r *fakeRunner) execLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.execs...)
}

func (r *fakeRunner) setExit(name string, code int) {
	r.mu.Lock()
	r.execCode[name] = code
	r.mu.Unlock()
}

func (h *fakeHandle) exit(code int32) {
	h.once.Do(func() { h.exitc <- code })
}

func (h *fakeHandle) Wait() exitResult {
	code := <-h.exitc
	h.r.mu.Lock()
	if h.r.running[h.name] == h {
		delete(h.r.running, h.name)
	}
	h.r.mu.Unlock()
	return exitResult{ExitCode: code, Reason: exitReason(code, false), StartedAt: h.start, FinishedAt: h.r.clock.Now()}
}

func (h *fakeHandle) Signal(sig syscall.Signal) error {
	h.r.mu.Lock()
	h.r.signals = append(h.r.signals, fmt.Sprintf("%s:%d", h.name, sig))
	h.r.mu.Unlock()
	if sig == syscall.SIGKILL || (sig == syscall.SIGTERM && h.sigterm) {
		h.exit(128 + int32(sig))
	}
	return nil
}

func (r *fakeRunner) handle(t *testing.T, name string) *fakeHandle {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.running[name]
	if h == nil {
		t.Fatalf("container %s is not running; started so far: %v", name, r.started)
	}
	return h
}

func (r *fakeRunner) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.signals...)
}

func (r *fakeRunner) startOrder() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...)
}

type harness struct {
	t      *testing.T
	m      *machine
	r      *fakeRunner
	clock  *clocktesting.FakeClock
	status corev1.PodStatus
}

func newHarness(t *testing.T, pod *corev1.Pod) *harness {
	return newHarnessWith(t, pod, func(*fakeRunner) {})
}

func newHarnessWith(t *testing.T, pod *corev1.Pod, setup func(*fakeRunner)) *harness {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newFakeRunner(clk)
	setup(r)
	ev := &eventLog{path: filepath.Join(t.TempDir(), "events"), now: clk.Now}
	m := newMachine(context.Background(), pod, r, clk, ev, newBackoff(clk, DefaultBackoffInitial, DefaultBackoffMax))
	h := &harness{t: t, m: m, r: r, clock: clk}
	h.settle()
	return h
}

// settle runs sync and applies messages until nothing changes.
func (h *harness) settle() {
	h.t.Helper()
	for i := 0; i < 100; i++ {
		h.m.sync()
		h.status = h.m.podStatus()
		pending := false
		for _, c := range h.m.all() {
			if c.starting {
				pending = true
			}
		}
		select {
		case <-h.m.notify:
			for _, msg := range h.m.take() {
				h.m.handle(msg)
			}
			continue
		case <-time.After(func() time.Duration {
			if pending {
				return 2 * time.Second
			}
			return 20 * time.Millisecond
		}()):
		}
		if !pending {
			return
		}
	}
	h.t.Fatal("machine did not settle")
}

func (h *harness) exit(name string, code int32) {
	h.t.Helper()
	h.r.handle(h.t, name).exit(code)
	h.settle()
}

func (h *harness) step(d time.Duration) {
	h.clock.Step(d)
	h.settle()
}

func (h *harness) state(name string) corev1.ContainerStatus {
	for _, s := range append(append(append([]corev1.ContainerStatus{}, h.status.InitContainerStatuses...), h.status.ContainerStatuses...), h.status.EphemeralContainerStatuses...) {
		if s.Name == name {
			return s
		}
	}
	h.t.Fatalf("no status for %s", name)
	return corev1.ContainerStatus{}
}

func (h *harness) cond(t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range h.status.Conditions {
		if c.Type == t {
			return c
		}
	}
	h.t.Fatalf("no condition %s", t)
	return corev1.PodCondition{}
}

func testPod(policy corev1.RestartPolicy, inits []string, apps []string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}
	pod.Spec.RestartPolicy = policy
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	return pod
}

func sidecar(pod *corev1.Pod, i int) {
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers[i].RestartPolicy = &always
}

func TestInitContainersRunInOrderThenAppsTogether(t *testing.T) {
	h := newHarness(t, testPod(corev1.RestartPolicyAlways, []string{"init-a", "init-b"}, []string{"app1", "app2"}))
	if got := h.r.startOrder(); !slices.Equal(got, []string{"init-a"}) {
		t.Fatalf("started %v, want only init-a", got)
	}
	if h.status.Phase != corev1.PodPending {
		t.Fatalf("phase %s, want Pending", h.status.Phase)
	}
	if w := h.state("app1").State.Waiting; w == nil || w.Reason != ReasonPodInitializing {
		t.Fatalf("app1 state %+v, want waiting PodInitializing", h.state("app1").State)
	}
	if c := h.cond(corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [init-a init-b]" {
		t.Fatalf("Initialized = %+v", c)
	}
	h.exit("init-a", 0)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"init-a", "init-b"}) {
		t.Fatalf("started %v", got)
	}
	if st := h.state("init-a"); st.State.Terminated == nil || st.State.Terminated.Reason != ReasonCompleted || !st.Ready {
		t.Fatalf("init-a status %+v", st)
	}
	h.exit("init-b", 0)
	got := h.r.startOrder()
	if len(got) != 4 || !slices.Contains(got[2:], "app1") || !slices.Contains(got[2:], "app2") {
		t.Fatalf("started %v, want both apps after the inits", got)
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s, want Running", h.status.Phase)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		if c := h.cond(ct); c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s = %+v", ct, c)
		}
	}
}

func TestInitFailureUnderNeverFailsThePod(t *testing.T) {
	h := newHarness(t, testPod(corev1.RestartPolicyNever, []string{"init-a", "init-b"}, []string{"app"}))
	h.exit("init-a", 3)
	if h.status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed", h.status.Phase)
	}
	if got := h.r.startOrder(); !slices.Equal(got, []string{"init-a"}) {
		t.Fatalf("started %v, want only init-a", got)
	}
	if h.m.state != stateDone {
		t.Fatalf("machine state %d, want done", h.m.state)
	}
	if st := h.state("init-a"); st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 || st.State.Terminated.Reason != ReasonError {
		t.Fatalf("init-a status %+v", st.State)
	}
}

func TestInitFailureRetriesWithKubeletBackoff(t *testing.T) {
	h := newHarness(t, testPod(corev1.RestartPolicyAlways, []string{"init"}, []string{"app"}))
	h.exit("init", 1)
	if st := h.state("init").State.Terminated; st == nil || st.Reason != ReasonError {
		t.Fatalf("state %+v, want terminated Error until the next sync", h.state("init").State)
	}
	// The first restart comes with the next sync, as the kubelet's doBackOff has no entry yet.
	h.step(statusSyncPeriod)
	if got := h.r.startOrder(); len(got) != 2 {
		t.Fatalf("started %v, want an immediate restart", got)
	}
	if rc := h.state("init").RestartCount; rc != 1 {
		t.Fatalf("restartCount %d, want 1", rc)
	}
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		h.exit("init", 1)
		h.step(statusSyncPeriod)
		st := h.state("init")
		if w := st.State.Waiting; w == nil || w.Reason != ReasonCrashLoopBackOff {
			t.Fatalf("after failure %d: state %+v, want CrashLoopBackOff", i+2, st.State)
		}
		if want := fmt.Sprintf("back-off %s restarting failed container=init pod=p_default(u1)", delay); st.State.Waiting.Message != want {
			t.Fatalf("message %q, want %q", st.State.Waiting.Message, want)
		}
		if st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 1 {
			t.Fatalf("lastState %+v", st.LastTerminationState)
		}
		n := len(h.r.startOrder())
		h.step(delay - statusSyncPeriod - time.Second)
		if len(h.r.startOrder()) != n {
			t.Fatalf("restarted before the %s backoff", delay)
		}
		h.step(time.Second)
		if len(h.r.startOrder()) != n+1 {
			t.Fatalf("not restarted after the %s backoff", delay)
		}
	}
	if got := h.r.startOrder(); slices.Contains(got, "app") {
		t.Fatal("app container started although init never succeeded")
	}
	if h.status.Phase != corev1.PodPending {
		t.Fatalf("phase %s, want Pending", h.status.Phase)
	}
}

func TestBackoffCapsAndResets(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := newBackoff(clk, 10*time.Second, 300*time.Second)
	var got []time.Duration
	for i := 0; i < 8; i++ {
		b.next("k", clk.Now())
		got = append(got, b.delay("k"))
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	clk.Step(601 * time.Second)
	if _, wait := b.until("k", clk.Now()); wait {
		t.Fatal("backoff did not reset after 10 minutes of clean running")
	}
	b.next("k", clk.Now())
	if b.delay("k") != 10*time.Second {
		t.Fatalf("delay after reset %s", b.delay("k"))
	}
}

func TestNeverPodSucceedsWhenAppsExitZeroAndSidecarsStopLast(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"side1", "init", "side2"}, []string{"app"})
	sidecar(pod, 0)
	sidecar(pod, 2)
	h := newHarness(t, pod)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side1", "init"}) {
		t.Fatalf("started %v: the sidecar must start, then the next init container", got)
	}
	h.exit("init", 0)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side1", "init", "side2", "app"}) {
		t.Fatalf("started %v", got)
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", h.status.Phase)
	}
	h.exit("app", 0)
	if h.status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded", h.status.Phase)
	}
	if h.m.state != stateDone {
		t.Fatal("sidecars still running after the app containers completed")
	}
	if got := h.r.sent(); !slices.Equal(got, []string{"side2:15", "side1:15"}) {
		t.Fatalf("signals %v, want sidecars stopped in reverse order", got)
	}
}

func TestSidecarRestartsWhateverThePodPolicy(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"side"}, []string{"app"})
	sidecar(pod, 0)
	h := newHarness(t, pod)
	h.exit("side", 1)
	h.step(statusSyncPeriod)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side", "app", "side"}) {
		t.Fatalf("started %v, want the sidecar restarted", got)
	}
	if h.status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", h.status.Phase)
	}
}

func TestRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy    corev1.RestartPolicy
		code      int32
		restarted bool
		phase     corev1.PodPhase
	}{
		{corev1.RestartPolicyAlways, 0, true, corev1.PodRunning},
		{corev1.RestartPolicyAlways, 1, true, corev1.PodRunning},
		{corev1.RestartPolicyOnFailure, 0, false, corev1.PodSucceeded},
		{corev1.RestartPolicyOnFailure, 1, true, corev1.PodRunning},
		{corev1.RestartPolicyNever, 0, false, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, 1, false, corev1.PodFailed},
	} {
		t.Run(fmt.Sprintf("%s-exit%d", tc.policy, tc.code), func(t *testing.T) {
			h := newHarness(t, testPod(tc.policy, nil, []string{"app"}))
			h.exit("app", tc.code)
			h.step(statusSyncPeriod)
			if restarted := len(h.r.startOrder()) == 2; restarted != tc.restarted {
				t.Fatalf("restarted=%v, want %v", restarted, tc.restarted)
			}
			if h.status.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", h.status.Phase, tc.phase)
			}
		})
	}
}

func TestDeleteStopsAppsThenSidecarsAndKillsAfterGrace(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"side"}, []string{"app"})
	sidecar(pod, 0)
	h := newHarness(t, pod)
	h.r.handle(t, "app").sigterm = false // ignores SIGTERM
	h.m.requestDelete(5 * time.Second)
	h.settle()
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15"}) {
		t.Fatalf("signals %v, want only the app asked to stop first", got)
	}
	// At the end of the grace period the app is killed and the sidecar, whose
	// wait for its turn has used the grace period, still gets its stop signal
	// and 2 seconds (killContainer's minimumGracePeriodInSeconds).
	h.step(5 * time.Second)
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15", "side:15", "app:9"}) {
		t.Fatalf("signals %v, want SIGKILL for the app and SIGTERM for the sidecar after the grace period", got)
	}
	if h.m.state != stateDone {
		t.Fatal("machine not done after deletion")
	}
}

func TestActiveDeadlineFailsThePod(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"init"}, []string{"app"})
	d := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &d
	h := newHarness(t, pod)
	h.step(30 * time.Second)
	if h.status.Phase != corev1.PodFailed || h.status.Reason != ReasonDeadlineExceeded {
		t.Fatalf("phase %s reason %q, want Failed DeadlineExceeded", h.status.Phase, h.status.Reason)
	}
	if h.m.state != stateDone {
		t.Fatal("init container still running after the deadline")
	}
}

func TestStartErrorCountsAsARun(t *testing.T) {
	h := newHarnessWith(t, testPod(corev1.RestartPolicyNever, nil, []string{"app"}), func(r *fakeRunner) {
		r.failing["app"] = &startError{Reason: ReasonStartError, Message: `exec: "nope": executable file not found in $PATH`}
	})
	st := h.state("app")
	if st.State.Terminated == nil || st.State.Terminated.ExitCode != 128 || st.State.Terminated.Reason != ReasonStartError {
		t.Fatalf("state %+v", st.State)
	}
	if h.status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed", h.status.Phase)
	}
}

func TestImagePullFailureBacksOff(t *testing.T) {
	h := newHarnessWith(t, testPod(corev1.RestartPolicyNever, nil, []string{"app"}), func(r *fakeRunner) {
		r.failing["app"] = &startError{Reason: ReasonErrImagePull, Waiting: true, Message: "manifest unknown"}
	})
	st := h.state("app")
	if w := st.State.Waiting; w == nil || w.Reason != ReasonErrImagePull || w.Message != "manifest unknown" {
		t.Fatalf("state %+v, want waiting ErrImagePull", st.State)
	}
	h.step(time.Second)
	if w := h.state("app").State.Waiting; w == nil || w.Reason != ReasonImagePullBackOff || w.Message != `Back-off pulling image "busybox"` {
		t.Fatalf("state %+v, want waiting ImagePullBackOff", h.state("app").State)
	}
	if h.status.Phase != corev1.PodPending {
		t.Fatalf("phase %s, want Pending while the image cannot be pulled", h.status.Phase)
	}
	// Pulls are retried after 10s, then 20s.
	h.step(8 * time.Second)
	if n := len(h.r.startOrder()); n != 1 {
		t.Fatalf("%d attempts before the 10s backoff ended", n)
	}
	h.step(time.Second)
	if n := len(h.r.startOrder()); n != 2 {
		t.Fatalf("%d attempts after the 10s backoff, want 2", n)
	}
	h.step(19 * time.Second)
	if n := len(h.r.startOrder()); n != 2 {
		t.Fatalf("%d attempts before the 20s backoff ended", n)
	}
	// Once the image is there, the container starts.
	h.r.mu.Lock()
	delete(h.r.failing, "app")
	h.r.mu.Unlock()
	h.step(time.Second)
	if st := h.state("app"); st.State.Running == nil || st.RestartCount != 0 {
		t.Fatalf("state %+v restarts %d, want running for the first time", st.State, st.RestartCount)
	}
}

// A container whose image volume cannot be pulled backs off on the volume's
// image, whose BackOff event is the pod's (getImageVolumes records against
// the pod), and its own Failed event is the container's.
func TestImageVolumePullFailureBacksOff(t *testing.T) {
	const volImage = "registry.test/vol:1"
	h := newHarnessWith(t, testPod(corev1.RestartPolicyNever, nil, []string{"app"}), func(r *fakeRunner) {
		r.failing["app"] = &startError{Reason: ReasonErrImagePull, Waiting: true, Message: "manifest unknown", Image: volImage}
	})
	if w := h.state("app").State.Waiting; w == nil || w.Reason != ReasonErrImagePull {
		t.Fatalf("state %+v, want waiting ErrImagePull", h.state("app").State)
	}
	h.step(time.Second)
	if w := h.state("app").State.Waiting; w == nil || w.Reason != ReasonImagePullBackOff || w.Message != `Back-off pulling image "`+volImage+`"` {
		t.Fatalf("state %+v, want waiting ImagePullBackOff on the volume's image", h.state("app").State)
	}
	data, err := os.ReadFile(h.m.events.path)
	if err != nil {
		t.Fatal(err)
	}
	var backOff, failed bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev store.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch {
		case ev.Reason == "BackOff" && ev.Message == `Back-off pulling image "`+volImage+`"`:
			backOff = ev.Object == ""
		case ev.Reason == "Failed" && ev.Message == "Error: ImagePullBackOff":
			failed = ev.Object == "spec.containers{app}"
		}
	}
	if !backOff || !failed {
		t.Errorf("events:\n%s\nwant the pod's BackOff for %s and the container's Failed", data, volImage)
	}
	// The backoff is the volume image's: 10s, then the start is tried again.
	h.step(8 * time.Second)
	if n := len(h.r.startOrder()); n != 1 {
		t.Fatalf("%d attempts before the 10s backoff ended", n)
	}
	h.step(time.Second)
	if n := len(h.r.startOrder()); n != 2 {
		t.Fatalf("%d attempts after the 10s backoff, want 2", n)
	}
}

// A wake-up whose time passes while the status is being published (a slow
// disk, a loaded host) is acted on at once: the machine does not wait for its
// next message. Here the image backoff ends during the publish of
// ErrImagePull, and nothing else would ever wake the pod.
func TestWakeupDueDuringPublishIsNotLost(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := newFakeRunner(clk)
	r.failing["app"] = &startError{Reason: ReasonErrImagePull, Waiting: true, Message: "manifest unknown"}
	ev := &eventLog{path: filepath.Join(t.TempDir(), "events"), now: clk.Now}
	m := newMachine(context.Background(), testPod(corev1.RestartPolicyNever, nil, []string{"app"}), r, clk, ev, newBackoff(clk, DefaultBackoffInitial, DefaultBackoffMax))
	running := make(chan struct{})
	slow := true
	publish := func(s corev1.PodStatus) {
		st := s.ContainerStatuses[0].State
		if w := st.Waiting; w != nil && w.Reason == ReasonErrImagePull && slow {
			slow = false
			r.mu.Lock()
			delete(r.failing, "app") // the image can be pulled now
			r.mu.Unlock()
			clk.Step(time.Minute) // this publish outlasts the backoff
		}
		if st.Running != nil && running != nil {
			close(running)
			running = nil
		}
	}
	wait := running
	deletes := make(chan time.Duration, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.run(publish, deletes, nil, nil)
	}()
	select {
	case <-wait:
	case <-time.After(5 * time.Second):
		t.Error("the app never started after its image backoff ended during a publish")
	}
	deletes <- 0
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the machine did not stop after a forced delete")
	}
}

func TestPodRestartRerunsInitContainers(t *testing.T) {
	h := newHarness(t, testPod(corev1.RestartPolicyAlways, []string{"init-a", "init-b"}, []string{"app"}))
	h.exit("init-a", 0)
	h.exit("init-b", 0)
	h.m.requestRestart()
	h.settle()
	h.step(statusSyncPeriod)
	want := []string{"init-a", "init-b", "app", "init-a"}
	if got := h.r.startOrder(); !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if st := h.state("app"); st.State.Terminated == nil {
		t.Fatalf("app %+v, want stopped while the init containers run again", st.State)
	}
	if got := h.cond(corev1.PodInitialized); got.Status != corev1.ConditionTrue {
		// The app has run before: the kubelet keeps the pod Initialized.
		t.Fatalf("Initialized %+v", got)
	}
	h.exit("init-a", 0)
	h.exit("init-b", 0)
	want = append(want, "init-b", "app")
	if got := h.r.startOrder(); !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	for name, rc := range map[string]int32{"init-a": 1, "init-b": 1, "app": 1} {
		if got := h.state(name).RestartCount; got != rc {
			t.Errorf("%s restartCount %d, want %d", name, got, rc)
		}
	}
}

func execProbe(period, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failure,
	}
}

// stepEach advances the fake clock a second at a time so probe workers tick.
func (h *harness) stepEach(n int) {
	for i := 0; i < n; i++ {
		h.step(time.Second)
	}
}

func TestLivenessFailureRestartsTheContainer(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	pod.Spec.Containers[0].LivenessProbe = execProbe(1, 3)
	h := newHarness(t, pod)
	h.stepEach(3)
	if n := len(h.r.startOrder()); n != 1 {
		t.Fatalf("%d starts while the probe passes", n)
	}
	h.r.setExit("app", 1)
	h.stepEach(6)
	if n := len(h.r.startOrder()); n < 2 {
		t.Fatalf("not restarted after the liveness probe failed 3 times (%d starts); signals %v", n, h.r.sent())
	}
	if !slices.Contains(h.r.sent(), "app:15") {
		t.Fatalf("signals %v, want SIGTERM first", h.r.sent())
	}
	if rc := h.state("app").RestartCount; rc != 1 {
		t.Fatalf("restartCount %d", rc)
	}
}

// A container its liveness probe killed is started again whatever its exit
// code unless the policy is Never, as computePodActions does (restart :=
// shouldRestartOnFailure(pod)), and the Killing event says so only then.
func TestLivenessKillRestartsWhateverTheExitCodeUnlessNever(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever} {
		t.Run(string(policy), func(t *testing.T) {
			pod := testPod(policy, nil, []string{"app"})
			pod.Spec.Containers[0].LivenessProbe = execProbe(1, 1)
			h := newHarness(t, pod)
			h.r.handle(t, "app").sigterm = false // exits 0 by itself below
			h.r.setExit("app", 1)
			h.stepEach(2)
			if c := h.m.byName["app"]; !c.stopping {
				t.Fatalf("app not stopping after its liveness probe failed; signals %v", h.r.sent())
			}
			h.exit("app", 0) // it handles SIGTERM and exits 0
			h.stepEach(15)
			starts, want := len(h.r.startOrder()), 2
			msg := "Container app failed liveness probe, will be restarted"
			if policy == corev1.RestartPolicyNever {
				want, msg = 1, "Container app failed liveness probe\""
			}
			if starts < want || policy == corev1.RestartPolicyNever && starts != 1 {
				t.Fatalf("%d starts, want %d", starts, want)
			}
			events, err := os.ReadFile(h.m.events.path)
			if err != nil || !strings.Contains(string(events), msg) {
				t.Fatalf("events %s (%v): want %q", events, err, msg)
			}
		})
	}
}

func TestReadinessDrivesReadyAndConditions(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	pod.Spec.Containers[0].ReadinessProbe = execProbe(1, 1)
	h := newHarnessWith(t, pod, func(r *fakeRunner) { r.execCode["app"] = 1 })
	if st := h.state("app"); st.Ready || st.State.Running == nil {
		t.Fatalf("app %+v: running but not ready before the probe passes", st)
	}
	if c := h.cond(corev1.PodReady); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [app]" {
		t.Fatalf("Ready %+v", c)
	}
	h.r.setExit("app", 0)
	h.stepEach(2)
	if !h.state("app").Ready || h.cond(corev1.PodReady).Status != corev1.ConditionTrue {
		t.Fatalf("not ready after the probe passed: %+v", h.state("app"))
	}
	h.r.setExit("app", 1)
	h.stepEach(2)
	if h.state("app").Ready || h.cond(corev1.ContainersReady).Status != corev1.ConditionFalse {
		t.Fatal("still ready after the probe failed")
	}
	if n := len(h.r.startOrder()); n != 1 {
		t.Fatalf("a readiness failure restarted the container (%d starts)", n)
	}
}

func TestStartupProbeGatesTheNextInitContainer(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"side", "init"}, []string{"app"})
	sidecar(pod, 0)
	pod.Spec.InitContainers[0].StartupProbe = execProbe(1, 30)
	h := newHarnessWith(t, pod, func(r *fakeRunner) { r.execCode["side"] = 1 })
	h.stepEach(3)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side"}) {
		t.Fatalf("started %v before the sidecar's startup probe passed", got)
	}
	if st := h.state("side"); *st.Started {
		t.Fatal("sidecar reported started before its startup probe passed")
	}
	h.r.setExit("side", 0)
	h.stepEach(2)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side", "init"}) {
		t.Fatalf("started %v, want the init container once the sidecar started", got)
	}
}

func TestRestoreRunsAnAlwaysPodAgainAndFailsANeverPod(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	prev := corev1.PodStatus{
		StartTime: &started,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: ReasonCompleted}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started}},
	}
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyNever} {
		t.Run(string(policy), func(t *testing.T) {
			// Restore before the first sync, as Supervise does.
			h2clk := clocktesting.NewFakeClock(started.Time.Add(time.Hour))
			r := newFakeRunner(h2clk)
			ev := &eventLog{path: filepath.Join(t.TempDir(), "events"), now: h2clk.Now}
			m := newMachine(context.Background(), testPod(policy, []string{"init"}, []string{"app"}), r, h2clk, ev, newBackoff(h2clk, DefaultBackoffInitial, DefaultBackoffMax))
			m.restore(prev)
			h := &harness{t: t, m: m, r: r, clock: h2clk}
			h.settle()
			app := h.state("app")
			if policy == corev1.RestartPolicyNever {
				if h.status.Phase != corev1.PodFailed || len(r.startOrder()) != 0 {
					t.Fatalf("phase %s, started %v: a lost Never pod fails without running", h.status.Phase, r.startOrder())
				}
				if app.State.Terminated == nil || app.State.Terminated.Reason != "ContainerStatusUnknown" {
					t.Fatalf("app %+v", app.State)
				}
				return
			}
			if got := r.startOrder(); !slices.Equal(got, []string{"init"}) {
				t.Fatalf("started %v, want the init container first", got)
			}
			// The old status's Initialized (True, as the app had run) stays
			// True while the init container runs again, with its time.
			if c := h.cond(corev1.PodInitialized); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&started) {
				t.Fatalf("Initialized %+v while the init container runs again", c)
			}
			h.exit("init", 0)
			h.step(statusSyncPeriod)
			app = h.state("app")
			if app.State.Running == nil || app.RestartCount != 3 || app.LastTerminationState.Terminated.Reason != "ContainerStatusUnknown" {
				t.Fatalf("app %+v", app)
			}
		})
	}
}

func hook(cmd ...string) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

func TestPostStartHookHoldsOnlyTheContainersAfterIt(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app0", "proxy", "app2", "app3"})
	pod.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: hook("gate")}
	h := newHarness(t, pod)
	if got := h.r.startOrder(); len(got) != 2 || !slices.Contains(got, "app0") || !slices.Contains(got, "proxy") {
		t.Fatalf("started %v: app0 and proxy start together, the containers after proxy wait for its postStart hook", got)
	}
	close(h.r.gate)
	h.settle()
	if got := h.r.startOrder(); len(got) != 4 || !slices.Contains(got[2:], "app2") || !slices.Contains(got[2:], "app3") {
		t.Fatalf("started %v, want app2 and app3 once the hook returned", got)
	}
}

func TestPostStartHookOfARestartedSidecarHoldsTheApps(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"side"}, []string{"app"})
	sidecar(pod, 0)
	pod.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PostStart: hook("gate")}
	h := newHarness(t, pod)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side"}) {
		t.Fatalf("started %v: the app waits for the sidecar's postStart hook", got)
	}
	close(h.r.gate)
	h.settle()
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side", "app"}) {
		t.Fatalf("started %v", got)
	}
}

func TestSilentSidecarLetsTheNextContainerStartSoon(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"side", "init"}, []string{"app"})
	sidecar(pod, 0)
	h := newHarnessWith(t, pod, func(r *fakeRunner) { r.silent["side"] = true })
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side"}) {
		t.Fatalf("started %v: the next container waits for the sidecar's first output", got)
	}
	h.step(sidecarSettle)
	if got := h.r.startOrder(); !slices.Equal(got, []string{"side", "init"}) {
		t.Fatalf("started %v, want init once the sidecar settled", got)
	}
}

func TestSidecarPreStopHooksRunAtOnceAndSignalsInReverse(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"side1", "side2"}, []string{"app"})
	sidecar(pod, 0)
	sidecar(pod, 1)
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Lifecycle = &corev1.Lifecycle{PreStop: hook("block")}
	}
	grace := int64(10)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	h := newHarness(t, pod)
	h.exit("app", 0)
	waitFor(t, func() bool { return len(h.r.execLog()) == 2 })
	if got := h.r.execLog(); !slices.Contains(got, "side1:block") || !slices.Contains(got, "side2:block") {
		t.Fatalf("execs %v: every sidecar's preStop hook must start at once", got)
	}
	if got := h.r.sent(); len(got) != 0 {
		t.Fatalf("signals %v while the hooks run", got)
	}
	// The hooks use the whole grace period; then each sidecar still gets its
	// stop signal and 2 seconds.
	h.r.handle(t, "side1").sigterm = false
	h.r.handle(t, "side2").sigterm = false
	h.step(10 * time.Second)
	if got := h.r.sent(); !slices.Contains(got, "side1:15") || !slices.Contains(got, "side2:15") || len(got) != 2 {
		t.Fatalf("signals %v, want SIGTERM for both sidecars when their hooks ran out of time", got)
	}
	h.step(1900 * time.Millisecond)
	if got := h.r.sent(); len(got) != 2 {
		t.Fatalf("signals %v: SIGKILL before the 2-second minimum", got)
	}
	h.step(100 * time.Millisecond)
	if got := h.r.sent(); !slices.Contains(got, "side1:9") || !slices.Contains(got, "side2:9") {
		t.Fatalf("signals %v, want SIGKILL 2 seconds after the signal", got)
	}
	if h.status.Phase != corev1.PodSucceeded || h.m.state != stateDone {
		t.Fatalf("phase %s state %d", h.status.Phase, h.m.state)
	}
}

func TestSidecarsWaitForTheNextSidecarAfterTheirHooks(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, []string{"side1", "side2"}, []string{"app"})
	sidecar(pod, 0)
	sidecar(pod, 1)
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Lifecycle = &corev1.Lifecycle{PreStop: hook("drain")}
	}
	h := newHarness(t, pod)
	h.r.handle(t, "side2").sigterm = false
	h.exit("app", 0)
	if got := h.r.execLog(); !slices.Contains(got, "side1:drain") || !slices.Contains(got, "side2:drain") {
		t.Fatalf("execs %v: both preStop hooks run when the pod completes", got)
	}
	if got := h.r.sent(); !slices.Equal(got, []string{"side2:15"}) {
		t.Fatalf("signals %v, want the last sidecar signalled first", got)
	}
	h.step(5 * time.Second)
	if got := h.r.sent(); !slices.Equal(got, []string{"side2:15"}) {
		t.Fatalf("signals %v: side1 must wait for side2 to exit", got)
	}
	h.exit("side2", 0)
	if got := h.r.sent(); !slices.Equal(got, []string{"side2:15", "side1:15"}) {
		t.Fatalf("signals %v, want side1 signalled once side2 exited", got)
	}
}

func TestMinimumGracePeriodAfterAPreStopHookThatUsedItAll(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, []string{"app"})
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: hook("block")}
	h := newHarness(t, pod)
	h.r.handle(t, "app").sigterm = false
	h.m.requestDelete(3 * time.Second)
	h.settle()
	h.step(3 * time.Second)
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15"}) {
		t.Fatalf("signals %v, want SIGTERM when the hook ran out of time", got)
	}
	h.step(1900 * time.Millisecond)
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15"}) {
		t.Fatalf("signals %v: killed within the 2-second minimum", got)
	}
	h.step(100 * time.Millisecond)
	if got := h.r.sent(); !slices.Equal(got, []string{"app:15", "app:9"}) {
		t.Fatalf("signals %v, want SIGKILL 2 seconds after SIGTERM", got)
	}
}

func TestForcedDeleteKillsAtOnce(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"side"}, []string{"app"})
	sidecar(pod, 0)
	h := newHarness(t, pod)
	h.m.requestDelete(0)
	h.settle()
	if got := h.r.sent(); !slices.Contains(got, "app:9") || !slices.Contains(got, "side:9") || len(got) != 2 {
		t.Fatalf("signals %v, want SIGKILL for everything", got)
	}
	if h.m.state != stateDone {
		t.Fatal("machine not done")
	}
}

// waitFor polls cond for up to 2 seconds (work on other goroutines).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200 && !cond(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !cond() {
		t.Fatal("condition not met")
	}
}

// A container killed by a failed liveness probe is killed inside the
// kubelet's SyncPod: nothing else of the pod starts until it has stopped, so
// an exited sidecar waits for the app container's preStop hook and grace
// period (container_lifecycle_test.go: restartable init containers are not
// restarted while the app container is in preStop).
func TestSidecarWaitsForAnAppContainerKilledByItsProbe(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"side"}, []string{"app"})
	sidecar(pod, 0)
	grace := int64(10)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].LivenessProbe = execProbe(1, 1)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"block"}}}}
	h := newHarness(t, pod)
	h.r.setExit("app", 1)
	h.stepEach(2)
	if st := h.m.byName["app"]; !st.stopping || st.stopPhase != stopHook {
		t.Fatalf("app not in its preStop hook after the liveness probe failed; signals %v", h.r.sent())
	}
	h.exit("side", 1)
	h.stepEach(5)
	count := func() (n int) {
		for _, s := range h.r.startOrder() {
			if s == "side" {
				n++
			}
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("the sidecar was restarted while the app container ran its preStop hook (%d starts)", n)
	}
	h.r.setExit("app", 0)
	h.stepEach(25) // the hook's 10 s, SIGTERM, the sidecar's backoff
	if n := count(); n != 2 {
		t.Fatalf("the sidecar was not restarted once the app container stopped (%d starts); signals %v", n, h.r.sent())
	}
}

// A deleted pod reaches a terminal phase once its containers have stopped,
// as the kubelet's SyncTerminatingPod (getPhase with podIsTerminal) and the
// status manager's TerminatePod make it: Succeeded when every container
// exited 0 on its stop signal, Failed otherwise; a container that never
// started after the last one that did keeps its Waiting state.
func TestDeletedPodEndsInATerminalPhase(t *testing.T) {
	t.Run("exits 0", func(t *testing.T) {
		h := newHarness(t, testPod(corev1.RestartPolicyAlways, nil, []string{"a", "b"}))
		h.r.handle(t, "a").sigterm = false
		h.r.handle(t, "b").sigterm = false
		h.m.requestDelete(30 * time.Second)
		h.settle()
		if h.status.Phase != corev1.PodRunning {
			t.Fatalf("phase %s while the containers stop, want Running", h.status.Phase)
		}
		h.exit("a", 0)
		h.exit("b", 0)
		if h.m.state != stateDone || h.status.Phase != corev1.PodSucceeded {
			t.Fatalf("phase %s (done %v), want Succeeded", h.status.Phase, h.m.state == stateDone)
		}
	})
	t.Run("killed", func(t *testing.T) {
		h := newHarness(t, testPod(corev1.RestartPolicyAlways, nil, []string{"a"}))
		h.m.requestDelete(30 * time.Second)
		h.settle()
		if h.status.Phase != corev1.PodFailed || h.state("a").State.Terminated.ExitCode != 143 {
			t.Fatalf("phase %s, a %+v; want Failed, exit 143", h.status.Phase, h.state("a").State)
		}
		if c := h.cond(corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
			t.Fatalf("Ready %+v, want False (PodFailed)", c)
		}
	})
	t.Run("during init", func(t *testing.T) {
		h := newHarness(t, testPod(corev1.RestartPolicyAlways, []string{"init-a", "init-b"}, []string{"app"}))
		h.m.requestDelete(30 * time.Second)
		h.settle()
		if h.status.Phase != corev1.PodFailed {
			t.Fatalf("phase %s, want Failed", h.status.Phase)
		}
		if st := h.state("init-a").State; st.Terminated == nil || st.Terminated.ExitCode != 143 {
			t.Fatalf("init-a %+v, want its exit on SIGTERM", st)
		}
		for _, name := range []string{"init-b", "app"} {
			if st := h.state(name).State; st.Waiting == nil {
				t.Fatalf("%s %+v: never started, want it still Waiting", name, st)
			}
		}
	})
}

func TestTerminatePodMarksContainersWithoutAnEnd(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, []string{"init-a", "init-b"}, []string{"app", "other"})
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	s := corev1.PodStatus{
		Phase:                 corev1.PodRunning,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init-a", State: done}, {Name: "init-b", State: done}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}},
			{Name: "other", State: waiting, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
		},
	}
	terminatePod(pod, &s)
	if s.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed", s.Phase)
	}
	if got := s.ContainerStatuses[1].State.Terminated; got == nil || got.Reason != reasonStatusUnknown || got.ExitCode != 137 {
		t.Fatalf("other %+v, want ContainerStatusUnknown 137", s.ContainerStatuses[1].State)
	}
	if got := s.ContainerStatuses[0].State.Terminated; got.ExitCode != 143 {
		t.Fatalf("app's own end replaced: %+v", got)
	}
	// Nothing started at all: the first init container is reported failed,
	// the rest keep Waiting, and the app containers too (not initialized).
	s = corev1.PodStatus{
		Phase:                 corev1.PodPending,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init-a", State: waiting}, {Name: "init-b", State: waiting}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", State: waiting}, {Name: "other", State: waiting}},
	}
	terminatePod(pod, &s)
	if s.InitContainerStatuses[0].State.Terminated == nil || s.InitContainerStatuses[1].State.Waiting == nil ||
		s.ContainerStatuses[0].State.Waiting == nil || s.Phase != corev1.PodFailed {
		t.Fatalf("after TerminatePod: %+v", s)
	}
}
