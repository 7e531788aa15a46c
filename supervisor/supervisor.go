package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor/probe"
	"github.com/podrun/podrun/volumes"
)

// The kubelet's figures (pkg/kubelet/kubelet.go, kuberuntime_container.go).
const (
	DefaultBackoffInitial = 10 * time.Second
	DefaultBackoffMax     = 300 * time.Second
	minimumGracePeriod    = 2 * time.Second
	// statusSyncPeriod is how long an exited container shows as terminated
	// before it is restarted or backs off: the kubelet notices exits through
	// its PLEG relist, once a second, and its status shows the exit meanwhile
	// (kubectl's Error and Init:Error).
	statusSyncPeriod = time.Second
	deadlineMessage  = "Pod was active on the node longer than the specified deadline"
)

// sidecarSettle bounds how long the next container waits for a started
// sidecar that writes nothing: the kubelet starts the next container on the
// pod sync after the one that started the sidecar, once its PLEG relist (every
// second) has seen the sidecar running, so the sidecar's first output comes
// first. podrun moves on at that first output, at the latest after one relist.
const sidecarSettle = time.Second

// containerRunner creates and starts containers inside the pod's sandbox.
type containerRunner interface {
	// Start starts one run of c; restartCount numbers the run (0 = first).
	Start(ctx context.Context, c *corev1.Container, restartCount int32) (containerHandle, error)
	// StartEphemeral starts the one run of ephemeral container c, in the
	// PID namespace of target when that is a running container.
	StartEphemeral(ctx context.Context, c *corev1.Container, target containerHandle) (containerHandle, error)
	// StopSignal is the signal that asks c to stop (the image's STOPSIGNAL or SIGTERM).
	StopSignal(c *corev1.Container) syscall.Signal
}

// ctr is the supervisor's view of one declared container.
type ctr struct {
	spec    *corev1.Container
	init    bool // declared in initContainers
	sidecar bool
	// ephemeral: declared in ephemeralContainers (added through the
	// ephemeralcontainers subresource); it runs once, never restarted, and
	// target is the container whose PID namespace it joins, if any.
	ephemeral bool
	target    string
	status    corev1.ContainerStatus

	handle   containerHandle
	starting bool
	stopping bool
	// run numbers the container's runs, so late reports of an old run are dropped.
	run    int
	probes *probe.Probes
	// postStartPending: the postStart hook of the current run has not returned;
	// like the kubelet, a sidecar does not count as started before it has.
	postStartPending bool
	ran              bool // a run has ended or failed to start
	// changed: the container is being stopped to be started again whatever
	// the restart policy and its exit code: its image was updated, or (unless
	// the policy is Never) its liveness or startup probe failed.
	changed bool
	// completed: a plain init container succeeded in this incarnation of the pod.
	completed bool
	// retryAt holds a waiting container (config error) until then.
	retryAt time.Time
	// pullFailedAt is when pulling the container's image, or the image of
	// one of its image volumes (pullImage, else ""), last failed.
	pullFailedAt time.Time
	pullImage    string
	// wakeAt asks for a sync then (a backoff that ends, a state to show).
	wakeAt time.Time
	// output: the current run has written output (a sidecar's start settles).
	output bool
	// A stopping container goes through the kubelet's killContainer:
	// its preStop hook, then (a sidecar stopped with its pod) its turn, then
	// its stop signal; stopGrace is what is left of its grace period in
	// whole seconds, phaseAt when the current phase began.
	stopPhase int
	stopGrace int64
	phaseAt   time.Time
	ordered   bool
	// killAt is when a stopping container gets SIGKILL (once signalled).
	killAt time.Time
	// syncKill: the container is being stopped by the pod's sync itself (a
	// failed liveness or startup probe, a failed postStart hook, a changed
	// image), which the kubelet does inside SyncPod (killContainer returns
	// once the container has stopped): no other container of the pod starts
	// or restarts meanwhile.
	syncKill bool
	// endHooks ends the current run's preStop hook when the run ends.
	endHooks context.CancelFunc
	// A RestartAllContainers reset: resetKill, the current run is being
	// killed by it (its exit is not judged by its rules); reset, the
	// container was removed and starts at its turn with no backoff; counted,
	// its status already counts that next run (RestartCount).
	resetKill, reset, counted bool
}

// The phases of stopping a container (kuberuntime_container.go killContainer).
const (
	stopHook      = iota + 1 // the preStop hook runs, for at most stopGrace
	stopTurn                 // a sidecar waits for its turn (kuberuntime_termination_order.go)
	stopSignalled            // the stop signal is sent; SIGKILL at killAt
)

func (c *ctr) active() bool { return c.handle != nil || c.starting }

func (c *ctr) lastTerminated() *corev1.ContainerStateTerminated {
	if c.status.State.Terminated != nil {
		return c.status.State.Terminated
	}
	return c.status.LastTerminationState.Terminated
}

// message is what the supervisor's goroutines tell its loop.
type message struct {
	c      *ctr
	run    int
	handle containerHandle // started
	err    error           // failed to start
	exit   *exitResult     // ended
	probe  *probe.Update   // a probe's result changed
	// hookDone: the postStart hook returned (hookErr says how).
	hookDone bool
	hookErr  string
	// preStopDone: the preStop hook returned; output: the run wrote output.
	preStopDone bool
	output      bool
	// evict: the eviction manager evicts the pod with this message (no c).
	evict string
}

// podState is the pod's lifecycle as the supervisor drives it.
type podState int

const (
	stateRunning     podState = iota
	stateTerminating          // stopping every container: deletion, deadline, completion
	stateDone                 // nothing runs any more
)

