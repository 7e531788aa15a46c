package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
)

// exitWatch catches the first status the supervisor publishes with a
// container terminated. The status's finishedAt has one-second resolution
// (metav1.Time), so the bench takes the time that status.json version was
// written instead. It watches with inotify rather than polling, so that it
// costs the pod under test nothing.
type exitWatch struct {
	w      *fsnotify.Watcher
	result chan exitSeen
	stop   chan struct{}
}

type exitSeen struct {
	// written is the mtime of the first status.json version seen with the
	// container terminated.
	written time.Time
	state   corev1.ContainerStateTerminated
	// late says the version seen was already the one written after the
	// sandbox teardown (no pod IP), so the figure includes the teardown.
	late bool
	err  error
}

// watchExit starts watching before the pod is applied: the pod's directory
// appears under podsDir once apply records it.
func watchExit(podsDir, pod, container string) (*exitWatch, error) {
	if err := os.MkdirAll(podsDir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", podsDir, err)
	}
	if err := w.Add(podsDir); err != nil {
		w.Close()
		return nil, fmt.Errorf("watching %s: %w", podsDir, err)
	}
	x := &exitWatch{w: w, result: make(chan exitSeen, 1), stop: make(chan struct{})}
	prefix := "default_" + pod + "_"
	check := func(path string) bool {
		v, err := readStatus(path)
		if err != nil {
			return false // replaced while we read it: the next event tells
		}
		for _, cs := range v.status.ContainerStatuses {
			if cs.Name == container && cs.State.Terminated != nil {
				x.result <- exitSeen{written: v.written, state: *cs.State.Terminated, late: v.status.PodIP == ""}
				return true
			}
		}
		return false
	}
	go func() {
		defer w.Close()
		for {
			select {
			case ev := <-w.Events:
				base := filepath.Base(ev.Name)
				switch {
				case filepath.Dir(ev.Name) == podsDir && strings.HasPrefix(base, prefix) && ev.Has(fsnotify.Create):
					if err := w.Add(ev.Name); err != nil {
						x.result <- exitSeen{err: fmt.Errorf("watching %s: %w", ev.Name, err)}
						return
					}
					if check(filepath.Join(ev.Name, "status.json")) {
						return
					}
				case base == "status.json" && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write)):
					if check(ev.Name) {
						return
					}
				}
			case err := <-w.Errors:
				x.result <- exitSeen{err: fmt.Errorf("watching the status of pod %s: %w", pod, err)}
				return
			case <-x.stop:
				return
			}
		}
	}()
	return x, nil
}

// wait returns what the watch saw, or an error after timeout.
func (x *exitWatch) wait(timeout time.Duration) (exitSeen, error) {
	select {
	case r := <-x.result:
		return r, r.err
	case <-time.After(timeout):
		close(x.stop)
		return exitSeen{}, errors.New("no status with the container terminated was seen")
	}
}
