package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// crLine renders one CRI log line at t0 plus sec seconds.
func crLine(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

// tsOut is how Read prints the timestamp of the line at t0 plus sec seconds.
func tsOut(sec int) string {
	return t0.Add(time.Duration(sec)*time.Second).Format(timeFormatOut) + " "
}

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRead(t *testing.T) {
	standard := crLine(0, Stdout, "F", "one") +
		crLine(1, Stderr, "F", "two") +
		crLine(2, Stdout, "P", "long-") +
		crLine(3, Stdout, "F", "line") +
		crLine(4, Stderr, "F", "three") +
		crLine(5, Stdout, "F", "four")
	for _, tc := range []struct {
		name       string
		log        string
		opts       Options
		noStderr   bool
		wantOut    string
		wantErr    string
		wantFailed bool
	}{
		{name: "everything", log: standard, opts: Options{Tail: -1},
			wantOut: "one\nlong-line\nfour\n", wantErr: "two\nthree\n"},
		{name: "tail 2", log: standard, opts: Options{Tail: 2},
			wantOut: "four\n", wantErr: "three\n"},
		{name: "tail counts records, so it can start inside a split line", log: standard, opts: Options{Tail: 3},
			wantOut: "line\nfour\n", wantErr: "three\n"},
		{name: "tail 0", log: standard, opts: Options{Tail: 0}},
		{name: "tail beyond the start", log: standard, opts: Options{Tail: 100},
			wantOut: "one\nlong-line\nfour\n", wantErr: "two\nthree\n"},
		{name: "since", log: standard, opts: Options{Tail: -1, Since: t0.Add(3 * time.Second)},
			wantOut: "line\nfour\n", wantErr: "three\n"},
		{name: "since is inclusive", log: standard, opts: Options{Tail: -1, Since: t0.Add(5 * time.Second)},
			wantOut: "four\n"},
		{name: "tail counts lines skipped by since", log: standard, opts: Options{Tail: 2, Since: t0.Add(5 * time.Second)},
			wantOut: "four\n"},
		{name: "timestamps once per line", log: standard, opts: Options{Tail: -1, Timestamps: true},
			wantOut: tsOut(0) + "one\n" + tsOut(2) + "long-line\n" + tsOut(5) + "four\n",
			wantErr: tsOut(1) + "two\n" + tsOut(4) + "three\n"},
		{name: "limit bytes", log: standard, opts: Options{Tail: -1, LimitBytes: 10},
			wantOut: "one\nlo", wantErr: "two\n"},
		{name: "limit bytes at a line end", log: standard, opts: Options{Tail: -1, LimitBytes: 8},
			wantOut: "one\n", wantErr: "two\n"},
		{name: "limit bytes counts timestamps", log: standard, opts: Options{Tail: -1, LimitBytes: int64(len(tsOut(0))) + 4 + 5, Timestamps: true},
			wantOut: tsOut(0) + "one\n", wantErr: tsOut(1)[:5]},
		{name: "prefix once per line", log: standard, opts: Options{Tail: -1, Prefix: "[pod/p/c] "},
			wantOut: "[pod/p/c] one\n[pod/p/c] long-line\n[pod/p/c] four\n", wantErr: "[pod/p/c] two\n[pod/p/c] three\n"},
		{name: "prefix before timestamp", log: standard, opts: Options{Tail: 1, Prefix: "[p] ", Timestamps: true},
			wantOut: "[p] " + tsOut(5) + "four\n"},
		{name: "prefix is not counted in limit bytes", log: standard, opts: Options{Tail: -1, Prefix: "[p] ", LimitBytes: 6},
			wantOut: "[p] one\n", wantErr: "[p] tw"},
		{name: "nil stderr drops it and does not charge it", log: standard, opts: Options{Tail: -1, LimitBytes: 6}, noStderr: true,
			wantOut: "one\nlo"},
		{name: "incomplete last record is printed", log: crLine(0, Stdout, "F", "one") + strings.TrimSuffix(crLine(1, Stdout, "F", "two"), "\n"),
			opts: Options{Tail: -1}, wantOut: "one\ntwo"},
		{name: "tail does not count an incomplete last record", log: crLine(0, Stdout, "F", "one") + strings.TrimSuffix(crLine(1, Stdout, "F", "two"), "\n"),
			opts: Options{Tail: 1}, wantOut: "one\n"},
		{name: "unterminated output is a P record", log: crLine(0, Stdout, "F", "one") + crLine(1, Stdout, "P", "two"),
			opts: Options{Tail: -1, Timestamps: true}, wantOut: tsOut(0) + "one\n" + tsOut(1) + "two"},
		{name: "malformed lines are skipped", log: crLine(0, Stdout, "F", "one") + "garbage\n" + crLine(1, Stdout, "F", "two"),
			opts: Options{Tail: -1}, wantOut: "one\ntwo\n"},
		{name: "a malformed first line fails", log: "garbage\n" + crLine(1, Stdout, "F", "two"),
			opts: Options{Tail: -1}, wantFailed: true},
		{name: "empty log", log: "", opts: Options{Tail: -1}},
		{name: "binary content", log: crLine(0, Stdout, "F", "\x00\xff\r"), opts: Options{Tail: -1}, wantOut: "\x00\xff\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeLog(t, tc.log)
			var stdout, stderr bytes.Buffer
			var errW io.Writer = &stderr
			if tc.noStderr {
				errW = nil
			}
			err := Read(context.Background(), path, tc.opts, &stdout, errW, nil)
			if tc.wantFailed {
				if err == nil {
					t.Fatal("Read succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tc.wantOut || stderr.String() != tc.wantErr {
				t.Errorf("stdout %q, stderr %q\nwant   %q,        %q", stdout.String(), stderr.String(), tc.wantOut, tc.wantErr)
			}
		})
	}
}

func TestReadKeepsStreamOrderOnOneWriter(t *testing.T) {
	var log strings.Builder
	var want strings.Builder
	for i := range 5000 {
		stream := []string{Stdout, Stderr}[i%3%2]
		fmt.Fprint(&log, crLine(i, stream, "F", fmt.Sprintf("%s %d", stream, i)))
		fmt.Fprintf(&want, "%s %d\n", stream, i)
	}
	path := writeLog(t, log.String())
	var out bytes.Buffer
	if err := Read(context.Background(), path, Options{Tail: -1}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Error("lines of the two streams came out of order")
	}
}

func TestReadMissingFile(t *testing.T) {
	err := Read(context.Background(), filepath.Join(t.TempDir(), "nope.log"), Options{Tail: -1}, io.Discard, io.Discard, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read: %v, want not exist", err)
	}
}

// tailRef is the obvious definition of the kubelet's FindTailLineStartIndex.
func tailRef(data []byte, n int64) int64 {
	if n < 0 {
		return 0
	}
	var nl []int
	for i, c := range data {
		if c == '\n' {
			nl = append(nl, i)
		}
	}
	if int64(len(nl)) <= n {
		return 0
	}
	return int64(nl[int64(len(nl))-n-1] + 1)
}

func TestTailStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		n    int64
		want int64
	}{
		{"all", "a\nb\n", -1, 0},
		{"empty file", "", 3, 0},
		{"zero lines is the end", "a\nb\n", 0, 4},
		{"one line", "a\nb\n", 1, 2},
		{"exactly all lines", "a\nb\n", 2, 0},
		{"more than there are", "a\nb\n", 5, 0},
		{"unterminated last line is not counted", "a\nb\nc", 1, 2},
		{"unterminated only", "abc", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(writeLog(t, tc.data))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := tailStart(f, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got != tailRef([]byte(tc.data), tc.n) {
				t.Errorf("tailStart = %d, want %d (reference %d)", got, tc.want, tailRef([]byte(tc.data), tc.n))
			}
		})
	}
	t.Run("random files across read blocks", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for range 30 {
			data := make([]byte, rng.IntN(4*readBufSize))
			for i := range data {
				if rng.IntN(500) == 0 {
					data[i] = '\n'
				} else {
					data[i] = 'x'
				}
			}
			path := writeLog(t, string(data))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, 1, 7, int64(rng.IntN(1000)), 100000} {
				got, err := tailStart(f, n)
				if err != nil {
					t.Fatal(err)
				}
				if want := tailRef(data, n); got != want {
					t.Fatalf("size %d, n %d: tailStart = %d, want %d", len(data), n, got, want)
				}
			}
			f.Close()
		}
	})
}

