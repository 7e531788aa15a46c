package probe

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Update is a change of a probe's reported result for one container run.
type Update struct {
	Kind   Kind
	Result Result // Unknown, Success or Failure
	// Message is the output of the attempt that made a Failure (the kubelet's
	// "<Kind> probe failed: <Message>"); empty otherwise.
	Message string
	// TerminationGracePeriodSeconds is the probe's own grace period, set on
	// liveness and startup failures when the probe has one: the kubelet kills
	// a container that fails such a probe with it instead of the pod's.
	TerminationGracePeriodSeconds *int64
}

// maxProbeRetries is how often the kubelet retries an attempt that errored.
const maxProbeRetries = 3

// Worker probes one container run with one probe, with the semantics of the
// kubelet's probe workers (pkg/kubelet/prober, here in the container-bound
// form where a restarted container gets new workers):
//   - it first reports the kubelet's initial result: Failure for readiness
//     (not ready until proven ready), Success for liveness (never kill over a
//     probe that has not run), Unknown for startup;
//   - the first attempt runs initialDelaySeconds after the container started
//     (at once if that has passed), then one every periodSeconds;
//   - a result is taken after successThreshold successes or failureThreshold
//     failures in a row; an attempt that could not run is thrown away;
//   - a result is reported only when it differs from the last one reported;
//   - a startup worker ends once it has a result, a liveness worker once it
//     reports Failure (the container is going to be killed); a readiness
//     worker runs, in both directions, until stopped.
type Worker struct {
	kind   Kind
	spec   corev1.Probe
	t      Target
	clk    clock.Clock
	report func(Update)

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	started   bool
	stopped   bool
	reporting bool

	// Owned by the worker's goroutine.
	lastResult Result
	resultRun  int
	reported   Result
	hasResult  bool
}

// NewWorker returns a worker for probe p (which must not be nil) of kind on
// container run t; Start starts it. report receives the updates on the
// worker's goroutine, one at a time.
func NewWorker(kind Kind, p *corev1.Probe, t Target, clk clock.Clock, report func(Update)) *Worker {
	spec := *p
	// The API server's defaults, for a probe that did not come through it.
	if spec.TimeoutSeconds <= 0 {
		spec.TimeoutSeconds = 1
	}
	if spec.PeriodSeconds <= 0 {
		spec.PeriodSeconds = 10
	}
	if spec.SuccessThreshold <= 0 {
		spec.SuccessThreshold = 1
	}
	if spec.FailureThreshold <= 0 {
		spec.FailureThreshold = 3
	}
	if t.StartedAt.IsZero() {
		t.StartedAt = clk.Now()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{kind: kind, spec: spec, t: t, clk: clk, report: report, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Start starts probing in a goroutine of its own. A stopped worker does not
// start again.
func (w *Worker) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.stopped {
		return
	}
	w.started = true
	go w.run()
}

// Stop ends the worker, aborts the attempt in flight and waits for the
// worker's goroutine to end, so that no report starts after Stop returns.
// Called from the report or event callback (or while one runs), it does not
// wait for that callback to return. Stop may be called more than once.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.stopped = true
	wait := w.started && !w.reporting
	w.mu.Unlock()
	w.cancel()
	if wait {
		<-w.done
	}
}

func (w *Worker) run() {
	defer close(w.done)
	w.set(initialValue(w.kind), "")

	if delay := w.t.StartedAt.Add(time.Duration(w.spec.InitialDelaySeconds) * time.Second).Sub(w.clk.Now()); delay > 0 {
		if !w.sleep(delay) {
			return
		}
	}
	// Attempts keep to a grid of periods from the first one, as with the
	// kubelet's ticker: an attempt that overruns a period is followed by
	// another at once, and the next ones stay on the grid.
	period := time.Duration(w.spec.PeriodSeconds) * time.Second
	tick := w.clk.Now()
	for w.doProbe() {
		next := tick.Add(period)
		if d := next.Sub(w.clk.Now()); d > 0 {
			if !w.sleep(d) {
				return
			}
			tick = next
		} else {
			tick = tick.Add(w.clk.Since(tick) / period * period)
		}
	}
}

// sleep waits d on the worker's clock; it reports false when the worker was
// stopped meanwhile.
func (w *Worker) sleep(d time.Duration) bool {
	t := w.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// doProbe makes one attempt and records its result; it reports whether the
// worker goes on.
func (w *Worker) doProbe() bool {
	var (
		result Result
		output string
		err    error
	)
	for range maxProbeRetries {
		if w.ctx.Err() != nil {
			return false // stopped; an attempt in flight was aborted
		}
		if result, output, err = Run(w.ctx, &w.spec, w.t); err == nil {
			break
		}
	}
	if w.ctx.Err() != nil {
		return false
	}
	if err != nil {
		w.event(ReasonUnhealthy, fmt.Sprintf("%s probe errored and resulted in %s state: %s", w.kind, result.probeString(), err))
		return true
	}
	switch result {
	case Success:
	case Warning:
		w.event(ReasonProbeWarning, fmt.Sprintf("%s probe warning: %s", w.kind, output))
		result = Success
	case Failure:
		w.event(ReasonUnhealthy, fmt.Sprintf("%s probe failed: %s", w.kind, output))
	default:
		result = Failure // unknown without an error
	}

	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if (result == Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true // below the threshold: the reported result stands
	}
	w.set(result, output)

	switch {
	case w.kind == Startup:
		return false
	case w.kind == Liveness && result == Failure:
		return false
	}
	return true
}

// initialValue is the kubelet's result for a probe that has not run yet.
func initialValue(kind Kind) Result {
	switch kind {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// set records a result and reports it if it changed, as the kubelet's
// results manager notifies only on change.
func (w *Worker) set(result Result, output string) {
	if w.hasResult && w.reported == result {
		return
	}
	w.reported, w.hasResult = result, true
	u := Update{Kind: w.kind, Result: result}
	if result == Failure {
		u.Message = output
		if w.kind != Readiness {
			u.TerminationGracePeriodSeconds = w.spec.TerminationGracePeriodSeconds
		}
	}
	w.deliver(u)
}

func (w *Worker) deliver(u Update) {
	if w.report != nil {
		w.callback(func() { w.report(u) })
	}
}

func (w *Worker) event(reason, message string) {
	if w.t.Event != nil {
		w.callback(func() { w.t.Event(Event{Kind: w.kind, Reason: reason, Message: message}) })
	}
}

// callback calls the caller's report or event function unless the worker was
// stopped; while it runs, Stop does not wait for the worker, so that these
// functions may call Stop or wait for the goroutine that does.
func (w *Worker) callback(f func()) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.reporting = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.reporting = false
		w.mu.Unlock()
	}()
	f()
}