// machine makes the kubelet's decisions for one pod: which container to start,
// restart or stop, and the pod status that results. It owns all state and runs
// on one goroutine; container work happens on others and comes back as messages.
type machine struct {
	pod *corev1.Pod
	// resizeConds is the pod's PodResizePending or PodResizeInProgress
	// condition while a resize is not done (resize).
	resizeConds []corev1.PodCondition
	// extConds are the conditions set through the status subresource
	// (store.ExternalConditions): readiness gates read them.
	extConds []corev1.PodCondition
	clock    clock.Clock
	runner   containerRunner
	events   *eventLog
	backoff  *backoff
	// imageBackoff spaces out pulls of an image that failed (the kubelet's image manager).
	imageBackoff *backoff
	// Messages from container goroutines and probe workers queue here without
	// ever blocking their sender; notify wakes the loop.
	msgMu   sync.Mutex
	pending []message
	notify  chan struct{}

	inits, apps []*ctr
	ephemerals  []*ctr
	byName      map[string]*ctr

	state       podState
	initialized bool
	// terminal is set when nothing will restart any more; finalPhase is the
	// phase the pod ends in, shown once every container has stopped (or at
	// once, when shownNow: a deadline fails the pod immediately).
	terminal   bool
	finalPhase corev1.PodPhase
	shownNow   bool
	deleting   bool
	restarting bool // stopping everything to run the pod again from its first init container
	// resettingAll: a container's exit matched a RestartAllContainers rule;
	// every container is killed and removed, then the pod runs again from
	// its first init container in the same sandbox (the AllContainersRestarting
	// condition is True meanwhile).
	resettingAll bool
	gracePeriod  time.Duration
	graceEnd     time.Time
	status       corev1.PodStatus
	sandboxReady bool
	ctx          context.Context
	// evicted is the message of the pod's eviction (evict), "" if none;
	// killGrace is then its grace period override, between a container's
	// stop signal and SIGKILL.
	evicted   string
	killGrace time.Duration
}

func newMachine(ctx context.Context, pod *corev1.Pod, runner containerRunner, clk clock.Clock, events *eventLog, bo *backoff) *machine {
	m := &machine{
		ctx: ctx, pod: pod, clock: clk, runner: runner, events: events, backoff: bo,
		notify: make(chan struct{}, 1), byName: map[string]*ctr{},
	}
	if bo != nil {
		m.imageBackoff = newBackoff(clk, bo.initial, bo.max)
	}
	defaultWaiting := ReasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		defaultWaiting = ReasonPodInitializing
	}
	add := func(c *corev1.Container, init bool) *ctr {
		x := &ctr{spec: c, init: init, sidecar: init && isSidecar(c)}
		x.status = corev1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			State:        corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: defaultWaiting}},
			VolumeMounts: volumes.MountStatuses(c),
		}
		f := false
		x.status.Started = &f
		m.byName[c.Name] = x
		return x
	}
	for i := range pod.Spec.InitContainers {
		m.inits = append(m.inits, add(&pod.Spec.InitContainers[i], true))
	}
	for i := range pod.Spec.Containers {
		m.apps = append(m.apps, add(&pod.Spec.Containers[i], false))
	}
	m.addEphemeral(pod.Spec.EphemeralContainers)
	now := metav1.NewTime(clk.Now())
	m.status.StartTime = &now
	m.gracePeriod = 30 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		m.gracePeriod = time.Duration(*g) * time.Second
	}
	m.initialized = len(m.inits) == 0
	return m
}

// restore carries a previous supervisor's view of the pod over to this one,
// which runs the pod again from its first init container: restart counts go
// on, and a container that was running when its supervisor was lost ended
// unknown, as the kubelet reports containers it can no longer find.
func (m *machine) restore(prev corev1.PodStatus) {
	if prev.StartTime == nil {
		return
	}
	m.status.StartTime = prev.StartTime // activeDeadlineSeconds counts from the first start
	// The kubelet's old status: its conditions keep their transition times,
	// and Initialized stays True while the init containers run again.
	for _, c := range prev.Conditions {
		if store.PodConditionByKubelet(c.Type) && c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			m.status.Conditions = append(m.status.Conditions, c)
		}
	}
	now := metav1.NewTime(m.clock.Now())
	all := append(append([]corev1.ContainerStatus{}, prev.InitContainerStatuses...), prev.ContainerStatuses...)
	for _, c := range append(append([]*ctr{}, m.inits...), m.apps...) {
		st, ok := findStatus(all, c.spec.Name)
		if !ok {
			continue
		}
		last := st.State.Terminated
		if st.State.Running != nil {
			last = &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: reasonStatusUnknown, Message: messageStatusUnknown,
				StartedAt: st.State.Running.StartedAt, FinishedAt: now, ContainerID: st.ContainerID,
			}
		}
		if last == nil {
			last = st.LastTerminationState.Terminated
		}
		if last == nil {
			continue
		}
		c.ran = true
		c.status.RestartCount = st.RestartCount
		c.status.LastTerminationState = corev1.ContainerState{Terminated: last}
		if m.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			c.status.State = corev1.ContainerState{Terminated: last}
			c.status.LastTerminationState = st.LastTerminationState
		}
	}
	// An ephemeral container that ran is not run again: one that was running
	// when the supervisor was lost ended unknown.
	for _, c := range m.ephemerals {
		st, ok := findStatus(prev.EphemeralContainerStatuses, c.spec.Name)
		if !ok || st.State.Waiting != nil {
			continue
		}
		c.ran = true
		c.status = st
		if r := st.State.Running; r != nil {
			c.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: reasonStatusUnknown, Message: messageStatusUnknown,
				StartedAt: r.StartedAt, FinishedAt: now, ContainerID: st.ContainerID,
			}}
		}
	}
	if m.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		// The kubelet does not run a Never pod again once its sandbox is gone.
		m.events.add("Warning", "SupervisorLost", "", "The pod's supervisor was lost and restartPolicy is Never: the pod has failed")
		m.shownNow = true
		m.finish(corev1.PodFailed)
		return
	}
	m.events.add("Normal", "Restarting", "", "Running the pod again: its supervisor was lost")
}

// all is every container of the pod: init, app and ephemeral.
func (m *machine) all() []*ctr {
	return append(append(append([]*ctr{}, m.inits...), m.apps...), m.ephemerals...)
}

// addEphemeral adds the ephemeral containers not known yet, waiting, as the
// kubelet's status shows an ephemeral container it has not started
// (convertToAPIContainerStatuses' default state; no started, never ready).
func (m *machine) addEphemeral(ecs []corev1.EphemeralContainer) {
	reason := ReasonContainerCreating
	if len(m.pod.Spec.InitContainers) > 0 {
		reason = ReasonPodInitializing
	}
	for _, ec := range ecs {
		if _, ok := m.byName[ec.Name]; ok {
			continue
		}
		spec := corev1.Container(*ec.EphemeralContainerCommon.DeepCopy())
		x := &ctr{spec: &spec, ephemeral: true, target: ec.TargetContainerName}
		x.status = corev1.ContainerStatus{
			Name:         ec.Name,
			Image:        ec.Image,
			State:        corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
			VolumeMounts: volumes.MountStatuses(&spec),
		}
		m.byName[ec.Name] = x
		m.ephemerals = append(m.ephemerals, x)
	}
}