func TestTail(t *testing.T) {
	var log, lines strings.Builder
	for i := range 100 {
		line := fmt.Sprintf("line %03d %s", i, strings.Repeat("x", 30))
		stream := Stdout
		if i%2 == 1 {
			stream = Stderr
		}
		fmt.Fprint(&log, crLine(i, stream, "F", line))
		if i >= 100-TerminationMessageLogLines {
			fmt.Fprintln(&lines, line)
		}
	}
	path := writeLog(t, log.String())
	for _, tc := range []struct {
		name     string
		maxLines int
		maxBytes int
		want     string
	}{
		{"kubelet limits", TerminationMessageLogLines, TerminationMessageLogBytes, lines.String()[len(lines.String())-TerminationMessageLogBytes:]},
		{"lines only", 3, 0, "line 097 " + strings.Repeat("x", 30) + "\nline 098 " + strings.Repeat("x", 30) + "\nline 099 " + strings.Repeat("x", 30) + "\n"},
		{"bytes only", -1, 10, strings.Repeat("x", 9) + "\n"},
		{"few lines", 1, TerminationMessageLogBytes, "line 099 " + strings.Repeat("x", 30) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Tail(path, tc.maxLines, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Tail = %q\nwant   %q", got, tc.want)
			}
		})
	}
	t.Run("missing log", func(t *testing.T) {
		if _, err := Tail(filepath.Join(t.TempDir(), "x.log"), 80, 2048); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Tail: %v, want not exist", err)
		}
	})
}

