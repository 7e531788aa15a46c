package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/podrun/podrun/store"
)

// recordFiles are the files of a pod record whose change can change what
// `get`, `wait` and `apply --wait` see (logs and events are not among them).
// pulls.json lives in a pod's run directory, watched only by a wait that
// shows pull progress (watchPulls).
var recordFiles = map[string]bool{"pod.json": true, "status.json": true, "delete.json": true, "pulls.json": true}

// recheckEvery is how often a watcher looks again without a notification: a
// supervisor that dies writes nothing (the pod turns Unknown), and a lost
// notification must not hang a wait. Waiters test only the supervisors' locks
// then; get -w lists again.
const recheckEvery = 5 * time.Second

// podWatch wakes its user when pod records change: a record created or
// removed under <root>/pods, or a record's spec, status or delete request
// written (the supervisor writes them atomically, by rename). It replaces
// polling: a waiting `apply --wait` sleeps in the kernel between changes.
type podWatch struct {
	w    *fsnotify.Watcher
	dir  string
	wake chan struct{}
	done chan struct{}
}

func newPodWatch(l store.Layout) (*podWatch, error) {
	dir := l.PodsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	pw := &podWatch{w: w, dir: dir, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			_ = w.Add(filepath.Join(dir, e.Name()))
		}
	}
	go pw.loop()
	return pw, nil
}

// watchPulls adds the pod's run directory, where the supervisor writes the
// progress of its image pulls.
func (pw *podWatch) watchPulls(rec *store.Record) {
	_ = pw.w.Add(rec.Paths.RunDir)
}

func (pw *podWatch) loop() {
	defer close(pw.done)
	for {
		select {
		case ev, ok := <-pw.w.Events:
			if !ok {
				return
			}
			parent := filepath.Dir(ev.Name)
			switch {
			case parent == pw.dir:
				// A new pod record. The store writes it whole in a dot-directory
				// and renames it into place: watching the dot-directory would
				// leave inotify's one watch of that inode under the old name,
				// and the record's later changes would not be seen.
				if ev.Has(fsnotify.Create) && !strings.HasPrefix(filepath.Base(ev.Name), ".") {
					_ = pw.w.Add(ev.Name)
				}
			case !recordFiles[filepath.Base(ev.Name)]:
				continue
			}
			pw.signal()
		case _, ok := <-pw.w.Errors:
			if !ok {
				return
			}
			pw.signal() // an overflow: look again
		}
	}
}

func (pw *podWatch) signal() {
	select {
	case pw.wake <- struct{}{}:
	default:
	}
}

// wait returns after a change, after d (when not 0 and shorter than
// recheckEvery), or with ctx's error. Without a change or d, it returns only
// once a supervisor of the given pods is gone (checked every recheckEvery, a
// lock test that reads no record), so that an idle wait costs next to
// nothing (measured: under 50 ms of CPU per minute, see the README).
func (pw *podWatch) wait(ctx context.Context, d time.Duration, watched ...*store.Record) error {
	timed := d > 0
	if !timed || d > recheckEvery {
		d = recheckEvery
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-pw.wake:
			return nil
		case <-t.C:
			if timed || len(watched) == 0 {
				return nil
			}
			for _, r := range watched {
				if store.SupervisorPid(r.Paths) == 0 {
					return nil
				}
			}
			t.Reset(recheckEvery)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (pw *podWatch) close() {
	_ = pw.w.Close()
	<-pw.done
}

// errTimeout marks a wait that ran out of time (exit 124).
var errTimeout = errors.New("timed out")

// deadlineContext is ctx with the wait's timeout (0 = none) and Ctrl-C.
func deadlineContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := interruptContext()
	if timeout <= 0 {
		return ctx, stop
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	return tctx, func() { cancel(); stop() }
}

// interruptContext ends on Ctrl-C or SIGTERM, so that followers and waiters
// stop quietly instead of dying mid-line.
func interruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
