package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// logFiles lists the files of the container log directory (name → size).
func logFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // compressed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// numbered is n lines "line <i>\n" from first.
func numbered(first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "line %06d\n", i)
	}
	return b.String()
}

func readAll(t *testing.T, path string, opts Options) string {
	t.Helper()
	var out bytes.Buffer
	if err := Read(context.Background(), path, opts, &out, &out, nil); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return out.String()
}

// TestRotation writes far more than MaxFiles × MaxSize and checks the
// kubelet's file set (live log, one plain rotated file, the rest gzipped,
// never more than MaxFiles), that no file grows past MaxSize, and that Read
// returns the retained output whole and in order, with --tail across files.
func TestRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	path := filepath.Join(dir, "0.log")
	const maxSize, maxFiles = 4096, 4
	w, err := Open(path, WriterOptions{MaxSize: maxSize, MaxFiles: maxFiles})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	w.now = func() time.Time { clock = clock.Add(300 * time.Millisecond); return clock }
	const total = 5000
	pr, pw := io.Pipe()
	relayed := make(chan error, 1)
	go func() { relayed <- w.Relay(Stdout, pr) }()
	for i := 0; i < total; i += 50 {
		if _, err := io.WriteString(pw, numbered(i, 50)); err != nil {
			t.Fatal(err)
		}
		files := logFiles(t, dir)
		if len(files) > maxFiles+1 { // +1: a .gz.tmp while compressing
			t.Fatalf("after %d lines: %d files: %v", i+50, len(files), files)
		}
	}
	pw.Close()
	if err := <-relayed; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	files := logFiles(t, dir)
	var plain, gz int
	for name, size := range files {
		switch {
		case name == "0.log":
		case strings.HasSuffix(name, ".gz"):
			gz++
		case strings.HasSuffix(name, ".tmp"):
			t.Errorf("temporary file %s left", name)
		default:
			plain++
			if !strings.HasPrefix(name, "0.log.2026112") {
				t.Errorf("rotated file %s is not named <log>.<timestamp>", name)
			}
		}
		if !strings.HasSuffix(name, ".gz") && size > maxSize {
			t.Errorf("%s has %d bytes, more than %d", name, size, maxSize)
		}
	}
	if len(files) != maxFiles || plain != 1 || gz != maxFiles-2 {
		t.Errorf("files %v: want the live log, 1 rotated and %d compressed", files, maxFiles-2)
	}

	// The retained output is the end of what was written, in order, without gaps.
	got := readAll(t, path, Options{Tail: -1})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 3*maxSize/len("2026-11-26T08:00:00.3Z stdout F line 000000\n") {
		t.Fatalf("only %d lines retained", len(lines))
	}
	var first int
	fmt.Sscanf(lines[0], "line %d", &first)
	if want := numbered(first, total-first); got != want {
		t.Errorf("Read returned %d lines from %d, not the end of the output in order", len(lines), first)
	}
	for _, n := range []int64{0, 1, 10, int64(len(lines)) - 1, int64(len(lines)), int64(len(lines)) + 5} {
		want := numbered(total-int(min(n, int64(len(lines)))), int(min(n, int64(len(lines)))))
		if got := readAll(t, path, Options{Tail: n}); got != want {
			t.Errorf("--tail %d: got %d bytes, want %d", n, len(got), len(want))
		}
	}

	if err := RemoveRun(path); err != nil {
		t.Fatal(err)
	}
	if files := logFiles(t, dir); len(files) != 0 {
		t.Errorf("RemoveRun left %v", files)
	}
}

// TestRotationSameSecond rotates many times within one second, with old
// files removed meanwhile: every rotated file gets a new name, and the files
// are read back in the order they were written.
func TestRotationSameSecond(t *testing.T) {
	for _, maxFiles := range []int{100, 4} {
		dir := filepath.Join(t.TempDir(), "c")
		path := filepath.Join(dir, "3.log")
		w, err := Open(path, WriterOptions{MaxSize: 512, MaxFiles: maxFiles})
		if err != nil {
			t.Fatal(err)
		}
		w.now = func() time.Time { return fixedTime }
		input := numbered(0, 300)
		for i := 0; i < 300; i += 10 {
			if err := w.Relay(Stderr, strings.NewReader(numbered(i, 10))); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		got := readAll(t, path, Options{Tail: -1})
		if maxFiles == 100 && got != input {
			t.Errorf("MaxFiles %d: Read after same-second rotations:\n%s", maxFiles, got)
		}
		if got == "" || !strings.HasSuffix(input, got) || !strings.HasPrefix(got, "line ") {
			t.Errorf("MaxFiles %d: Read after same-second rotations is not the end of the output:\n%s", maxFiles, got)
		}
		if files := logFiles(t, dir); len(files) > maxFiles {
			t.Errorf("MaxFiles %d: %d files", maxFiles, len(files))
		}
	}
}

// TestReadFollowAcrossRotation follows a log while it is rotated many times
// and must print every line exactly once.
func TestReadFollowAcrossRotation(t *testing.T) {
	withPolling(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c", "0.log")
		w, err := Open(path, WriterOptions{MaxSize: 2048, MaxFiles: 5})
		if err != nil {
			t.Fatal(err)
		}
		var finished atomic.Bool
		out := newSyncBuffer()
		errc := make(chan error, 1)
		go func() {
			errc <- Read(context.Background(), path, Options{Follow: true, Tail: -1}, out, out, finished.Load)
		}()
		pr, pw := io.Pipe()
		relayed := make(chan error, 1)
		go func() { relayed <- w.Relay(Stdout, pr) }()
		var want strings.Builder
		for i := 0; i < 400; i += 20 {
			chunk := numbered(i, 20)
			io.WriteString(pw, chunk)
			want.WriteString(chunk)
			out.waitFor(t, want.String())
		}
		// The last lines are followed by the end of the container right away.
		io.WriteString(pw, numbered(400, 200))
		want.WriteString(numbered(400, 200))
		pw.Close()
		if err := <-relayed; err != nil {
			t.Fatal(err)
		}
		w.Close()
		finished.Store(true)
		if err := waitErr(t, errc); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != want.String() {
			t.Errorf("follower printed %d bytes, want %d", len(got), want.Len())
		}
	})
}

// TestDroppedOutputIsReported writes to a device that is always full: the
// lost output is counted and reported, and writing goes on.
func TestDroppedOutputIsReported(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var notices []Notice
	w, err := Open("/dev/full", WriterOptions{Notify: func(n Notice) { notices = append(notices, n) }})
	if err != nil {
		t.Fatal(err)
	}
	input := numbered(0, 1000)
	if err := w.Relay(Stdout, strings.NewReader(input)); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Relay: %v, want ENOSPC", err)
	}
	if len(notices) != 1 || notices[0].Kind != DropStarted || !errors.Is(notices[0].Err, syscall.ENOSPC) {
		t.Fatalf("notices before Close: %+v", notices)
	}
	w.Close()
	bytesLost, records := w.Dropped()
	if records != 1000 || bytesLost < int64(len(input)) {
		t.Errorf("Dropped = %d bytes, %d records; want 1000 records of at least %d bytes", bytesLost, records, len(input))
	}
	if len(notices) != 2 || notices[1].Kind != DropEnded || notices[1].Records != 1000 || notices[1].Bytes != bytesLost {
		t.Errorf("notices: %+v", notices)
	}
}

func TestOpenRefusesOneFile(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "0.log"), WriterOptions{MaxSize: 10, MaxFiles: 1}); err == nil {
		t.Error("Open accepted MaxFiles 1 with rotation")
	}
}