// syncBuffer is a buffer a follower writes to while the test watches it.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer holds want; the deadline only stops a broken test from hanging.
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for s.String() != want {
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("follower output %q, want %q", s.String(), want)
		}
	}
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Read did not return")
		return nil
	}
}

// withPolling runs f with fsnotify and again with the poll-only fallback.
func withPolling(t *testing.T, f func(t *testing.T)) {
	t.Run("fsnotify", f)
	t.Run("poll", func(t *testing.T) {
		notifyEnabled = false
		t.Cleanup(func() { notifyEnabled = true })
		f(t)
	})
}

func TestReadFollow(t *testing.T) {
	withPolling(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c", "0.log") // not there yet: the container has not started
		var finished atomic.Bool
		out := newSyncBuffer()
		errc := make(chan error, 1)
		go func() {
			errc <- Read(context.Background(), path, Options{Follow: true, Tail: -1, Timestamps: false}, out, out, finished.Load)
		}()

		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		relayed := make(chan error, 1)
		go func() { relayed <- w.Relay(Stdout, pr) }()
		var want strings.Builder
		for i := range 5 {
			fmt.Fprintf(pw, "line %d\n", i)
			fmt.Fprintf(&want, "line %d\n", i)
			out.waitFor(t, want.String()) // seen before the next line is written
		}
		fmt.Fprint(pw, "last words")
		pw.Close()
		if err := <-relayed; err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		finished.Store(true)
		if err := waitErr(t, errc); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != want.String()+"last words" {
			t.Errorf("follower output %q", got)
		}
	})
}

// TestReadFollowEndsWithEverything races the end of a container against the
// follower: done() turns true right after the last write, and the follower
// must still print every line.
func TestReadFollowEndsWithEverything(t *testing.T) {
	for i := range 20 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			var finished atomic.Bool
			var out bytes.Buffer
			errc := make(chan error, 1)
			start := func() {
				go func() {
					errc <- Read(context.Background(), path, Options{Follow: true, Tail: -1}, &out, &out, finished.Load)
				}()
			}
			if i%2 == 0 {
				start()
			}
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			input := strings.Repeat(fmt.Sprintf("run %d\n", i), 1000*i)
			if err := w.Relay(Stderr, strings.NewReader(input)); err != nil {
				t.Fatal(err)
			}
			w.Close()
			finished.Store(true)
			if i%2 == 1 {
				start()
			}
			if err := waitErr(t, errc); err != nil {
				t.Fatal(err)
			}
			if out.String() != input {
				t.Errorf("follower printed %d bytes, want %d", out.Len(), len(input))
			}
		})
	}
}

