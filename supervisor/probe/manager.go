package probe

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Probes are the probe workers of one container run, started and gated as the
// kubelet's container-bound probe manager does: with a startup probe only
// the startup worker runs at first, and the liveness and readiness workers
// start once it has succeeded; without one they start at once.
type Probes struct {
	c      *corev1.Container
	t      Target
	clk    clock.Clock
	report func(Update)

	mu      sync.Mutex
	stopped bool
	workers map[Kind]*Worker
	results map[Kind]Result
}

// StartContainer starts the probes of container c for the run t (t.Container
// is taken to be c). report receives every worker's updates; workers run
// concurrently, so calls may come from several goroutines at once, and report
// must not block for long (sending to a buffered channel is typical).
func StartContainer(c *corev1.Container, t Target, clk clock.Clock, report func(Update)) *Probes {
	t.Container = c
	if t.StartedAt.IsZero() {
		t.StartedAt = clk.Now()
	}
	p := &Probes{c: c, t: t, clk: clk, report: report, workers: map[Kind]*Worker{}, results: map[Kind]Result{}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.StartupProbe != nil {
		p.startLocked(Startup, c.StartupProbe)
		return p
	}
	p.startLocked(Readiness, c.ReadinessProbe)
	p.startLocked(Liveness, c.LivenessProbe)
	return p
}

func (p *Probes) startLocked(kind Kind, spec *corev1.Probe) {
	if spec == nil || p.stopped {
		return
	}
	w := NewWorker(kind, spec, p.t, p.clk, func(u Update) { p.update(u) })
	p.workers[kind] = w
	w.Start()
}

func (p *Probes) update(u Update) {
	p.mu.Lock()
	p.results[u.Kind] = u.Result
	p.mu.Unlock()
	if p.report != nil {
		p.report(u)
	}
	if u.Kind == Startup && u.Result == Success {
		p.mu.Lock()
		// Unless the startup worker was stopped meanwhile (StopLivenessAndStartup).
		if _, ok := p.workers[Startup]; ok {
			p.startLocked(Readiness, p.c.ReadinessProbe)
			p.startLocked(Liveness, p.c.LivenessProbe)
		}
		p.mu.Unlock()
	}
}

// Started is the kubelet's containerStatus.Started for this run while it is
// running: no startup probe, or its last reported result is Success.
func (p *Probes) Started() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startedLocked()
}

func (p *Probes) startedLocked() bool {
	return p.c.StartupProbe == nil || p.results[Startup] == Success
}

// Ready is the kubelet's containerStatus.Ready for this run while it is
// running: started, and no readiness probe or its last result is Success.
func (p *Probes) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startedLocked() && (p.c.ReadinessProbe == nil || p.results[Readiness] == Success)
}

// StopLivenessAndStartup stops the liveness and startup workers, as the
// kubelet does when the pod starts terminating: a container being stopped is
// not killed again by its probes, while readiness goes on being probed until
// the container stops. A startup probe that had not succeeded yet no longer
// starts the other workers.
func (p *Probes) StopLivenessAndStartup() {
	p.mu.Lock()
	var stop []*Worker
	for _, k := range []Kind{Liveness, Startup} {
		if w, ok := p.workers[k]; ok {
			stop = append(stop, w)
			delete(p.workers, k)
		}
	}
	p.mu.Unlock()
	for _, w := range stop {
		w.Stop()
	}
}

// Stop stops every worker of the run (the container stopped or is being
// replaced); no new report starts after Stop returns, though one being
// delivered concurrently may finish. Stop may be called from report.
func (p *Probes) Stop() {
	p.mu.Lock()
	p.stopped = true
	stop := make([]*Worker, 0, len(p.workers))
	for _, w := range p.workers {
		stop = append(stop, w)
	}
	p.mu.Unlock()
	for _, w := range stop {
		w.Stop()
	}
}