// syncEphemeral starts the ephemeral containers that have not run, as
// SyncPod does before it looks at the init containers
// (podContainerChanges.EphemeralContainersToStart: those without a status);
// one that has run is never started again.
func (m *machine) syncEphemeral() {
	if m.terminal {
		return
	}
	for _, c := range m.ephemerals {
		if !c.ran && !c.active() && !c.stopping {
			m.startWithBackoff(c)
		}
	}
}

func (m *machine) object(c *ctr) string {
	if c.ephemeral {
		return fmt.Sprintf("spec.ephemeralContainers{%s}", c.spec.Name)
	}
	if c.init {
		return fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	return fmt.Sprintf("spec.containers{%s}", c.spec.Name)
}

// podRef is the kubelet's format.Pod: name_namespace(uid).
func (m *machine) podRef() string {
	return fmt.Sprintf("%s_%s(%s)", m.pod.Name, m.pod.Namespace, m.pod.UID)
}

// post queues a message for the loop; it never blocks.
func (m *machine) post(msg message) {
	m.msgMu.Lock()
	m.pending = append(m.pending, msg)
	m.msgMu.Unlock()
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// take returns the queued messages in order.
func (m *machine) take() []message {
	m.msgMu.Lock()
	defer m.msgMu.Unlock()
	out := m.pending
	m.pending = nil
	return out
}

// backoffKey identifies a container across its runs (kubelet getStableKey).
func (m *machine) backoffKey(c *ctr) string {
	return fmt.Sprintf("%s_%s_%s_%s", m.pod.Name, m.pod.Namespace, m.pod.UID, c.spec.Name)
}

// sync is one pass of the kubelet's computePodActions: it starts, restarts or
// stops containers as the pod's spec and the containers' states require.
func (m *machine) sync() {
	now := m.clock.Now()
	for _, c := range m.all() {
		if c.stopping && c.handle != nil {
			m.advanceStop(c, now)
		}
		if c.stopping && c.handle != nil && c.stopPhase == stopSignalled && !c.killAt.After(now) {
			_ = c.handle.Signal(syscall.SIGKILL)
			c.killAt = now.Add(time.Hour) // once
		}
	}
	if m.state == stateRunning {
		if d := m.pod.Spec.ActiveDeadlineSeconds; d != nil && !m.terminal {
			if m.clock.Since(m.status.StartTime.Time) >= time.Duration(*d)*time.Second {
				m.status.Reason = ReasonDeadlineExceeded
				m.status.Message = deadlineMessage
				m.events.add("Normal", ReasonDeadlineExceeded, "", "%s", deadlineMessage)
				m.shownNow = true
				m.finish(corev1.PodFailed)
			}
		}
	}
	if m.state == stateRunning && m.resettingAll {
		m.syncResetAll()
		return
	}
	if m.state == stateRunning && m.killingInSync() {
		return // the kubelet's SyncPod is still in killContainer
	}
	if m.state == stateRunning {
		m.syncEphemeral()
	}
	if m.state == stateRunning && !m.initialized {
		m.syncInit()
	}
	if m.state == stateRunning && m.initialized {
		m.syncApps()
	}
	if m.state == stateTerminating {
		m.syncTermination()
	}
}

// killingInSync reports whether a container is being stopped by the pod's
// sync (ctr.syncKill): SyncPod kills podContainerChanges.ContainersToKill one
// by one, waiting for each (kuberuntime_manager.go), before it starts anything.
func (m *machine) killingInSync() bool {
	for _, c := range m.all() {
		if c.syncKill && c.stopping && c.handle != nil {
			return true
		}
	}
	return false
}

// syncInit walks the init containers in order (computeInitContainerActions):
// it runs the first one that has not completed, keeps sidecars running, and
// marks the pod initialized once every init container completed or started.
func (m *machine) syncInit() {
	for _, c := range m.inits {
		if c.starting || c.stopping {
			return
		}
		if c.sidecar {
			if c.handle != nil {
				if c.status.Started != nil && *c.status.Started && !c.postStartPending && m.sidecarSettled(c) {
					continue
				}
				return // waiting for its startup probe, its postStart hook or its first output
			}
			m.startWithBackoff(c)
			return
		}
		if c.handle != nil {
			return
		}
		if c.completed {
			continue
		}
		if t := c.status.State.Terminated; t != nil && t.ExitCode != 0 && !containerShouldRestart(c.spec, &m.pod.Spec, t.ExitCode) {
			// A failed init container that is not restarted (its rules, its
			// restart policy, the pod's: computeInitContainerActions' KillPod)
			// fails the pod; nothing else starts.
			m.shownNow = true
			m.finish(corev1.PodFailed)
			return
		}
		m.startWithBackoff(c)
		return
	}
	m.initialized = true
}

// sidecarSettled: the next container may start after sidecar c. The kubelet
// starts it on the pod sync after the one that started the sidecar, once its
// PLEG has seen the sidecar running, so what the sidecar writes first comes
// before anything the next container writes. podrun moves on at the sidecar's
// first output (or one relist later when it writes nothing); a startup
// probe that has passed is the sidecar's own word that it has started.
func (m *machine) sidecarSettled(c *ctr) bool {
	if c.output || c.spec.StartupProbe != nil {
		return true
	}
	r := c.status.State.Running
	if r == nil {
		return true
	}
	at := r.StartedAt.Add(sidecarSettle)
	if m.clock.Now().Before(at) {
		c.wakeAt = at
		return false
	}
	return true
}

// shouldRestart is the kubelet's ShouldContainerBeRestarted for an app
// container that has run: its restart rules, its restart policy, the pod's.
// A container that a RestartAllContainers reset removed starts again (it has
// no status in the runtime any more).
func (m *machine) shouldRestart(c *ctr) bool {
	if c.sidecar || c.reset {
		return true
	}
	t := c.lastTerminated()
	if t == nil {
		return restartOnKill(c.spec, &m.pod.Spec)
	}
	return containerShouldRestart(c.spec, &m.pod.Spec, t.ExitCode)
}

func (m *machine) syncApps() {
	// A pod whose app containers are all done for good is complete: its phase
	// is final and the sidecars are stopped (sidecars do not keep a pod alive).
	done := true
	for _, c := range m.apps {
		if c.active() || !c.ran || m.shouldRestart(c) || c.changed {
			done = false
		}
	}
	if done {
		succeeded := true
		for _, c := range m.apps {
			if t := c.lastTerminated(); t == nil || t.ExitCode != 0 {
				succeeded = false
			}
		}
		if succeeded {
			m.finish(corev1.PodSucceeded)
		} else {
			m.finish(corev1.PodFailed)
		}
		return
	}
	// The kubelet starts containers one after another in spec order, each
	// start returning once its postStart hook has (kuberuntime_container.go
	// startContainer, SyncPod). podrun starts them together, except that a
	// container waits for the postStart hooks of the containers before it.
	hookBefore := false
	for _, c := range m.inits {
		if !c.sidecar {
			continue
		}
		if !hookBefore && !c.active() && !c.stopping {
			m.startWithBackoff(c)
		}
		hookBefore = hookBefore || c.postStartPending
	}
	for _, c := range m.apps {
		if !hookBefore && !c.active() && !c.stopping && (!c.ran || m.shouldRestart(c) || c.changed) {
			m.startWithBackoff(c)
		}
		hookBefore = hookBefore || c.postStartPending
	}
}

// finish makes the pod's phase final and stops what still runs.
func (m *machine) finish(phase corev1.PodPhase) {
	m.terminal = true
	m.finalPhase = phase
	m.beginTermination(m.gracePeriod)
}

// requestDelete starts a graceful deletion with the given grace period.
func (m *machine) requestDelete(grace time.Duration) {
	if !m.deleting {
		m.deleting = true
		now := metav1.NewTime(m.clock.Now())
		if m.pod.DeletionTimestamp == nil && m.pod.Generation > 0 {
			m.pod.Generation++ // rest.BeforeDelete: a graceful deletion is a new generation
		}
		m.pod.DeletionTimestamp = &now
		secs := int64(grace / time.Second)
		m.pod.DeletionGracePeriodSeconds = &secs
	}
	// A second delete may shorten the grace period, never extend it.
	m.beginTermination(grace)
}

func (m *machine) beginTermination(grace time.Duration) {
	if m.state == stateDone {
		return
	}
	now := m.clock.Now()
	end := now.Add(grace)
	if m.state != stateTerminating || end.Before(m.graceEnd) {
		m.graceEnd = end
	}
	m.state = stateTerminating
	for _, c := range m.all() {
		if c.stopping && c.handle != nil {
			m.shortenStop(c, now, m.graceEnd.Sub(now)) // a second delete may shorten the grace period
		}
		// Readiness keeps running while a container stops; liveness and startup do not.
		if c.probes != nil {
			c.probes.StopLivenessAndStartup()
		}
	}
}

// syncTermination stops every container at once, as the kubelet's
// killContainersWithSyncResult does: each runs its preStop hook right away;
// sidecars then wait for their turn (every app container, then the next
// sidecar, has exited: kuberuntime_termination_order.go) before their stop
// signal, so they are signalled in reverse order.
func (m *machine) syncTermination() {
	busy := false
	for _, c := range m.all() {
		busy = m.stop(c) || busy
	}
	if busy {
		return
	}
	if m.restarting && !m.deleting && !m.terminal {
		m.rerun()
		return
	}
	m.state = stateDone
}

// requestRestart restarts the pod: every container stops, then the pod runs
// again from its first init container, as after the kubelet recreates a sandbox.
func (m *machine) requestRestart() {
	if m.terminal || m.deleting || m.state != stateRunning || m.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return
	}
	m.restarting = true
	m.events.add("Normal", "Restarting", "", "Restarting the pod: stopping its containers, then running it again from the first init container")
	m.beginTermination(m.gracePeriod)
}

// rerun starts the pod's next incarnation once everything has stopped.
func (m *machine) rerun() {
	m.restarting = false
	m.state = stateRunning
	m.graceEnd = time.Time{}
	m.initialized = len(m.inits) == 0
	for _, c := range m.all() {
		c.completed = false
		c.status.Ready = false
	}
	m.sync()
}

// syncResetAll is SyncPod with the AllContainersRestarting condition True
// (computePodActions' ContainersToReset): every init and app container still
// running is killed with a grace period of 0, so with no preStop hook and
// SIGKILL 2 seconds after its stop signal (killContainer's minimum), and
// removed; once none is left the pod runs again from its first init
// container, in the same sandbox, without crash-loop backoff.
func (m *machine) syncResetAll() {
	now := m.clock.Now()
	busy := false
	for _, c := range append(append([]*ctr{}, m.inits...), m.apps...) {
		if c.starting {
			busy = true // killed once its start has returned
			continue
		}
		if c.handle == nil {
			continue
		}
		busy = true
		if c.resetKill {
			continue
		}
		c.resetKill = true
		if c.stopping {
			m.shortenStop(c, now, minimumGracePeriod)
			continue
		}
		m.events.add("Normal", "Killing", m.object(c), "killing")
		c.stopping, c.ordered = true, false
		c.stopGrace, c.stopPhase, c.phaseAt = 0, stopTurn, now
		m.advanceStop(c, now)
	}
	if busy {
		return
	}
	for _, c := range append(append([]*ctr{}, m.inits...), m.apps...) {
		if c.status.State.Waiting == nil {
			m.removedByReset(c)
		}
		c.reset = c.ran
		c.completed = false
	}
	m.resettingAll = false
	m.initialized = len(m.inits) == 0
	m.sync()
}

// removedByReset shows c as the kubelet shows a container that a reset
// removed (convertToAPIContainerStatuses with podRestarting): waiting, its
// last state a RestartingAllContainers termination, its restart count already
// that of its next run.
func (m *machine) removedByReset(c *ctr) {
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: ReasonRestartingAllContainers, Message: messageRestartingAllContainers,
	}}
	c.status.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Reason: ReasonRestartingAllContainers, Message: messageRestartingAllContainers, ExitCode: 137,
	}}
	c.status.RestartCount++
	c.status.Ready = false
	// No container is left in the runtime: the status is the kubelet's
	// default one for the container (no ID, image ID, user or resources).
	c.status.ContainerID, c.status.ImageID, c.status.User = "", "", nil
	c.status.Image = c.spec.Image
	c.counted, c.reset, c.completed = true, true, false
}

