// Package ownerproc is the process kit of podrun's on-demand helper
// processes (the pod supervisors, the services owner, the workload
// controllers): start one detached in its own session with a readiness pipe
// (Spawn), start it only when needed and none is alive, under a start lock
// (Ensure), hold its lock and record it once it serves (Hold, Serving), and
// exit only when it is still idle under that start lock (ExitIfIdle), so a
// command recording a new object either is seen by the exiting process or
// finds none and starts another.
package ownerproc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/store"
)

// Spawn starts exe with args detached in its own session, stdout and stderr
// appended to logPath, and waits until it writes "ok" on the readiness pipe
// it gets as fd 3. what names it in errors ("the services owner").
func Spawn(exe string, args []string, logPath, what string, timeout time.Duration, started ...func()) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	p, err := start(exe, args, logf, what)
	if err != nil {
		return err
	}
	for _, f := range started {
		f()
	}
	return p.waitReady(logPath, timeout)
}

// spawned is a detached process started by start, and the read end of its
// readiness pipe.
type spawned struct {
	cmd    *exec.Cmd
	ready  *os.File
	exited chan error
	what   string
}

// start starts exe detached in its own session with stdout and stderr on
// out, the write end of a readiness pipe as fd 3 and extra after it.
func start(exe string, args []string, out *os.File, what string, extra ...*os.File) (*spawned, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = append([]*os.File{w}, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	p := &spawned{cmd: cmd, ready: r, exited: make(chan error, 1), what: what}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// waitReady waits until the process writes "ok" on its readiness pipe; an
// error quotes the end of its log.
func (p *spawned) waitReady(logPath string, timeout time.Duration) error {
	defer p.ready.Close()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(p.ready, 64))
		got <- string(b)
	}()
	select {
	case s := <-got:
		if strings.HasPrefix(s, "ok") {
			return nil
		}
		err := <-p.exited
		return fmt.Errorf("%s exited (%v)%s", p.what, err, logSaid(logPath))
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not start within %s%s", p.what, timeout, logSaid(logPath))
	}
}

// logSaid is what an error quotes of a process's log: its end, or that it
// wrote nothing there.
func logSaid(logPath string) string {
	if tail := Tail(logPath, 2048); tail != "" {
		return ": " + tail
	}
	return " and wrote nothing to its log " + logPath
}

// Standby is a helper process started before the command knows its work, so
// that its start (the runtime's and packages' initialisation, a page fault at
// a time) runs on another CPU while the command is still validating and
// recording; Give hands it the work, Discard lets it exit unused.
type Standby struct {
	p    *spawned
	work *os.File // the write end of the pipe the process reads its work from (fd 4)
}

// SpawnStandby starts exe with args detached, as Spawn does, with stdout and
// stderr on /dev/null until it is given its log (StandbyWork), and returns
// without waiting for it.
func SpawnStandby(exe string, args []string, what string) (*Standby, error) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p, err := start(exe, args, null, what, r)
	if err != nil {
		w.Close()
		return nil, err
	}
	return &Standby{p: p, work: w}, nil
}

// Give hands the process its work (one line, and the log it appends its
// output to from then on) and waits until it is ready, as Spawn does. It
// reports false, having done nothing, when the process can no longer take
// work (it was given work before, or it died): the caller spawns another.
func (s *Standby) Give(work, logPath string, timeout time.Duration, started ...func()) (bool, error) {
	if s == nil || s.work == nil {
		return false, nil
	}
	w := s.work
	s.work = nil
	_, err := w.WriteString(work + "\t" + logPath + "\n")
	w.Close()
	if err != nil {
		s.p.ready.Close()
		return false, nil
	}
	for _, f := range started {
		f()
	}
	return true, s.p.waitReady(logPath, timeout)
}

// Discard lets a process that was given no work exit (it reads the end of
// its work pipe) and waits for it, so that the command leaves no process of
// its own behind.
func (s *Standby) Discard() {
	if s != nil && s.work != nil {
		s.work.Close()
		s.p.ready.Close()
		s.work = nil
		select {
		case <-s.p.exited:
		case <-time.After(5 * time.Second):
		}
	}
}

// StandbyWork is the process side of Standby: it waits for its work on fd 4
// and appends its stdout and stderr to the log it is given from then on. ok
// is false when the command that started it gave it nothing.
func StandbyWork() (work string, ok bool, err error) {
	f := os.NewFile(4, "work")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", false, err
	}
	line, complete := strings.CutSuffix(string(b), "\n")
	if !complete {
		return "", false, nil // the command ended without giving any
	}
	work, logPath, found := strings.Cut(line, "\t")
	if !found {
		return "", false, fmt.Errorf("standby: malformed work %q", line)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", false, err
	}
	defer logf.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(logf.Fd()), fd, 0); err != nil {
			return "", false, fmt.Errorf("standby: output to %s: %w", logPath, err)
		}
	}
	return work, true, nil
}

