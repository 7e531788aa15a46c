package lockwait

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNotice(t *testing.T) {
	var buf syncBuf
	saved := Out
	Out = &buf
	t.Cleanup(func() { Out = saved })
	path := filepath.Join(t.TempDir(), "state.lock")
	holderLock := flock.New(path)
	if err := holderLock.Lock(); err != nil {
		t.Fatal(err)
	}

	// A short wait says nothing.
	stop := Notice(path)
	time.Sleep(After / 2)
	stop()
	time.Sleep(After)
	if buf.String() != "" {
		t.Fatalf("a wait of half a second printed %q", buf.String())
	}

	// A long one names the lock and its holder.
	waiter := flock.New(path)
	stop = Notice(path)
	go func() { time.Sleep(After + 300*time.Millisecond); holderLock.Unlock() }()
	if err := waiter.Lock(); err != nil {
		t.Fatal(err)
	}
	stop()
	waiter.Unlock()
	want := fmt.Sprintf("waiting for lock on %s (held by process %d)\n", path, os.Getpid())
	if got := buf.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if strings.Count(buf.String(), "waiting") != 1 {
		t.Errorf("printed more than once: %q", buf.String())
	}
}