// stop asks a container to stop within what is left of the pod's grace
// period and reports whether it is still active.
func (m *machine) stop(c *ctr) bool {
	if c.starting {
		return true // stopped once its start has returned
	}
	if c.handle == nil {
		return false
	}
	if !c.stopping {
		m.events.add("Normal", "Killing", m.object(c), "Stopping container %s", c.spec.Name)
		m.stopContainer(c, m.graceEnd.Sub(m.clock.Now()), c.sidecar)
	}
	return true
}

// imageKey identifies an image pull of this pod (the kubelet keys by pod and image).
func (m *machine) imageKey(c *ctr) string { return string(m.pod.UID) + "_" + m.pullImage(c) }

// pullImage is the image whose failed pull holds c: its own, or an image
// volume's.
func (m *machine) pullImage(c *ctr) string {
	if c.pullImage != "" {
		return c.pullImage
	}
	return c.spec.Image
}

// pullObject is what the image manager's events of c's failed pull are
// recorded against: c, or the pod for an image volume (getImageVolumes).
func (m *machine) pullObject(c *ctr) string {
	if c.pullImage != "" {
		return ""
	}
	return m.object(c)
}

// startWithBackoff starts c unless an image-pull or crash-loop backoff still holds it.
func (m *machine) startWithBackoff(c *ctr) {
	now := m.clock.Now()
	if now.Before(c.retryAt) {
		return
	}
	if !c.pullFailedAt.IsZero() {
		if until, wait := m.imageBackoff.untilUpdate(m.imageKey(c)); wait {
			// ErrImagePull shows until the next sync (about a second on the
			// kubelet), then ImagePullBackOff until the backoff ends.
			showAt := c.pullFailedAt.Add(time.Second)
			if now.Before(showAt) {
				c.wakeAt = showAt
				return
			}
			if w := c.status.State.Waiting; w == nil || w.Reason != ReasonImagePullBackOff {
				c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: ReasonImagePullBackOff, Message: fmt.Sprintf("Back-off pulling image %q", m.pullImage(c)),
				}}
				m.events.add("Normal", "BackOff", m.pullObject(c), "Back-off pulling image %q", m.pullImage(c))
				// startContainer then records EnsureImageExists' error:
				// "Error: ImagePullBackOff" (kuberuntime_container.go).
				m.events.add("Warning", "Failed", m.object(c), "Error: %s", ReasonImagePullBackOff)
			}
			c.wakeAt = until
			return
		}
	}
	if t := c.lastTerminated(); c.ran && t != nil && !c.reset {
		if shown := t.FinishedAt.Add(statusSyncPeriod); now.Before(shown) {
			c.wakeAt = shown
			return
		}
		key := m.backoffKey(c)
		if _, wait := m.backoff.until(key, t.FinishedAt.Time); wait {
			if c.status.State.Waiting == nil || c.status.State.Waiting.Reason != ReasonCrashLoopBackOff {
				if c.status.State.Terminated != nil {
					c.status.LastTerminationState = corev1.ContainerState{Terminated: c.status.State.Terminated}
				}
				c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  ReasonCrashLoopBackOff,
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", m.backoff.delay(key), c.spec.Name, m.podRef()),
				}}
				m.events.add("Warning", "BackOff", m.object(c), "Back-off restarting failed container %s in pod %s", c.spec.Name, m.podRef())
			}
			return
		}
		m.backoff.next(key, t.FinishedAt.Time)
	}
	m.start(c)
}

