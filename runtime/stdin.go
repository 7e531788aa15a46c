package runtime

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stdinRelay gives a container with `stdin: true` its standard input: a pipe
// whose other end is fed from a named pipe under the run root
// (store.PodPaths.StdinFifo), which `podrun run -i` opens to attach, as a CRI
// runtime's attach feeds the container's stdin (containerd keeps a FIFO per
// stream). With stdinOnce the container's stdin closes when the first
// attached writer closes (the kubelet's StdinOnce); otherwise the next
// writer may attach.
type stdinRelay struct {
	path    string
	once    bool
	w       *os.File // the container's stdin, our end
	closeW  sync.Once
	stopped atomic.Bool
	done    chan struct{}
}

// newStdinRelay makes the named pipe and the container's stdin pipe; r goes
// to the container.
func newStdinRelay(path string, once bool) (*stdinRelay, *os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	_ = os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		_ = os.Remove(path)
		return nil, nil, err
	}
	s := &stdinRelay{path: path, once: once, w: w, done: make(chan struct{})}
	go s.run()
	return s, r, nil
}

func (s *stdinRelay) run() {
	defer close(s.done)
	defer s.closeW.Do(func() { s.w.Close() })
	for !s.stopped.Load() {
		// Blocks until a writer attaches (or stop opens it to end the wait).
		f, err := os.OpenFile(s.path, os.O_RDONLY, 0)
		if err != nil {
			return
		}
		if s.stopped.Load() {
			f.Close()
			return
		}
		_, _ = io.Copy(s.w, f)
		f.Close()
		if s.once {
			return
		}
	}
}

// stop ends the relay once the container has exited: its stdin closes, a
// relay waiting for a writer is woken, and the named pipe goes.
func (s *stdinRelay) stop() {
	if s == nil {
		return
	}
	s.stopped.Store(true)
	s.closeW.Do(func() { s.w.Close() })
	defer os.Remove(s.path)
	for range 50 {
		select {
		case <-s.done:
			return
		default:
		}
		// Opening the write end wakes a relay blocked in opening the read end.
		if f, err := os.OpenFile(s.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		} else if !errors.Is(err, syscall.ENXIO) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A writer still attached and silent: the relay ends when it closes.
}
