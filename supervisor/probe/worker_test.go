package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one scripted run of a fake exec probe command.
type step struct {
	code int
	out  string
	err  error
	hang bool          // run until killed
	took time.Duration // how long the command runs, on the fake clock
}

var (
	pass = step{code: 0, out: "ok"}
	fail = step{code: 1, out: "not yet"}
)

// fakeContainer runs scripted commands (by their first word; the last step of
// a script repeats) and records when, on the fake clock, each one ran. It
// collects the updates and events that workers report.
type fakeContainer struct {
	clk *clocktesting.FakeClock
	t0  time.Time

	mu      sync.Mutex
	scripts map[string][]step
	calls   map[string][]time.Duration
	updates []Update
	events  []Event
}

func newFakeContainer(scripts map[string][]step) *fakeContainer {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	return &fakeContainer{clk: clocktesting.NewFakeClock(t0), t0: t0, scripts: scripts, calls: map[string][]time.Duration{}}
}

func (f *fakeContainer) exec(ctx context.Context, cmd []string) (int, []byte, error) {
	f.mu.Lock()
	name := cmd[0]
	f.calls[name] = append(f.calls[name], f.clk.Since(f.t0))
	s := f.scripts[name]
	st := pass
	if len(s) > 0 {
		st = s[0]
		if len(s) > 1 {
			f.scripts[name] = s[1:]
		}
	}
	f.mu.Unlock()
	f.clk.Step(st.took)
	if st.hang {
		<-ctx.Done()
		return 137, nil, ctx.Err()
	}
	return st.code, []byte(st.out), st.err
}

func (f *fakeContainer) target() Target {
	return Target{PodIP: "127.0.0.1", Container: &corev1.Container{Name: "app"}, Exec: f.exec, StartedAt: f.t0,
		Event: func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }}
}

func (f *fakeContainer) report(u Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, u)
}

// step moves the fake clock and waits until the workers are idle again.
func (f *fakeContainer) step(d time.Duration) {
	f.clk.Step(d)
	synctest.Wait()
}

func (f *fakeContainer) callTimes(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.calls[name]...)
}

// results lists the reported updates as "Kind=Result" (with ": message" for failures).
func (f *fakeContainer) results() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, u := range f.updates {
		s := fmt.Sprintf("%s=%s", u.Kind, u.Result)
		if u.Message != "" {
			s += ": " + u.Message
		}
		out = append(out, s)
	}
	return out
}

func (f *fakeContainer) eventMessages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Reason+" "+e.Message)
	}
	return out
}

func execProbe(command string, mod func(*corev1.Probe)) *corev1.Probe {
	p := &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{command}}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, 0, len(s))
	for _, n := range s {
		out = append(out, time.Duration(n)*time.Second)
	}
	return out
}

func assertEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

func TestWorkerInitialResults(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		want string
	}{
		{Readiness, "Readiness=Failure"},
		{Liveness, "Liveness=Success"},
		{Startup, "Startup=Unknown"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeContainer(nil)
				w := NewWorker(tc.kind, execProbe("check", func(p *corev1.Probe) { p.InitialDelaySeconds = 60 }), f.target(), f.clk, f.report)
				w.Start()
				defer w.Stop()
				synctest.Wait()
				assertEqual(t, "updates before any probe", f.results(), []string{tc.want})
				assertEqual(t, "probes", len(f.callTimes("check")), 0)
			})
		})
	}
}

func TestWorkerSchedule(t *testing.T) {
	tests := []struct {
		name      string
		delay     int32
		startedAt time.Duration // relative to the worker's creation
		script    []step
		steps     []int // seconds to advance, one after the other
		want      []time.Duration
	}{
		{"no initial delay: at once, then every period", 0, 0, nil, []int{9, 1, 10, 5, 5}, secs(0, 10, 20, 30)},
		{"initial delay from the container start", 25, 0, nil, []int{24, 1, 9, 1}, secs(25, 35)},
		{"initial delay already passed", 25, -30 * time.Second, nil, []int{10}, secs(0, 10)},
		{"initial delay partly passed", 25, -20 * time.Second, nil, []int{4, 1, 10}, secs(5, 15)},
		{"an attempt that overruns its period is followed at once, then on the grid", 0, 0,
			[]step{{took: 25 * time.Second}, pass}, []int{4, 1, 10}, secs(0, 25, 30, 40)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeContainer(map[string][]step{"check": tc.script})
				tgt := f.target()
				tgt.StartedAt = f.t0.Add(tc.startedAt)
				w := NewWorker(Readiness, execProbe("check", func(p *corev1.Probe) { p.InitialDelaySeconds = tc.delay }), tgt, f.clk, f.report)
				w.Start()
				defer w.Stop()
				synctest.Wait()
				for _, s := range tc.steps {
					f.step(time.Duration(s) * time.Second)
				}
				assertEqual(t, "probe times", f.callTimes("check"), tc.want)
			})
		})
	}
}