func (m *machine) start(c *ctr) {
	restartCount := int32(0)
	if c.ran {
		restartCount = c.status.RestartCount + 1
	}
	if c.counted {
		restartCount = c.status.RestartCount
	}
	c.reset = false
	c.starting = true
	c.changed = false
	c.run++
	run := c.run
	postStart := c.spec.Lifecycle != nil && c.spec.Lifecycle.PostStart != nil
	c.postStartPending = postStart
	c.output = false
	sidecar := c.sidecar
	startRun := func() (containerHandle, error) { return m.runner.Start(m.ctx, c.spec, restartCount) }
	if c.ephemeral {
		var target containerHandle
		if t := m.byName[c.target]; t != nil && !t.ephemeral {
			target = t.handle
		}
		startRun = func() (containerHandle, error) { return m.runner.StartEphemeral(m.ctx, c.spec, target) }
	}
	// The status's restart count moves when the new run exists (handle).
	go func() {
		h, err := startRun()
		m.post(message{c: c, run: run, handle: h, err: err})
		if err != nil {
			return
		}
		exited := make(chan struct{})
		go func() {
			res := h.Wait()
			close(exited)
			m.post(message{c: c, run: run, exit: &res})
		}()
		if sidecar {
			go func() {
				select {
				case <-h.Output():
					m.post(message{c: c, run: run, output: true})
				case <-exited:
				}
			}()
		}
		if postStart {
			// The kubelet runs postStart right after the start; it ends with the container.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-exited:
					cancel()
				case <-ctx.Done():
				}
			}()
			msg, err := probe.RunHandler(ctx, c.spec.Lifecycle.PostStart, m.target(c, h))
			cancel()
			done := message{c: c, run: run, hookDone: true}
			if err != nil {
				done.hookErr = msg
				if done.hookErr == "" {
					done.hookErr = err.Error()
				}
			}
			m.post(done)
		}
	}()
}

// target is what probes and hooks act on for one run of c.
func (m *machine) target(c *ctr, h containerHandle) probe.Target {
	return probe.Target{
		Pod: m.pod, PodIP: m.status.PodIP, Container: c.spec, Exec: h.Exec, StartedAt: m.clock.Now(),
		Event: func(e probe.Event) { m.events.add("Warning", e.Reason, m.object(c), "%s", e.Message) },
	}
}

