package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/internal/crashpoint"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/volumes"
)

// SuperviseOptions tune the supervisor.
type SuperviseOptions struct {
	// Ready is written to and closed once the supervisor owns the pod.
	Ready *os.File
}

// Supervise owns one pod for its whole life: it builds the sandbox, runs the
// containers as the kubelet would, writes the status, and tears everything
// down when the pod completes or is deleted. It is the body of the hidden
// `podrun supervise UID` command, run detached in its own session; the pod's
// settings (cgroup parent, network, backoff, pids limit) come from its record.
func Supervise(l store.Layout, rec *store.Record, opts SuperviseOptions) error {
	if rec.Broken != nil {
		return fmt.Errorf("pod %s: %w", rec.Key(), rec.Broken)
	}
	l = rec.PodLayout(l)
	set := rec.Settings
	backoffInitial, backoffMax := set.BackoffInitial.Duration, set.BackoffMax.Duration
	paths := rec.Paths
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", rec.Key())
	if err := os.MkdirAll(paths.RunDir, 0o700); err != nil {
		return err
	}
	// The lock only keeps one supervisor per pod; liveness is the pid and its
	// start time (store.SupervisorPid).
	lock := flock.New(paths.LockFile())
	ok, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("locking pod %s: %w", rec.Key(), err)
	}
	if !ok {
		return fmt.Errorf("pod %s already has a supervisor", rec.Key())
	}
	defer lock.Unlock()
	crashpoint.Hit("supervisor:locked")
	// Requests made of an earlier supervisor are void.
	_ = os.Remove(paths.RequestFile())
	if err := runtime.ExeSealingProblem(paths.RunDir); err != nil {
		log.Warn("exe sealing", "err", err)
	}
	// Container processes are re-parented to us (libcontainer double-forks), so
	// we must be their subreaper to wait for them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	if backoffInitial == 0 {
		backoffInitial = DefaultBackoffInitial
	}
	if backoffMax == 0 {
		backoffMax = DefaultBackoffMax
	}

	clk := clock.RealClock{}
	events := &eventLog{path: paths.EventsFile(), fallback: paths.RunEventsFile(), now: clk.Now}
	pub := &publisher{paths: paths, pod: rec.Pod, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	plan, err := rec.Plan()
	if err != nil {
		return fmt.Errorf("pod %s: %w", rec.Key(), err)
	}
	images, err := image.Open(l.ImagesDir())
	if err != nil {
		return err
	}
	bo := newBackoff(clk, backoffInitial, backoffMax)
	m := newMachine(ctx, rec.Pod, nil, clk, events, bo)
	m.extConds = store.ExternalConditions(paths)
	// A new supervisor (a new pod, or one run again after its supervisor was
	// lost) reports nothing ready until its containers say so.
	m.restore(restartingStatus(rec.Pod.Status))
	pub.publish(m.podStatus())
	if err := store.WriteSupervisor(paths); err != nil {
		return err
	}
	crashpoint.Hit("supervisor:recorded")
	if opts.Ready != nil {
		_, _ = opts.Ready.Write([]byte("ok\n"))
		_ = opts.Ready.Close()
	}
	crashpoint.Hit("supervisor:ready")
	deletes := make(chan time.Duration, 4)
	restarts := make(chan struct{}, 4)
	// The latest spec updated through apply (update in apply.go).
	updates := make(chan *corev1.Pod, 1)
	// A changed spec also refreshes the downwardAPI volumes (labels, annotations).
	metaUpdates := make(chan struct{}, 1)
	go func() {
		restartsSeen, updatesSeen, deleting := 0, 0, false
		for sig := range sigs {
			grace, del := deleteGrace(rec.Pod), sig != syscall.SIGUSR1
			if sig == syscall.SIGUSR1 { // the doorbell: read the request
				req := readRequest(paths)
				if req.Restart > restartsSeen {
					restartsSeen = req.Restart
					restarts <- struct{}{}
				}
				if req.Update > updatesSeen {
					updatesSeen = req.Update
					var p corev1.Pod
					if err := store.ReadJSON(paths.SpecFile(), &p); err == nil {
						p.Status = corev1.PodStatus{Conditions: store.ExternalConditions(paths)}
						select { // the latest update replaces one not yet taken
						case <-updates:
						default:
						}
						updates <- &p
						select {
						case metaUpdates <- struct{}{}:
						default:
						}
					}
				}
				if req.Delete != nil {
					del, grace = true, time.Duration(req.Delete.GracePeriodSeconds)*time.Second
				}
			}
			if del && !deleting {
				deleting = true
				deletes <- grace
				cancel()
			} else if del {
				deletes <- grace // a shorter grace period shortens the wait
			}
		}
	}()

	// A pod whose claims are missing or being deleted is not scheduled, as
	// the scheduler's VolumeBinding plugin decides: it stays Pending until
	// they exist.
	if !waitForClaims(l, rec.Pod, plan, events, pub, deletes) {
		return nil
	}
	pub.publish(m.podStatus())

	// The sandbox first; like the kubelet, retry while it cannot be built.
	// A volume that cannot be set up (a missing ConfigMap or key, say) is
	// the volume manager's FailedMount, retried with its backoff
	// (nestedpendingoperations: 500ms doubling up to 2m2s) against the
	// objects stored by then, so a ConfigMap created after the pod lets it
	// start. The first containers are created ahead while the network is
	// connected: they join the namespace and wait, running nothing, until
	// the sandbox is ready and their turn comes.
	var sb *runtime.Sandbox
	var runner *runtime.PodRunner
	mountAttempt := 0
	for attempt := 0; ; attempt++ {
		withStoredObjects(l, plan)
		sb, err = runtime.SetupSandbox(ctx, l, paths, plan, set.PidsLimit, func(note string) {
			events.add("Normal", "Note", "", "%s", note)
		})
		if err == nil {
			runner = runtime.NewPodRunner(l, paths, plan, sb, images, events.store(), rec.Settings)
			runner.StartAhead(ctx) // the images present; Prepull pulls the rest
			if err = sb.ConnectNetwork(ctx); err == nil {
				break
			}
			runner.DiscardAhead()
			if terr := runtime.TeardownSandbox(l, paths, string(rec.Pod.UID)); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		wait := min(backoffInitial<<min(attempt, 5), backoffMax)
		if verr := (*volumes.SetupError)(nil); errors.As(err, &verr) {
			log.Error("setting up the pod's volumes", "err", err)
			events.add("Warning", "FailedMount", "", "MountVolume.SetUp failed for volume %q : %v", verr.Volume, verr.Err)
			wait = min(mountRetryInitial<<min(mountAttempt, 8), mountRetryMax)
			mountAttempt++
			attempt--
		} else {
			log.Error("creating the pod sandbox", "err", err)
			events.add("Warning", "FailedCreatePodSandBox", "", "Failed to create pod sandbox: %v", err)
		}
		pub.publish(m.podStatus())
		select {
		case grace := <-deletes:
			_ = grace
			pub.publish(m.podStatus())
			return nil
		case <-time.After(wait):
		}
	}
	crashpoint.Hit("supervisor:sandbox-ready")
	events.add("Normal", "SandboxReady", "", "Pod sandbox created (IP %s)", sb.Network().PodIP)
	runner.Prepull(ctx)
	m.runner = runner
	m.sandboxReady = true
	m.status.PodIP = sb.Network().PodIP
	for _, ip := range sb.Network().PodIPs {
		m.status.PodIPs = append(m.status.PodIPs, corev1.PodIP{IP: ip})
	}
	m.status.HostIP = sb.Network().HostIP
	if sb.Network().HostIP != "" {
		m.status.HostIPs = []corev1.HostIP{{IP: sb.Network().HostIP}}
	}
	m.status.QOSClass = plan.QOS

	stopSync := make(chan struct{})
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		syncVolumes(l, sb, paths, plan, set.SyncFrequency.Duration, metaUpdates, stopSync, events, log)
	}()
	if limits, ok := localStorageLimits(plan.Pod, sb.Volumes(), paths); ok {
		go monitorLocalStorage(limits, m, stopSync)
	}
	m.run(pub.publish, deletes, restarts, updates)
	runner.DiscardAhead()
	close(stopSync)
	<-synced
	runner.WaitReleased() // containers' releases still in flight
	crashpoint.Hit("supervisor:containers-stopped")

	if err := runtime.TeardownSandbox(l, paths, string(rec.Pod.UID)); err != nil {
		log.Error("tearing down the pod sandbox", "err", err)
		events.add("Warning", "FailedKillPod", "", "error tearing down the pod: %v", err)
	}
	// The addresses are released, but a finished pod keeps reporting them, as
	// the kubelet's status does since 1.31.
	crashpoint.Hit("supervisor:torn-down")
	m.sandboxReady = false
	pub.publish(m.podStatus())
	_ = os.Remove(paths.PidFile())
	return nil
}