// Ready tells the command that spawned this process that it serves.
func Ready(ready *os.File) {
	if ready != nil {
		_, _ = ready.Write([]byte("ok\n"))
		_ = ready.Close()
	}
}

// Tail is the last n bytes of a log file, for error messages.
func Tail(path string, n int64) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if int64(len(data)) > n {
		data = data[int64(len(data))-n:]
	}
	return string(bytes.TrimSpace(data))
}

// Process is one on-demand helper process of a store: where its files are,
// what it is called, and how it is started.
type Process struct {
	Paths store.OwnerPaths
	What  string // "the services owner"
	// Needed reports whether the process has work (objects exist): it is
	// started then.
	Needed func() bool
	// Stay, when set, is what besides Needed keeps a running process from
	// exiting (work it finishes on its own, such as deleting orphans).
	Stay func() bool
	// Args are its arguments after the binary (--root R --run-root RR verb).
	Args    []string
	LogPath string
	Timeout time.Duration
}

// startLock takes the start lock that a command starting the process and the
// process deciding to exit both take.
func (p Process) startLock() (*flock.Flock, error) {
	if err := os.MkdirAll(p.Paths.Dir, 0o700); err != nil {
		return nil, err
	}
	start := flock.New(p.Paths.StartLockFile())
	if err := start.Lock(); err != nil {
		return nil, err
	}
	return start, nil
}

// Ensure starts the process when it is needed and none is alive (none yet,
// or the last one crashed), and waits until it serves. exe is this binary.
func (p Process) Ensure(exe string) error {
	if store.OwnerPid(p.Paths) != 0 {
		return nil
	}
	start, err := p.startLock()
	if err != nil {
		return err
	}
	defer start.Unlock()
	if store.OwnerPid(p.Paths) != 0 || !p.Needed() {
		return nil
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	return Spawn(exe, p.Args, p.LogPath, p.What, timeout)
}

// Hold takes the lock the process holds for its life: a new one waits for
// the one that is exiting.
func (p Process) Hold() (release func(), err error) {
	if err := os.MkdirAll(p.Paths.Dir, 0o700); err != nil {
		return nil, err
	}
	lock := flock.New(p.Paths.LockFile())
	if err := lock.Lock(); err != nil {
		return nil, fmt.Errorf("locking %s: %w", p.What, err)
	}
	// Under systemd the process leaves the unit of the command that started
	// it (a login scope, a CI step's service) for a scope of its own, as the
	// supervisors do: stopping that unit must not take the cluster DNS or the
	// controllers with it. One scope per run root and process.
	if cgroups.DefaultDriver() == cgroups.DriverSystemd {
		sum := sha256.Sum256([]byte(p.Paths.Dir))
		if _, err := cgroups.LeaveCallerUnitAs("podrun-"+filepath.Base(p.Paths.Dir), hex.EncodeToString(sum[:6])); err != nil {
			slog.Warn("staying in the caller's cgroup", "process", p.What, "err", err)
		}
	}
	return func() { _ = lock.Unlock() }, nil
}

// Serving records the calling process (pid and start time) and tells the
// command that spawned it that it serves.
func (p Process) Serving(ready *os.File) error {
	if err := store.WriteOwner(p.Paths); err != nil {
		return err
	}
	Ready(ready)
	return nil
}

// ExitIfIdle decides, under the start lock, whether the process exits: when
// it is still not needed, cleanup runs and the process's record goes, and it
// reports true; a command that recorded an object meanwhile is seen here, or
// finds no live process afterwards and starts one.
func (p Process) ExitIfIdle(cleanup func()) bool {
	start, err := p.startLock()
	if err != nil {
		return false
	}
	defer start.Unlock()
	if p.Needed() || (p.Stay != nil && p.Stay()) {
		return false
	}
	if cleanup != nil {
		cleanup()
	}
	store.RemoveOwner(p.Paths)
	return true
}

// ReclaimIfIdle runs cleanup, under the start lock, when no process is
// alive and none is needed: what one that crashed left behind goes, and a
// command recording a new object meanwhile starts a new one only after.
func (p Process) ReclaimIfIdle(cleanup func()) {
	if store.OwnerPid(p.Paths) != 0 {
		return
	}
	start, err := p.startLock()
	if err != nil {
		return
	}
	defer start.Unlock()
	if store.OwnerPid(p.Paths) != 0 || p.Needed() || (p.Stay != nil && p.Stay()) {
		return
	}
	cleanup()
	store.RemoveOwner(p.Paths)
}

// WaitGone waits, once the process is no longer needed, until it has exited,
// so that the command that deleted the last object leaves the host as it was.
func (p Process) WaitGone(timeout time.Duration) error {
	// A process being started (Ensure holds the start lock until it serves)
	// is waited for too.
	if _, err := os.Stat(p.Paths.StartLockFile()); err == nil {
		start := flock.New(p.Paths.StartLockFile())
		if err := start.Lock(); err == nil {
			_ = start.Unlock()
		}
	}
	deadline := time.Now().Add(timeout)
	// The process removes its pid record (ExitIfIdle) before its last steps
	// (a server's shutdown, its addresses, its lock): hold the process itself
	// through a pidfd, taken while a record shows it alive (the live one, or
	// the exiting one once it was given up), and wait for its exit too.
	pidfd := holdPid(func() int { return store.OwnerPid(p.Paths) })
	if pidfd < 0 {
		pidfd = holdPid(func() int { return store.ExitingOwnerPid(p.Paths) })
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	for store.OwnerPid(p.Paths) != 0 {
		if p.Needed() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) did not exit within %s after its last object was deleted", p.What, store.OwnerPid(p.Paths), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for pidfd >= 0 && !p.Needed() {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s did not exit within %s after its last object was deleted", p.What, timeout)
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(left, 100*time.Millisecond).Milliseconds())+1)
		if err == nil && n > 0 {
			return nil // exited
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return nil
		}
	}
	return nil
}