// handle applies a message from a container goroutine.
func (m *machine) handle(msg message) {
	if msg.evict != "" {
		m.evict(msg.evict)
		return
	}
	c := msg.c
	now := m.clock.Now()
	if msg.run != c.run && (msg.probe != nil || msg.hookDone || msg.preStopDone || msg.output) {
		return // about a run that has ended
	}
	switch {
	case msg.probe != nil:
		m.handleProbe(c, msg.probe)
	case msg.output:
		c.output = true
	case msg.preStopDone:
		if c.stopping && c.stopPhase == stopHook {
			m.endPreStop(c, now)
			m.advanceStop(c, now)
		}
	case msg.hookDone:
		c.postStartPending = false
		if msg.hookErr != "" && c.handle != nil {
			m.events.add("Warning", "FailedPostStartHook", m.object(c), "%s", msg.hookErr)
			m.events.add("Normal", "Killing", m.object(c), "FailedPostStartHook")
			c.syncKill = true
			m.stopContainer(c, m.gracePeriod, false)
		}
	case msg.exit != nil:
		if c.probes != nil {
			c.probes.Stop()
			c.probes = nil
		}
		c.postStartPending = false
		c.handle = nil
		c.stopping = false
		c.syncKill = false
		if c.endHooks != nil {
			c.endHooks()
			c.endHooks = nil
		}
		c.stopPhase = 0
		c.ran = true
		x := msg.exit
		t := &corev1.ContainerStateTerminated{
			ExitCode:    x.ExitCode,
			Reason:      x.Reason,
			Message:     x.Message,
			StartedAt:   metav1.NewTime(x.StartedAt),
			FinishedAt:  metav1.NewTime(x.FinishedAt),
			ContainerID: c.status.ContainerID,
		}
		c.status.State = corev1.ContainerState{Terminated: t}
		c.completed = c.init && !c.sidecar && t.ExitCode == 0 && !m.restarting
		c.status.Ready = c.completed
		f := false
		c.status.Started = &f
		if c.ephemeral {
			c.status.Started = nil // the prober manager sets it for init and app containers only
		}
		switch {
		case c.resetKill:
			// Killed and removed by a reset: the kubelet shows it waiting.
			c.resetKill = false
			m.removedByReset(c)
		case !c.ephemeral && !c.changed && m.state == stateRunning && !m.terminal && restartsAllContainers(c.spec, t.ExitCode):
			// ShouldAllContainersRestart: its exit restarts the whole pod.
			m.resettingAll = true
		}
	case msg.err != nil:
		c.starting = false
		c.postStartPending = false
		var se *startError
		if e, ok := msg.err.(*startError); ok {
			se = e
		} else {
			se = &startError{Reason: ReasonStartError, Message: msg.err.Error()}
		}
		if se.Waiting {
			c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: se.Reason, Message: se.Message}}
			if se.Reason == ReasonErrImagePull {
				m.events.add("Warning", "Failed", m.object(c), "Error: %s", se.Reason)
				c.pullImage = se.Image
				m.imageBackoff.next(m.imageKey(c), now)
				c.pullFailedAt = now
				return
			}
			if se.Reason == ReasonErrImageNeverPull {
				// startContainer records the image manager's error by its
				// name: "Error: ErrImageNeverPull".
				m.events.add("Warning", "Failed", m.object(c), "Error: %s", se.Reason)
			} else {
				m.events.add("Warning", "Failed", m.object(c), "Error: %s", se.Message)
			}
			c.retryAt = now.Add(m.backoff.initial)
			return
		}
		m.events.add("Warning", "Failed", m.object(c), "Error: %s", se.Message)
		// The run counts: it was created and could not start (StartError, exit 128).
		if c.ran && !c.counted {
			c.status.RestartCount++
		}
		c.counted = false
		c.ran = true
		if c.status.State.Terminated != nil {
			c.status.LastTerminationState = corev1.ContainerState{Terminated: c.status.State.Terminated}
		}
		c.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: se.Reason, Message: se.Message,
			StartedAt: metav1.NewTime(time.Unix(0, 0).UTC()), FinishedAt: metav1.NewTime(now),
		}}
	default:
		c.starting = false
		c.pullFailedAt, c.pullImage = time.Time{}, ""
		c.handle = msg.handle
		if c.ran && !c.counted {
			c.status.RestartCount++
			if c.status.State.Terminated != nil {
				c.status.LastTerminationState = corev1.ContainerState{Terminated: c.status.State.Terminated}
			}
		}
		c.counted = false
		c.status.ContainerID = "podrun://" + msg.handle.ID()
		c.status.Image, c.status.ImageID = msg.handle.Image()
		c.status.User = msg.handle.User()
		c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
		m.events.add("Normal", "Started", m.object(c), "Started container %s", c.spec.Name)
		crashpoint.Hit("supervisor:started:" + c.spec.Name)
		// Probes run on every container but plain init containers, which
		// may not have any; a plain init container is ready once it has succeeded.
		// An ephemeral container has no probes, and neither started nor ready
		// (the prober manager's UpdatePodStatus sees only the other two lists).
		if (!c.init || c.sidecar) && !c.ephemeral {
			run := c.run
			c.probes = probe.StartContainer(c.spec, m.target(c, msg.handle), m.clock, func(u probe.Update) {
				m.post(message{c: c, run: run, probe: &u})
			})
		}
		if !c.ephemeral {
			m.refreshProbeStatus(c)
		}
		if m.state == stateTerminating {
			if c.probes != nil {
				c.probes.StopLivenessAndStartup()
			}
			m.stop(c)
		}
	}
}

// refreshProbeStatus sets started and ready from the probes' results, as the
// kubelet's prober manager does for a running container.
func (m *machine) refreshProbeStatus(c *ctr) {
	started, ready := true, !c.init || c.sidecar
	if c.probes != nil {
		started, ready = c.probes.Started(), c.probes.Ready()
	}
	c.status.Started = &started
	c.status.Ready = ready && started && (!c.init || c.sidecar)
}

// handleProbe applies a probe result: a failed liveness or startup probe
// restarts the container; readiness and startup feed its status.
func (m *machine) handleProbe(c *ctr, u *probe.Update) {
	if c.handle == nil {
		return
	}
	if (u.Kind == probe.Liveness || u.Kind == probe.Startup) && u.Result == probe.Failure {
		if c.stopping {
			return
		}
		grace := m.gracePeriod
		if g := u.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		// computePodActions: the container is killed and, unless the policy
		// is Never, started again whatever its exit code (restart :=
		// shouldRestartOnFailure(pod); ContainersToStart).
		msg := fmt.Sprintf("Container %s failed %s probe", c.spec.Name, strings.ToLower(string(u.Kind)))
		if restartOnKill(c.spec, &m.pod.Spec) {
			msg += ", will be restarted"
			c.changed = true
		}
		m.events.add("Normal", "Killing", m.object(c), "%s", msg)
		c.syncKill = true
		m.stopContainer(c, grace, false)
		return
	}
	m.refreshProbeStatus(c)
}