// restartingStatus is a recorded status as a new supervisor starts from it:
// Pending, and nothing ready (`apply --wait` must not take a lost run's
// readiness for the new one's).
func restartingStatus(st corev1.PodStatus) corev1.PodStatus {
	st = *st.DeepCopy()
	for i := range st.Conditions {
		if t := st.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			st.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			list[i].Ready = false
		}
	}
	if !store.IsTerminal(&corev1.Pod{Status: st}) {
		st.Phase, st.Reason, st.Message = corev1.PodPending, "", ""
	}
	return st
}

// readRequest is the supervisor's end of the request channel (client.go: request).
func readRequest(paths store.PodPaths) store.Request {
	var req store.Request
	_ = store.ReadJSON(paths.RequestFile(), &req)
	return req
}

// deleteGrace is the pod's grace period, for a delete by signal alone.
func deleteGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// syncVolumes refreshes the pod's configMap, secret, downwardAPI and
// projected volumes every period, as the kubelet's volume manager remounts
// them on each pod sync: changed data is swapped in atomically (the ..data
// link), so the files of a running pod follow its ConfigMaps and Secrets;
// environment variables and subPath mounts keep the values they started with.
// A pod update (kick) refreshes them at once with the stored pod's labels and
// annotations, as the kubelet marks the pod's volumes for remount on an update
// (volumemanager.WaitForAttachAndMount → MarkRemountRequired) and the
// downwardAPI mounter writes the new metadata (downwardapi.go: SetUpAt →
// CollectData).
func syncVolumes(l store.Layout, sb *runtime.Sandbox, paths store.PodPaths, plan *podspec.Plan, period time.Duration, kick <-chan struct{}, stop <-chan struct{}, events *eventLog, log *slog.Logger) {
	if period <= 0 {
		period = store.DefaultSyncFrequency
	}
	last := objectsHash(plan.Pod, plan.ConfigMaps, plan.Secrets)
	lastFailure := ""
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-kick:
		}
		cur := withStoredMeta(plan, paths)
		// What the store holds now, as the kubelet's managers read the API
		// server: a deleted optional object empties its files (the plugins'
		// IsNotFound && optional), a deleted required one fails its volume,
		// which keeps its files as they were (RefreshVolumes goes on with
		// the others).
		cms, secrets := l.ConfigMaps(plan.Pod.Namespace), l.Secrets(plan.Pod.Namespace)
		h := objectsHash(cur.Pod, cms, secrets)
		if h == last {
			continue
		}
		if err := sb.RefreshVolumes(paths, cur, cms, secrets); err != nil {
			log.Error("refreshing configMap, secret and downwardAPI volumes", "err", err)
			// The volume manager's FailedMount event for each failing
			// volume, once for as long as the failure stays the same (the
			// kubelet's event recorder folds the repeats into a count).
			if msg := err.Error(); msg != lastFailure {
				lastFailure = msg
				for _, verr := range setupErrors(err) {
					events.add("Warning", "FailedMount", "", "MountVolume.SetUp failed for volume %q : %v", verr.Volume, verr.Err)
				}
			}
			continue
		}
		last, lastFailure = h, ""
	}
}