// holdPid opens a pidfd on the process live reports, when live still reports
// it once the pidfd is open (so it is not a reused pid); else -1.
func holdPid(live func() int) int {
	pid := live()
	if pid == 0 {
		return -1
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	if live() != pid {
		unix.Close(fd) // the pid was reused before we held it
		return -1
	}
	return fd
}

// StoreDirs are the store's directories an owner process watches: the pods
// directory and each pod's (status writes), and the objects' directories of
// the kinds named by their plurals, in every namespace.
func StoreDirs(l store.Layout, plurals ...string) []string {
	dirs := []string{l.PodsDir(), l.ObjectsDir()}
	more, _ := filepath.Glob(filepath.Join(l.PodsDir(), "*"))
	for _, d := range more {
		// Not a record being created (.creating-<uid>): it becomes one by a
		// rename, and a watch on its inode under two paths deadlocked
		// fsnotify (its reader, holding its lock, blocked sending the error
		// of a move while Add waited for that lock).
		if !strings.HasPrefix(filepath.Base(d), ".") {
			dirs = append(dirs, d)
		}
	}
	more, _ = filepath.Glob(filepath.Join(l.ObjectsDir(), "*"))
	dirs = append(dirs, more...)
	for _, p := range plurals {
		more, _ = filepath.Glob(filepath.Join(l.ObjectsDir(), "*", p))
		dirs = append(dirs, more...)
	}
	return dirs
}

// Watcher wakes an owner process when the store's directories change: the
// directories dirs names (looked for again after each change, so new pod
// directories are watched), with fsnotify, and a resync timeout besides.
type Watcher struct {
	w       *fsnotify.Watcher
	watched map[string]bool
	dirs    func() []string
}

// NewWatcher watches the directories dirs returns.
func NewWatcher(dirs func() []string) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	wa := &Watcher{w: w, watched: map[string]bool{}, dirs: dirs}
	wa.add()
	return wa, nil
}

func (wa *Watcher) add() {
	for _, d := range wa.dirs() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || wa.watched[d] {
			continue
		}
		if err := wa.w.Add(d); err == nil {
			wa.watched[d] = true
		}
	}
}

// Close stops watching.
func (wa *Watcher) Close() { _ = wa.w.Close() }

// Wait returns after a change (the burst of writes one change makes
// gathered, 20 ms of quiet) or after timeout; false when the watcher is
// closed. Errors of the watch go to warn.
func (wa *Watcher) Wait(timeout time.Duration, warn func(error)) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ev, ok := <-wa.w.Events:
		if !ok {
			return false
		}
		if ev.Op&fsnotify.Remove != 0 {
			delete(wa.watched, ev.Name)
		}
		wa.drain(20 * time.Millisecond)
	case err := <-wa.w.Errors:
		if warn != nil && err != nil {
			warn(err)
		}
	case <-t.C:
	}
	wa.add()
	return true
}

func (wa *Watcher) drain(quiet time.Duration) {
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-wa.w.Events:
			if !ok {
				return
			}
			if ev.Op&fsnotify.Remove != 0 {
				delete(wa.watched, ev.Name)
			}
			t.Reset(quiet)
		case <-t.C:
			return
		}
	}
}