// stopContainer stops one container as the kubelet's killContainer does,
// with a grace period of grace: its preStop hook runs for at most the grace
// period and what it took comes off it; a sidecar stopped with its pod
// (ordered) then waits for its turn for at most what is left; then the stop
// signal, and SIGKILL after what is left but never less than 2 seconds
// (minimumGracePeriodInSeconds), even when the hook or the wait used it all.
// A grace period of 0 (delete --force) kills at once. A container already
// stopping only has its deadlines brought forward.
func (m *machine) stopContainer(c *ctr, grace time.Duration, ordered bool) {
	if c.handle == nil {
		return
	}
	now := m.clock.Now()
	if c.stopping {
		m.shortenStop(c, now, grace)
		return
	}
	c.stopping = true
	c.ordered = ordered
	h := c.handle
	if grace <= 0 {
		c.stopPhase, c.phaseAt, c.killAt = stopSignalled, now, now.Add(time.Hour) // killed once
		_ = h.Signal(syscall.SIGKILL)
		return
	}
	c.stopGrace = int64((grace + time.Second - 1) / time.Second) // what is left of the pod's whole seconds
	c.phaseAt = now
	var preStop *corev1.LifecycleHandler
	if c.spec.Lifecycle != nil {
		preStop = c.spec.Lifecycle.PreStop
	}
	if preStop == nil || c.stopGrace <= 0 {
		c.stopPhase = stopTurn
		m.advanceStop(c, now)
		return
	}
	c.stopPhase = stopHook
	target := m.target(c, h)
	run := c.run
	// The container waits for the hook for at most the grace period
	// (advanceStop), but the hook itself is not cut then: the kubelet's
	// executePreStopHook only stops waiting, and an exec hook (ExecSync with
	// no timeout) runs on until the container is killed. Not m.ctx: that
	// ends when the pod's deletion begins, and the hooks are part of it.
	ctx, cancel := context.WithCancel(context.Background())
	c.endHooks = cancel
	go func() {
		msg, err := probe.RunHandler(ctx, preStop, target)
		cancel()
		if err != nil {
			if msg == "" {
				msg = err.Error()
			}
			m.events.add("Warning", "FailedPreStopHook", m.object(c), "%s", msg)
		}
		m.post(message{c: c, run: run, preStopDone: true})
	}()
}

// endPreStop takes the time the preStop hook took, in whole seconds as the
// kubelet counts it, off the container's grace period.
func (m *machine) endPreStop(c *ctr, now time.Time) {
	c.stopGrace -= int64(now.Sub(c.phaseAt) / time.Second)
	c.stopPhase, c.phaseAt = stopTurn, now
}

// advanceStop moves a stopping container on when its phase has ended: a
// preStop hook that ran out of time, a sidecar whose turn has come (or that
// waited out its grace period); then it sends the stop signal.
func (m *machine) advanceStop(c *ctr, now time.Time) {
	if c.stopPhase == stopHook {
		if now.Before(c.phaseAt.Add(time.Duration(c.stopGrace) * time.Second)) {
			return
		}
		m.endPreStop(c, now) // the hook ran out of time; it gets no more
	}
	if c.stopPhase != stopTurn {
		return
	}
	if c.ordered && c.stopGrace > 0 {
		if !m.turnCame(c) && now.Before(c.phaseAt.Add(time.Duration(c.stopGrace)*time.Second)) {
			return
		}
		// waitForTurn's seconds, truncated.
		c.stopGrace -= int64(now.Sub(c.phaseAt) / time.Second)
	}
	grace := time.Duration(max(c.stopGrace, int64(minimumGracePeriod/time.Second))) * time.Second
	if m.killGrace > 0 {
		grace = m.killGrace // killContainer's gracePeriodOverride comes after the minimum
	}
	c.stopPhase, c.phaseAt, c.killAt = stopSignalled, now, now.Add(grace)
	_ = c.handle.Signal(m.runner.StopSignal(c.spec))
}

// turnCame is the kubelet's terminationOrdering for sidecar c: every app
// container has exited, and so has the next sidecar in spec order.
func (m *machine) turnCame(c *ctr) bool {
	for _, a := range m.apps {
		if a.active() {
			return false
		}
	}
	after := false
	for _, x := range m.inits {
		if x == c {
			after = true
			continue
		}
		if after && x.sidecar {
			return !x.active()
		}
	}
	return true
}

// shortenStop applies a shorter grace period to a container already stopping
// (a second delete): its phases end by then, and a container already
// signalled is killed by then, but never sooner than 2 seconds after its
// signal. A grace period of 0 kills at once.
func (m *machine) shortenStop(c *ctr, now time.Time, grace time.Duration) {
	if grace <= 0 {
		c.stopPhase, c.phaseAt, c.killAt = stopSignalled, now, now.Add(time.Hour) // killed once
		_ = c.handle.Signal(syscall.SIGKILL)
		return
	}
	end := now.Add(grace)
	switch c.stopPhase {
	case stopHook, stopTurn:
		if left := end.Sub(c.phaseAt); left < time.Duration(c.stopGrace)*time.Second {
			c.stopGrace = max(int64(left/time.Second), 0)
		}
	case stopSignalled:
		if at := c.phaseAt.Add(minimumGracePeriod); end.Before(at) {
			end = at
		}
		if end.Before(c.killAt) {
			c.killAt = end
		}
	}
}

// stopDeadline is when a stopping container's current phase ends at the latest.
func (c *ctr) stopDeadline() time.Time {
	switch c.stopPhase {
	case stopHook, stopTurn:
		return c.phaseAt.Add(time.Duration(c.stopGrace) * time.Second)
	case stopSignalled:
		return c.killAt
	}
	return time.Time{}
}