// setupErrors lists the volumes.SetupErrors in err (errors.Join's list).
func setupErrors(err error) []*volumes.SetupError {
	var out []*volumes.SetupError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, setupErrors(e)...)
		}
		return out
	}
	if verr := (*volumes.SetupError)(nil); errors.As(err, &verr) {
		out = append(out, verr)
	}
	return out
}

// The volume manager's retry of a failed mount (nestedpendingoperations'
// exponential backoff: initialDurationBeforeRetry, maxDurationBeforeRetry).
const (
	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 2*time.Minute + 2*time.Second
)

// withStoredObjects brings the plan's ConfigMaps and Secrets up to what the
// store holds before the pod's sandbox is built, as the kubelet reads them
// when it mounts the volumes and makes the environment: an object stored
// after the pod was applied is seen, a changed one is read anew. Objects the
// store does not hold keep the plan's copy.
func withStoredObjects(l store.Layout, plan *podspec.Plan) {
	for name, cm := range l.ConfigMaps(plan.Pod.Namespace) {
		plan.ConfigMaps[name] = cm
	}
	for name, s := range l.Secrets(plan.Pod.Namespace) {
		plan.Secrets[name] = s
	}
}

// withStoredMeta is plan with the labels and annotations of the stored pod
// (an apply may have changed them since the pod started); plan itself is
// not changed.
func withStoredMeta(plan *podspec.Plan, paths store.PodPaths) *podspec.Plan {
	var stored corev1.Pod
	if err := store.ReadJSON(paths.SpecFile(), &stored); err != nil || stored.UID != plan.Pod.UID {
		return plan
	}
	pod := *plan.Pod
	pod.Labels, pod.Annotations = stored.Labels, stored.Annotations
	cur := *plan
	cur.Pod = &pod
	return &cur
}