func TestWorkerThresholds(t *testing.T) {
	tests := []struct {
		name     string
		kind     Kind
		success  int32
		failure  int32
		script   []step
		periods  int
		want     []string
		calls    int
		lastDone bool // the worker ended by itself
	}{
		{
			name: "readiness toggles both ways after its thresholds", kind: Readiness, success: 2, failure: 3,
			script: []step{pass, pass, fail, fail, pass, fail, fail, {code: 7, out: "third"}, pass, pass},
			want: []string{"Readiness=Failure", "Readiness=Success",
				"Readiness=Failure: third", "Readiness=Success"},
			periods: 9, calls: 10,
		},
		{
			name: "readiness reports only changes", kind: Readiness, success: 1, failure: 1,
			script:  []step{pass, pass, pass, fail, fail, pass, pass},
			want:    []string{"Readiness=Failure", "Readiness=Success", "Readiness=Failure: not yet", "Readiness=Success"},
			periods: 6, calls: 7,
		},
		{
			name: "liveness fails after failureThreshold in a row and stops", kind: Liveness, success: 1, failure: 3,
			script:  []step{fail, fail, pass, fail, fail, {code: 1, out: "dead"}},
			want:    []string{"Liveness=Success", "Liveness=Failure: dead"},
			periods: 8, calls: 6, lastDone: true,
		},
		{
			name: "startup succeeds once and stops", kind: Startup, success: 1, failure: 3,
			script:  []step{fail, fail, pass},
			want:    []string{"Startup=Unknown", "Startup=Success"},
			periods: 5, calls: 3, lastDone: true,
		},
		{
			name: "startup fails after failureThreshold and stops", kind: Startup, success: 1, failure: 2,
			script:  []step{fail, {code: 2, out: "gave up"}, pass},
			want:    []string{"Startup=Unknown", "Startup=Failure: gave up"},
			periods: 5, calls: 2, lastDone: true,
		},
		{
			name: "an attempt that cannot run is retried 3 times and thrown away", kind: Liveness, success: 1, failure: 2,
			script:  []step{fail, {err: errors.New("no such process")}, {err: errors.New("no such process")}, {err: errors.New("no such process")}, fail},
			want:    []string{"Liveness=Success", "Liveness=Failure: not yet"},
			periods: 4, calls: 5, lastDone: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeContainer(map[string][]step{"check": tc.script})
				p := execProbe("check", func(p *corev1.Probe) { p.SuccessThreshold, p.FailureThreshold = tc.success, tc.failure })
				w := NewWorker(tc.kind, p, f.target(), f.clk, f.report)
				w.Start()
				defer w.Stop()
				synctest.Wait()
				for range tc.periods {
					f.step(10 * time.Second)
				}
				assertEqual(t, "updates", f.results(), tc.want)
				assertEqual(t, "probe attempts", len(f.callTimes("check")), tc.calls)
				select {
				case <-w.done:
					if !tc.lastDone {
						t.Error("the worker ended")
					}
				default:
					if tc.lastDone {
						t.Error("the worker still runs")
					}
				}
			})
		})
	}
}

func TestWorkerEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"check": {
			{err: errors.New("boom")}, {err: errors.New("boom")}, {err: errors.New("boom")},
			{code: 1, out: "bad"}, pass,
		}})
		w := NewWorker(Readiness, execProbe("check", nil), f.target(), f.clk, f.report)
		w.Start()
		defer w.Stop()
		synctest.Wait()
		f.step(10 * time.Second)
		f.step(10 * time.Second)
		assertEqual(t, "events", f.eventMessages(), []string{
			`Unhealthy Readiness probe errored and resulted in unknown state: running "check" in the container: boom`,
			"Unhealthy Readiness probe failed: bad",
		})
	})
}

func TestWorkerExecTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"check": {{hang: true}}})
		w := NewWorker(Liveness, execProbe("check", func(p *corev1.Probe) { p.FailureThreshold = 1; p.TimeoutSeconds = 2 }), f.target(), f.clk, f.report)
		w.Start()
		defer w.Stop()
		synctest.Wait()
		time.Sleep(2 * time.Second) // the bubble's clock runs the exec timeout
		synctest.Wait()
		assertEqual(t, "updates", f.results(), []string{"Liveness=Success", `Liveness=Failure: command "check" timed out`})
	})
}

func TestWorkerGracePeriod(t *testing.T) {
	grace := int64(7)
	for _, kind := range []Kind{Liveness, Startup, Readiness} {
		t.Run(string(kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeContainer(map[string][]step{"check": {fail}})
				p := execProbe("check", func(p *corev1.Probe) { p.FailureThreshold = 1; p.TerminationGracePeriodSeconds = &grace })
				w := NewWorker(kind, p, f.target(), f.clk, f.report)
				w.Start()
				defer w.Stop()
				synctest.Wait()
				f.mu.Lock()
				defer f.mu.Unlock()
				last := f.updates[len(f.updates)-1]
				if last.Result != Failure {
					t.Fatalf("last update %+v", last)
				}
				got := last.TerminationGracePeriodSeconds
				if kind == Readiness && got != nil {
					t.Errorf("readiness failure carries a grace period %d", *got)
				}
				if kind != Readiness && (got == nil || *got != grace) {
					t.Errorf("grace period %v, want %d", got, grace)
				}
			})
		})
	}
}

func TestWorkerStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"check": {pass, {hang: true}}})
		w := NewWorker(Readiness, execProbe("check", func(p *corev1.Probe) { p.TimeoutSeconds = 100 }), f.target(), f.clk, f.report)
		w.Start()
		synctest.Wait()
		f.step(10 * time.Second) // the second attempt hangs
		assertEqual(t, "attempts", len(f.callTimes("check")), 2)
		w.Stop() // aborts it and waits for the worker to end
		select {
		case <-w.done:
		default:
			t.Fatal("Stop returned before the worker ended")
		}
		f.step(time.Minute)
		assertEqual(t, "updates", f.results(), []string{"Readiness=Failure", "Readiness=Success"})
		assertEqual(t, "attempts", len(f.callTimes("check")), 2)
		assertEqual(t, "events", len(f.eventMessages()), 0) // the aborted attempt is not an error
		w.Stop()                                            // again
		w.Start()                                           // a stopped worker does not start again
		synctest.Wait()
		assertEqual(t, "attempts after Start", len(f.callTimes("check")), 2)
	})
}

// Stop may be called from the report callback (the supervisor kills the
// container when liveness fails).
func TestWorkerStopFromReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeContainer(map[string][]step{"check": {fail}})
		var w *Worker
		w = NewWorker(Readiness, execProbe("check", func(p *corev1.Probe) { p.FailureThreshold = 1 }), f.target(), f.clk, func(u Update) {
			f.report(u)
			w.Stop()
		})
		w.Start()
		synctest.Wait()
		<-w.done
		f.step(time.Minute)
		assertEqual(t, "updates", f.results(), []string{"Readiness=Failure"})
		assertEqual(t, "attempts", len(f.callTimes("check")), 0)
	})
}

// A redirect to another host is a success with a ProbeWarning event.
func TestWorkerHTTPWarning(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://localhost:1/", http.StatusFound))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	f := newFakeContainer(nil)
	got := make(chan Update, 4)
	tgt := f.target()
	tgt.PodIP = host
	w := NewWorker(Readiness, httpProbe("/", intstr.FromInt32(int32(port))), tgt, f.clk, func(u Update) { got <- u })
	w.Start()
	defer w.Stop()
	for _, want := range []Result{Failure, Success} {
		select {
		case u := <-got:
			if u.Result != want {
				t.Fatalf("update %+v, want %v", u, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v update", want)
		}
	}
	assertEqual(t, "events", f.eventMessages(),
		[]string{`ProbeWarning Readiness probe warning: Probe terminated redirects, Response body: <a href="http://localhost:1/">Found</a>.` + "\n\n"})
}
