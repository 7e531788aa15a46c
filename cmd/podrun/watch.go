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
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/store"
)

// recordFiles are the files of a pod record whose change can change what
// `get`, `wait` and `apply --wait` see (logs and events are not among them).
// pulls.json lives in a pod's run directory, watched only by a wait that
// shows pull progress (watchPulls).
var recordFiles = map[string]bool{"pod.json": true, "status.json": true, "delete.json": true, "pulls.json": true}

// recheckEvery is how often a watcher looks again without a notification
// when it cannot be told of a supervisor's exit (no pidfd: kernels before
// 5.3, or a supervisor not running yet): a supervisor that dies writes
// nothing (the pod turns Unknown). Waiters test only the supervisors' locks
// then. Lost notifications (an inotify overflow) arrive as watch errors,
// which wake the waiter too.
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
	// exits holds a pidfd watch per watched supervisor (by its pid file), so
	// that a waiter sleeps until a record changes or a supervisor exits,
	// with no timer at all.
	exits    map[string]*exitWatch
	exitWake chan struct{}
	dead     map[string]bool // supervisors found gone once (not watched again)
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
	pw := &podWatch{w: w, dir: dir, wake: make(chan struct{}, 1), done: make(chan struct{}), exits: map[string]*exitWatch{}, exitWake: make(chan struct{}, 1), dead: map[string]bool{}}
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

// wait returns after a change, after d (when above 0; recheckEvery when 0
// and no pods are given; never when below 0), once a supervisor of the given pods exits, or with ctx's error. Each supervisor is watched
// through a pidfd, which turns readable when the process exits, so an idle
// wait has no timer and wakes for nothing. Only a supervisor that cannot be
// watched that way (no pidfd support) is tested every recheckEvery, a lock
// test that reads no record.
func (pw *podWatch) wait(ctx context.Context, d time.Duration, watched ...*store.Record) error {
	poll := false
	for _, r := range watched {
		key := r.Paths.PidFile()
		if x := pw.exits[key]; x != nil {
			select {
			case <-x.exited:
				x.close()
				delete(pw.exits, key)
			default:
				continue
			}
		}
		x, alive, err := openExitWatch(store.SupervisorPid(r.Paths), func() int { return store.SupervisorPid(r.Paths) }, pw.exitWake)
		switch {
		case !alive && !pw.dead[key]:
			// Gone between the caller's look and this one: look again now.
			pw.dead[key] = true
			return nil
		case !alive || err != nil:
			poll = true
		default:
			pw.exits[key] = x
		}
	}
	// d < 0: the caller watches every live supervisor it shows (or none
	// can matter to it): only a change or an exit wakes it.
	untimed := d < 0
	if untimed {
		d = 0
	}
	timed := d > 0
	if len(watched) == 0 && !timed && !untimed {
		// A waiter on no pod in particular (get -w, wait --for=create)
		// looks again every recheckEvery, as before: a pod whose supervisor
		// died turns Unknown without a write.
		d, timed = recheckEvery, true
	}
	if poll && (!timed || d > recheckEvery) {
		d, timed = recheckEvery, false
	}
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-pw.wake:
			return nil
		case <-pw.exitWake:
			return nil
		case <-timer:
			if timed || len(watched) == 0 {
				return nil
			}
			for _, r := range watched {
				if store.SupervisorPid(r.Paths) == 0 {
					return nil
				}
			}
			t := time.NewTimer(recheckEvery)
			defer t.Stop()
			timer = t.C
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// exitWatch tells of a process's exit: its pidfd (pidfd_open(2)) turns
// readable then, which Go's netpoller waits for without a thread or a timer.
type exitWatch struct {
	f      *os.File
	exited chan struct{}
}

// openExitWatch watches pid, which pidNow must still report after the pidfd
// is open (so a pid reused meanwhile is not watched); exit is signalled, and
// the watch's exited channel closed, when the process ends. alive is false
// when pid is 0 or no longer pidNow's; err is set when pidfds are unavailable.
func openExitWatch(pid int, pidNow func() int, exit chan struct{}) (x *exitWatch, alive bool, err error) {
	if pid <= 0 {
		return nil, false, nil
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, false, nil
		}
		return nil, true, err
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	if pidNow() != pid {
		f.Close()
		return nil, false, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, true, err
	}
	x = &exitWatch{f: f, exited: make(chan struct{})}
	go func() {
		rerr := rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return err != nil || n > 0
		})
		if rerr != nil {
			return // closed: the watch ended, not the process
		}
		close(x.exited)
		select {
		case exit <- struct{}{}:
		default:
		}
	}()
	return x, true, nil
}

func (x *exitWatch) close() { _ = x.f.Close() }

func (pw *podWatch) close() {
	for _, x := range pw.exits {
		x.close()
	}
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