func objectsHash(pod *corev1.Pod, cms map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) string {
	data, _ := json.Marshal([]any{pod.Labels, pod.Annotations, cms, secrets})
	return string(data)
}

// publisher writes the pod's status when it changes.
type publisher struct {
	paths store.PodPaths
	pod   *corev1.Pod
	log   *slog.Logger
	last  []byte
	// started: every app container had started at the last publish.
	started bool
}

func (p *publisher) publish(st corev1.PodStatus) {
	// Conditions' transition times are kept by podConditions; drop nothing here.
	data, err := json.Marshal(st)
	if err != nil || bytes.Equal(data, p.last) {
		return
	}
	if err := store.ReplaceFile(p.paths.StatusFile(), data); err != nil {
		p.log.Error("writing pod status", "err", err)
		return
	}
	p.last = data
	// Once the pod has started, what the start touched is given back
	// (releaseMemory): a supervisor spends its life waiting. Not at once:
	// a short-lived pod's exit, and the next pods' starts, come first.
	if s := started(st); s != p.started {
		p.started = s
		if s {
			time.AfterFunc(releaseDelay, releaseMemory)
		}
	}
}

// initialStatus is the status apply records before the supervisor runs.
func initialStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	m := newMachine(context.Background(), pod, nil, clock.RealClock{}, &eventLog{}, nil)
	st := m.podStatus()
	st.StartTime = nil
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = now
	}
	return st
}

// claimsProblem is why the scheduler would not schedule the pod for its
// claims (volumebinding's podHasPVCs), "" when every claim exists.
func claimsProblem(l store.Layout, pod *corev1.Pod) string {
	for _, name := range store.PodClaims(pod) {
		c, err := l.Claim(pod.Namespace, name)
		if err != nil {
			return err.Error()
		}
		if c.DeletionTimestamp != nil {
			return fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		}
	}
	return ""
}

// claimsPoll is how often an unschedulable pod looks for its claims again.
const claimsPoll = time.Second

// waitForClaims keeps the pod Pending and unscheduled, with the scheduler's
// condition and FailedScheduling event, while claimsProblem has a reason; it
// returns false when the pod is deleted meanwhile.
func waitForClaims(l store.Layout, pod *corev1.Pod, plan *podspec.Plan, events *eventLog, pub *publisher, deletes <-chan time.Duration) bool {
	last := ""
	for {
		problem := claimsProblem(l, pod)
		if problem == "" {
			return true
		}
		if problem != last {
			// The scheduler's FitError for a PreFilter rejection, then preemption's.
			msg := fmt.Sprintf("0/1 nodes are available: %s. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.", problem)
			cond := condition(corev1.PodScheduled, false, corev1.PodReasonUnschedulable, msg)
			cond.LastTransitionTime = metav1.Now()
			pub.publish(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{cond}, QOSClass: plan.QOS})
			events.add("Warning", "FailedScheduling", "", "%s", msg)
			last = problem
		}
		select {
		case <-deletes:
			return false
		case <-time.After(claimsPoll):
		}
	}
}
