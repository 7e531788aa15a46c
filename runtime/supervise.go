package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime/image"
)

// SuperviseOptions tune the supervisor.
type SuperviseOptions struct {
	// BackoffInitial and BackoffMax are the crash-loop backoff (kubelet: 10s, 300s).
	BackoffInitial, BackoffMax time.Duration
	// PidsLimit is the pod cgroup's pids limit (0 = unlimited).
	PidsLimit int64
	// Ready is written to and closed once the supervisor owns the pod.
	Ready *os.File
	// LogMaxSize and LogMaxFiles rotate container logs (the kubelet's
	// --container-log-max-size and --container-log-max-files); 0 means the
	// kubelet's defaults, 10 MiB and 5.
	LogMaxSize  int64
	LogMaxFiles int
	// SeccompDefault makes RuntimeDefault the seccomp profile of containers
	// that set none (the kubelet's --seccomp-default).
	SeccompDefault bool
}

// plan rebuilds the validated pod plan from the record.
func (r *Record) plan() (*podspec.Plan, error) {
	m := &podspec.Manifest{Source: r.Paths.SpecFile(), Pods: []*corev1.Pod{r.Pod}, ConfigMaps: r.Objects.ConfigMaps, Secrets: r.Objects.Secrets}
	plans, err := m.Plans()
	if err != nil {
		return nil, err
	}
	return plans[0], nil
}

// Supervise owns one pod for its whole life: it builds the sandbox, runs the
// containers as the kubelet would, writes the status, and tears everything
// down when the pod completes or is deleted. It is the body of the hidden
// `podrun supervise` command, run detached in its own session.
func Supervise(l Layout, rec *Record, opts SuperviseOptions) error {
	paths := rec.Paths
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", rec.Key())
	if err := os.MkdirAll(paths.RunDir, 0o700); err != nil {
		return err
	}
	lock := flock.New(paths.LockFile())
	ok, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("locking pod %s: %w", rec.Key(), err)
	}
	if !ok {
		return fmt.Errorf("pod %s already has a supervisor", rec.Key())
	}
	defer lock.Unlock()
	if err := os.WriteFile(paths.PidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	// Container processes are re-parented to us (libcontainer double-forks), so
	// we must be their subreaper to wait for them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	if opts.Ready != nil {
		_, _ = opts.Ready.Write([]byte("ok\n"))
		_ = opts.Ready.Close()
	}
	if opts.BackoffInitial == 0 {
		opts.BackoffInitial = DefaultBackoffInitial
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = DefaultBackoffMax
	}

	clk := clock.RealClock{}
	events := &eventLog{path: paths.EventsFile(), fallback: paths.RunEventsFile(), now: clk.Now}
	pub := &publisher{paths: paths, pod: rec.Pod, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	plan, err := rec.plan()
	if err != nil {
		return fmt.Errorf("pod %s: %w", rec.Key(), err)
	}
	store, err := image.Open(l.ImagesDir())
	if err != nil {
		return err
	}
	bo := newBackoff(clk, opts.BackoffInitial, opts.BackoffMax)
	m := newMachine(ctx, rec.Pod, nil, clk, events, bo)
	m.restore(rec.Pod.Status)
	deletes := make(chan time.Duration, 4)
	restarts := make(chan struct{}, 4)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGUSR1 { // podrun restart
				restarts <- struct{}{}
				continue
			}
			deletes <- deleteGrace(paths, rec.Pod)
			cancel()
		}
	}()

	// The sandbox first; like the kubelet, retry while it cannot be built.
	var sb *sandbox
	for attempt := 0; sb == nil; attempt++ {
		sb, err = setupSandbox(ctx, l, paths, plan, opts.PidsLimit, func(note string) {
			events.add("Normal", "Note", "", "%s", note)
		})
		if err == nil {
			break
		}
		log.Error("creating the pod sandbox", "err", err)
		events.add("Warning", "FailedCreatePodSandBox", "", "Failed to create pod sandbox: %v", err)
		pub.publish(m.podStatus())
		select {
		case grace := <-deletes:
			_ = grace
			pub.publish(m.podStatus())
			return nil
		case <-time.After(min(opts.BackoffInitial<<min(attempt, 5), opts.BackoffMax)):
		}
	}
	events.add("Normal", "SandboxReady", "", "Pod sandbox created (IP %s)", sb.net.PodIP)
	runner := &podRunner{l: l, paths: paths, plan: plan, sb: sb, store: store, events: events, pulls: map[string]*pull{}, opts: opts}
	runner.prepull(ctx)
	m.runner = runner
	m.sandboxReady = true
	m.status.PodIP = sb.net.PodIP
	for _, ip := range sb.net.PodIPs {
		m.status.PodIPs = append(m.status.PodIPs, corev1.PodIP{IP: ip})
	}
	m.status.HostIP = sb.net.HostIP
	if sb.net.HostIP != "" {
		m.status.HostIPs = []corev1.HostIP{{IP: sb.net.HostIP}}
	}
	m.status.QOSClass = plan.QOS

	m.run(pub.publish, deletes, restarts)

	if err := teardownSandbox(l, paths, string(rec.Pod.UID)); err != nil {
		log.Error("tearing down the pod sandbox", "err", err)
		events.add("Warning", "FailedKillPod", "", "error tearing down the pod: %v", err)
	}
	// The addresses are released, but a finished pod keeps reporting them, as
	// the kubelet's status does since 1.31.
	m.sandboxReady = false
	pub.publish(m.podStatus())
	_ = os.Remove(paths.PidFile())
	return nil
}

// deleteGrace is the grace period `podrun delete` asked for, else the pod's.
func deleteGrace(paths PodPaths, pod *corev1.Pod) time.Duration {
	var req DeleteRequest
	if err := readJSON(paths.DeleteFile(), &req); err == nil {
		return time.Duration(req.GracePeriodSeconds) * time.Second
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// publisher writes the pod's status when it changes.
type publisher struct {
	paths PodPaths
	pod   *corev1.Pod
	log   *slog.Logger
	last  []byte
}

func (p *publisher) publish(st corev1.PodStatus) {
	// Conditions' transition times are kept by podConditions; drop nothing here.
	data, err := json.Marshal(st)
	if err != nil || bytes.Equal(data, p.last) {
		return
	}
	if err := writeJSON(p.paths.StatusFile(), st); err != nil {
		p.log.Error("writing pod status", "err", err)
		return
	}
	p.last = data
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

var errTimeout = errors.New("timed out")