func TestReadFollowIncompleteRecord(t *testing.T) {
	withPolling(t, func(t *testing.T) {
		path := writeLog(t, crLine(0, Stdout, "F", "a")+"2026-11-23T10:00:01Z stdout F b")
		var finished atomic.Bool
		checked := make(chan struct{}, 1)
		done := func() bool {
			select {
			case checked <- struct{}{}:
			default:
			}
			return finished.Load()
		}
		out := newSyncBuffer()
		errc := make(chan error, 1)
		go func() { errc <- Read(context.Background(), path, Options{Follow: true, Tail: -1}, out, out, done) }()
		out.waitFor(t, "a\n")
		// done() is asked at each end of file: the follower has now seen the unfinished record.
		<-checked
		<-checked
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("c\n" + crLine(2, Stdout, "P", "d")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		out.waitFor(t, "a\nbc\nd")
		finished.Store(true)
		if err := waitErr(t, errc); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "a\nbc\nd" {
			t.Errorf("follower output %q", got)
		}
	})
}

func TestReadFollowEnds(t *testing.T) {
	t.Run("finished container prints an incomplete last record", func(t *testing.T) {
		path := writeLog(t, crLine(0, Stdout, "F", "a")+"2026-11-23T10:00:01Z stdout F b")
		var out bytes.Buffer
		if err := Read(context.Background(), path, Options{Follow: true, Tail: -1}, &out, &out, func() bool { return true }); err != nil {
			t.Fatal(err)
		}
		if out.String() != "a\nb" {
			t.Errorf("output %q", out.String())
		}
	})
	t.Run("tail with follow", func(t *testing.T) {
		path := writeLog(t, crLine(0, Stdout, "F", "a")+crLine(1, Stdout, "F", "b")+crLine(2, Stdout, "F", "c"))
		var out bytes.Buffer
		if err := Read(context.Background(), path, Options{Follow: true, Tail: 2}, &out, &out, func() bool { return true }); err != nil {
			t.Fatal(err)
		}
		if out.String() != "b\nc\n" {
			t.Errorf("output %q", out.String())
		}
	})
	t.Run("never started", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c", "0.log")
		err := Read(context.Background(), path, Options{Follow: true, Tail: -1}, io.Discard, io.Discard, func() bool { return true })
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read: %v, want not exist", err)
		}
	})
	for _, exists := range []bool{true, false} {
		t.Run(fmt.Sprintf("context ends, file exists %v", exists), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			if exists {
				path = writeLog(t, crLine(0, Stdout, "F", "a"))
			}
			ctx, cancel := context.WithCancel(context.Background())
			out := newSyncBuffer()
			errc := make(chan error, 1)
			go func() { errc <- Read(ctx, path, Options{Follow: true, Tail: -1}, out, out, nil) }()
			if exists {
				out.waitFor(t, "a\n")
			}
			cancel()
			if err := waitErr(t, errc); !errors.Is(err, context.Canceled) {
				t.Errorf("Read: %v, want context.Canceled", err)
			}
		})
	}
}

// randomStream returns about size bytes of lines of random bytes and lengths,
// some longer than MaxLineSize, ending without a newline.
func randomStream(rng *rand.Rand, size int) []byte {
	out := make([]byte, 0, size+3*MaxLineSize)
	for len(out) < size {
		var n int
		switch r := rng.IntN(100); {
		case r < 70:
			n = rng.IntN(200)
		case r < 95:
			n = 200 + rng.IntN(5000)
		default:
			n = MaxLineSize - 2 + rng.IntN(2*MaxLineSize)
		}
		for range n {
			c := byte(rng.Uint32())
			if c == '\n' {
				c = '\r' // keeps '\r' common, including before the line's '\n'
			}
			out = append(out, c)
		}
		out = append(out, '\n')
	}
	return append(out, "no newline at the end"...)
}

// TestRoundTrip relays 64 MiB of random lines on both streams at once, with a
// follower reading all the while, and checks that the follower and a plain
// Read get back every byte of each stream.
func TestRoundTrip(t *testing.T) {
	const total = 64 << 20
	rng := rand.New(rand.NewPCG(5, 6))
	inputs := [2][]byte{randomStream(rng, total/2), randomStream(rng, total/2)}
	path := filepath.Join(t.TempDir(), "c", "0.log")

	var finished atomic.Bool
	var follow [2]bytes.Buffer
	followed := make(chan error, 1)
	go func() {
		followed <- Read(context.Background(), path, Options{Follow: true, Tail: -1}, &follow[0], &follow[1], finished.Load)
	}()

	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for k, stream := range streamNames {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer pr.Close()
			errs <- w.Relay(stream, pr)
		}()
		go func() {
			defer wg.Done()
			defer pw.Close()
			wrng := rand.New(rand.NewPCG(uint64(k), 7))
			data := inputs[k]
			for len(data) > 0 {
				n := min(len(data), 1+wrng.IntN(100000))
				if _, err := pw.Write(data[:n]); err != nil {
					errs <- err
					return
				}
				data = data[n:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	finished.Store(true)
	if err := waitErr(t, followed); err != nil {
		t.Fatal(err)
	}

	var plain [2]bytes.Buffer
	if err := Read(context.Background(), path, Options{Tail: -1}, &plain[0], &plain[1], nil); err != nil {
		t.Fatal(err)
	}
	for k, stream := range streamNames {
		// containerd drops the '\r' of a "\r\n" line ending; nothing else changes.
		want := bytes.ReplaceAll(inputs[k], []byte("\r\n"), []byte("\n"))
		for name, got := range map[string][]byte{"follow": follow[k].Bytes(), "read": plain[k].Bytes()} {
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("%s %s: %d bytes, want %d; first difference at byte %d", name, stream, len(got), len(want), i)
			}
		}
	}
}