// nextWakeup is the earliest time the machine has something to do without a
// message, after synced, the time the last sync began. A time up to synced
// was that sync's to act on; one after it may have passed since, while the
// status was published (a slow disk, a loaded host): it is due at once,
// never dropped, or the pod would wait for its next message (an image pull
// backoff that ended, an init container's turn after a restart).
func (m *machine) nextWakeup(synced time.Time) time.Time {
	var at time.Time
	consider := func(t time.Time) {
		if t.After(synced) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if d := m.pod.Spec.ActiveDeadlineSeconds; d != nil && !m.terminal && m.state == stateRunning {
		consider(m.status.StartTime.Add(time.Duration(*d) * time.Second))
	}
	for _, c := range m.all() {
		if c.stopping {
			consider(c.stopDeadline())
		}
		consider(c.retryAt)
		consider(c.wakeAt)
		if w := c.status.State.Waiting; w != nil && w.Reason == ReasonCrashLoopBackOff {
			if t := c.lastTerminated(); t != nil {
				until, _ := m.backoff.until(m.backoffKey(c), t.FinishedAt.Time)
				consider(until)
			}
		}
	}
	return at
}

// podStatus renders the pod's status in the shapes of the core/v1 API.
func (m *machine) podStatus() corev1.PodStatus {
	s := m.status
	s.InitContainerStatuses = nil
	s.ContainerStatuses = nil
	for _, c := range m.inits {
		st := *c.status.DeepCopy()
		st.Resources, st.AllocatedResources = statusResources(c)
		s.InitContainerStatuses = append(s.InitContainerStatuses, st)
	}
	for _, c := range m.apps {
		st := *c.status.DeepCopy()
		st.Resources, st.AllocatedResources = statusResources(c)
		s.ContainerStatuses = append(s.ContainerStatuses, st)
	}
	s.EphemeralContainerStatuses = nil
	for _, c := range m.ephemerals {
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, *c.status.DeepCopy())
	}
	all := append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	switch {
	case m.terminal && (m.shownNow || m.state == stateDone):
		s.Phase = m.finalPhase
		if m.state == stateDone {
			// Nothing runs any more: no container is ready.
			for i := range s.InitContainerStatuses {
				if isSidecar(m.inits[i].spec) {
					s.InitContainerStatuses[i].Ready = false
				}
			}
		}
	case m.deleting && m.state == stateDone:
		// The kubelet's SyncTerminatingPod: once a deleted pod's containers
		// have stopped, its status is generated as terminal (getPhase with
		// podIsTerminal), so a pod whose containers all exited 0 Succeeded.
		s.Phase = podPhase(m.pod, all, true, m.initialized && hasAnyRegularContainerStarted(m.pod, all))
	default:
		s.Phase = podPhase(m.pod, all, false, m.initialized && hasAnyRegularContainerStarted(m.pod, all))
	}
	if m.state == stateDone {
		terminatePod(m.pod, &s)
		all = append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	}
	if m.terminal && m.shownNow {
		// The kubelet marks the containers of a pod it has failed as not ready.
		for i := range s.ContainerStatuses {
			s.ContainerStatuses[i].Ready = false
		}
	}
	s.Resources, s.AllocatedResources = podStatusResources(m.pod, s.Phase == corev1.PodRunning)
	if m.evicted != "" && s.Phase == corev1.PodFailed {
		s.Reason, s.Message = ReasonEvicted, m.evicted
	}
	s.Conditions = podConditions(m.pod, m.status.Conditions, all, s.Phase, m.sandboxReady, m.resettingAll, metav1.NewTime(m.clock.Now()), m.extConds)
	s.Conditions = append(s.Conditions, m.resizeConds...)
	// The generation of the spec this status is about, on the status and on
	// every condition (PodObservedGenerationTracking: the kubelet's
	// generateAPIPodStatus and podutil.CalculatePodConditionObservedGeneration).
	s.ObservedGeneration = m.pod.Generation
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = m.pod.Generation
	}
	m.status.Conditions = s.Conditions
	m.status.Phase = s.Phase
	return s
}

// run drives the machine until the pod is done. publish is called whenever
// the status may have changed; deletes delivers deletion requests.
func (m *machine) run(publish func(corev1.PodStatus), deletes <-chan time.Duration, restarts <-chan struct{}, updates <-chan *corev1.Pod) {
	timer := m.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		synced := m.clock.Now()
		m.sync()
		publish(m.podStatus())
		if m.state == stateDone {
			return
		}
		wake := m.nextWakeup(synced)
		d := time.Hour
		if !wake.IsZero() {
			d = wake.Sub(m.clock.Now())
			if d <= 0 {
				continue // it came while the status was published
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(d)
		select {
		case <-m.notify:
			for _, msg := range m.take() {
				m.handle(msg)
			}
		case grace := <-deletes:
			m.requestDelete(grace)
		case <-restarts:
			m.requestRestart()
		case p := <-updates:
			m.update(p)
		case <-timer.C():
		}
	}
}

// update takes a pod updated through apply (podspec.DiffPodUpdate said what
// may change): new labels and annotations, a new deadline, and new images. A
// running app container or sidecar whose image changed is killed and started
// again with the new image, as the kubelet's computePodActions does when a
// container's hash changes; a plain init container's new image is only
// recorded (it has run; it runs with it when the pod runs again).
func (m *machine) update(p *corev1.Pod) {
	m.pod.Labels, m.pod.Annotations = p.Labels, p.Annotations
	m.pod.Spec.ActiveDeadlineSeconds = p.Spec.ActiveDeadlineSeconds
	m.pod.Spec.Tolerations = p.Spec.Tolerations
	if m.pod.DeletionTimestamp == nil {
		m.pod.Generation = p.Generation
	}
	apply := func(list []*ctr, specs []corev1.Container) {
		for i, c := range list {
			if i >= len(specs) || specs[i].Image == c.spec.Image {
				continue
			}
			c.spec.Image = specs[i].Image
			if c.init && !c.sidecar {
				continue
			}
			if m.state != stateRunning || !c.active() || c.stopping {
				continue
			}
			c.changed = true
			m.events.add("Normal", "Killing", m.object(c), "Container %s definition changed, will be restarted", c.spec.Name)
			c.syncKill = true
			m.stopContainer(c, m.gracePeriod, false)
		}
	}
	apply(m.inits, p.Spec.InitContainers)
	apply(m.apps, p.Spec.Containers)
	m.pod.Spec.EphemeralContainers = p.Spec.EphemeralContainers
	m.addEphemeral(p.Spec.EphemeralContainers)
	m.extConds = p.Status.Conditions // the update carries the external conditions (Supervise)
	m.resize(p)
}
