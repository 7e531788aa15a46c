package probe

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// container returns a container whose probes run the commands "startup",
// "live" and "ready" (nil mods leave a probe out).
func probedContainer(startup, live, ready func(*corev1.Probe)) *corev1.Container {
	c := &corev1.Container{Name: "app"}
	if startup != nil {
		c.StartupProbe = execProbe("startup", startup)
	}
	if live != nil {
		c.LivenessProbe = execProbe("live", live)
	}
	if ready != nil {
		c.ReadinessProbe = execProbe("ready", ready)
	}
	return c
}

func defaults(*corev1.Probe) {}

func TestStartContainerStartupGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"startup": {fail, fail, pass}, "ready": {pass}, "live": {pass}})
		c := probedContainer(defaults, func(p *corev1.Probe) { p.InitialDelaySeconds = 5 }, defaults)
		p := StartContainer(c, f.target(), f.clk, f.report)
		defer p.Stop()
		synctest.Wait()
		f.step(10 * time.Second)
		// Two startup failures: liveness and readiness have not run.
		assertEqual(t, "updates", f.results(), []string{"Startup=Unknown"})
		assertEqual(t, "liveness attempts", len(f.callTimes("live")), 0)
		assertEqual(t, "readiness attempts", len(f.callTimes("ready")), 0)
		assertEqual(t, "started", p.Started(), false)
		assertEqual(t, "ready", p.Ready(), false)

		f.step(10 * time.Second) // startup succeeds at 20s
		assertEqual(t, "started", p.Started(), true)
		// Readiness starts at once; liveness once its initial delay has passed (it has).
		assertEqual(t, "readiness attempts", f.callTimes("ready"), secs(20))
		assertEqual(t, "liveness attempts", f.callTimes("live"), secs(20))
		assertEqual(t, "ready", p.Ready(), true)
		f.step(10 * time.Second)
		assertEqual(t, "startup attempts", f.callTimes("startup"), secs(0, 10, 20))
		assertEqual(t, "readiness attempts", f.callTimes("ready"), secs(20, 30))
		assertEqual(t, "liveness attempts", f.callTimes("live"), secs(20, 30))

		got := f.results()
		assertEqual(t, "first updates", got[:2], []string{"Startup=Unknown", "Startup=Success"})
		// The liveness and readiness workers report in parallel: their initial values and the readiness success.
		rest := map[string]int{}
		for _, u := range got[2:] {
			rest[u]++
		}
		assertEqual(t, "later updates", rest, map[string]int{"Liveness=Success": 1, "Readiness=Failure": 1, "Readiness=Success": 1})
	})
}

func TestStartContainerStartupFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"startup": {fail}})
		c := probedContainer(func(p *corev1.Probe) { p.FailureThreshold = 2 }, defaults, defaults)
		p := StartContainer(c, f.target(), f.clk, f.report)
		defer p.Stop()
		synctest.Wait()
		for range 5 {
			f.step(10 * time.Second)
		}
		assertEqual(t, "updates", f.results(), []string{"Startup=Unknown", "Startup=Failure: not yet"})
		assertEqual(t, "startup attempts", len(f.callTimes("startup")), 2)
		assertEqual(t, "liveness attempts", len(f.callTimes("live")), 0)
		assertEqual(t, "readiness attempts", len(f.callTimes("ready")), 0)
		assertEqual(t, "started", p.Started(), false)
	})
}

func TestStartContainerWithoutStartupProbe(t *testing.T) {
	tests := []struct {
		name             string
		live, ready      func(*corev1.Probe)
		started, isReady bool
	}{
		{"no probes", nil, nil, true, true},
		{"liveness only", defaults, nil, true, true},
		{"readiness, not run yet", nil, func(p *corev1.Probe) { p.InitialDelaySeconds = 30 }, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeContainer(nil)
				p := StartContainer(probedContainer(nil, tc.live, tc.ready), f.target(), f.clk, f.report)
				defer p.Stop()
				synctest.Wait()
				assertEqual(t, "started", p.Started(), tc.started)
				assertEqual(t, "ready", p.Ready(), tc.isReady)
			})
		})
	}
}

func TestStopLivenessAndStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"ready": {pass, fail}, "live": {pass, fail}})
		c := probedContainer(nil, func(p *corev1.Probe) { p.FailureThreshold = 1 }, func(p *corev1.Probe) { p.FailureThreshold = 1 })
		p := StartContainer(c, f.target(), f.clk, f.report)
		defer p.Stop()
		synctest.Wait()
		p.StopLivenessAndStartup() // the pod is terminating
		f.step(10 * time.Second)
		f.step(10 * time.Second)
		assertEqual(t, "liveness attempts", len(f.callTimes("live")), 1)
		assertEqual(t, "readiness attempts", len(f.callTimes("ready")), 3)
		for _, u := range f.results() {
			if u == "Liveness=Failure: not yet" {
				t.Error("liveness failed after the pod started terminating")
			}
		}
		assertEqual(t, "ready", p.Ready(), false) // readiness went on and failed
	})
}

// Terminating while the startup probe runs: liveness and readiness never start.
func TestStopLivenessAndStartupBeforeStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"startup": {fail, pass}})
		p := StartContainer(probedContainer(defaults, defaults, defaults), f.target(), f.clk, f.report)
		defer p.Stop()
		synctest.Wait()
		p.StopLivenessAndStartup()
		f.step(time.Minute)
		assertEqual(t, "updates", f.results(), []string{"Startup=Unknown"})
		assertEqual(t, "attempts", len(f.callTimes("startup"))+len(f.callTimes("live"))+len(f.callTimes("ready")), 1)
	})
}

func TestProbesStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"ready": {pass, fail}})
		p := StartContainer(probedContainer(nil, defaults, func(p *corev1.Probe) { p.FailureThreshold = 1 }), f.target(), f.clk, f.report)
		synctest.Wait()
		before := f.results()
		p.Stop()
		f.step(time.Minute)
		assertEqual(t, "updates after Stop", f.results(), before)
		assertEqual(t, "liveness attempts", len(f.callTimes("live")), 1)
		assertEqual(t, "readiness attempts", len(f.callTimes("ready")), 1)
		p.Stop() // again
	})
}

// The supervisor stops a container's probes from the report of its liveness failure.
func TestProbesStopFromReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"live": {fail}})
		// Reports may come before StartContainer has returned.
		var p atomic.Pointer[Probes]
		started := make(chan struct{})
		p.Store(StartContainer(probedContainer(nil, func(p *corev1.Probe) { p.FailureThreshold = 1 }, defaults), f.target(), f.clk, func(u Update) {
			f.report(u)
			if u.Kind == Liveness && u.Result == Failure {
				<-started
				p.Load().Stop()
			}
		}))
		close(started)
		synctest.Wait()
		f.step(time.Minute)
		assertEqual(t, "liveness attempts", len(f.callTimes("live")), 1)
		if n := len(f.callTimes("ready")); n > 1 {
			t.Errorf("readiness ran %d times after the probes were stopped", n)
		}
	})
}
