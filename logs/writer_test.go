package logs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// rec is an expected record: tag and content.
type rec struct {
	tag     string
	content string
}

// model is an independent statement of containerd's redirectLogs output:
// split at '\n', drop one '\r' before it, cut content longer than maxLen into
// maxLen P pieces, end a terminated line with F and an unterminated tail with P.
func model(input []byte, maxLen int) []rec {
	var out []rec
	pieces := func(line []byte, lastTag string) {
		for len(line) > maxLen {
			out = append(out, rec{"P", string(line[:maxLen])})
			line = line[maxLen:]
		}
		out = append(out, rec{lastTag, string(line)})
	}
	for {
		i := bytes.IndexByte(input, '\n')
		if i < 0 {
			break
		}
		line := input[:i]
		line = bytes.TrimSuffix(line, []byte{'\r'})
		pieces(line, "F")
		input = input[i+1:]
	}
	if len(input) > 0 {
		pieces(input, "P")
	}
	return out
}

// chunkReader returns its data in reads of the given sizes (cycled).
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.data))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

var fixedTime = time.Date(2026, 11, 23, 10, 4, 5, 120000000, time.UTC)

func newTestWriter(t *testing.T, maxLen int) *Writer {
	t.Helper()
	w, err := Create(filepath.Join(t.TempDir(), "c", "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.maxLen = maxLen
	w.now = func() time.Time { return fixedTime }
	return w
}

// readRecords parses every line of a log file, failing on any malformed one.
func readRecords(t *testing.T, path string) (stream []string, recs []rec) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("log does not end with a newline: %q", data[max(0, len(data)-40):])
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i+1]
		data = data[i+1:]
		_, s, partial, content, err := ParseLine(line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		tag := "F"
		if partial {
			tag = "P"
		}
		stream = append(stream, s)
		recs = append(recs, rec{tag, string(content)})
	}
	return stream, recs
}

func TestRelayRecords(t *testing.T) {
	const maxLen = 16
	a := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name  string
		input string
		want  []rec
	}{
		{"empty stream", "", nil},
		{"lines", "one\ntwo\n", []rec{{"F", "one"}, {"F", "two"}}},
		{"empty lines", "\n\nx\n\n", []rec{{"F", ""}, {"F", ""}, {"F", "x"}, {"F", ""}}},
		{"no trailing newline is a P record", "one\ntwo", []rec{{"F", "one"}, {"P", "two"}}},
		{"only an unterminated line", "x", []rec{{"P", "x"}}},
		{"crlf loses the cr", "one\r\ntwo\r\n", []rec{{"F", "one"}, {"F", "two"}}},
		{"lone cr is content", "a\rb\n\r\n", []rec{{"F", "a\rb"}, {"F", ""}}},
		{"only one cr is dropped", "x\r\r\n", []rec{{"F", "x\r"}}},
		{"cr at the end of the stream stays", "x\r", []rec{{"P", "x\r"}}},
		{"binary bytes", "\x00\xff\x1b[0m\t \x7f\n", []rec{{"F", "\x00\xff\x1b[0m\t \x7f"}}},
		{"exactly max length", a(maxLen) + "\n", []rec{{"F", a(maxLen)}}},
		{"max length plus one", a(maxLen+1) + "\n", []rec{{"P", a(maxLen)}, {"F", "a"}}},
		{"twice max length", a(2*maxLen) + "\n", []rec{{"P", a(maxLen)}, {"F", a(maxLen)}}},
		{"twice max length plus one", a(2*maxLen+1) + "\n", []rec{{"P", a(maxLen)}, {"P", a(maxLen)}, {"F", "a"}}},
		{"max length then crlf", a(maxLen) + "\r\n", []rec{{"F", a(maxLen)}}},
		{"long unterminated line", a(maxLen + 3), []rec{{"P", a(maxLen)}, {"P", "aaa"}}},
		{"unterminated line of max length", a(maxLen), []rec{{"P", a(maxLen)}}},
		{"cr past max length is content", a(maxLen) + "\rb\n", []rec{{"P", a(maxLen)}, {"F", "\rb"}}},
	} {
		for _, chunking := range []struct {
			name string
			r    func(string) io.Reader
		}{
			{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
			{"bytewise", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
			{"odd chunks", func(s string) io.Reader { return &chunkReader{data: []byte(s), sizes: []int{3, 1, 7, 2}} }},
		} {
			t.Run(tc.name+"/"+chunking.name, func(t *testing.T) {
				w := newTestWriter(t, maxLen)
				if err := w.Relay(Stdout, chunking.r(tc.input)); err != nil {
					t.Fatal(err)
				}
				streams, got := readRecords(t, w.Path())
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("records:\n got %q\nwant %q", got, tc.want)
				}
				for _, s := range streams {
					if s != Stdout {
						t.Errorf("stream %q, want stdout", s)
					}
				}
				if m := model([]byte(tc.input), maxLen); fmt.Sprint(m) != fmt.Sprint(tc.want) {
					t.Errorf("the test model disagrees with the table: %q", m)
				}
			})
		}
	}
}

// TestRelayMatchesModel feeds random input, cut into random reads, and checks
// the records against the model with the real MaxLineSize.
func TestRelayMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\r\n\x00\xff")
	for i := range 40 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var input []byte
			for range 1 + rng.IntN(20) {
				switch rng.IntN(4) {
				case 0: // a long run without newlines
					input = append(input, bytes.Repeat([]byte{'x'}, rng.IntN(3*MaxLineSize))...)
				default:
					for range rng.IntN(200) {
						input = append(input, alphabet[rng.IntN(len(alphabet))])
					}
				}
			}
			sizes := []int{1 + rng.IntN(5), 1 + rng.IntN(5000), 1 + rng.IntN(70000)}
			w := newTestWriter(t, MaxLineSize)
			if err := w.Relay(Stderr, &chunkReader{data: input, sizes: sizes}); err != nil {
				t.Fatal(err)
			}
			_, got := readRecords(t, w.Path())
			want := model(input, MaxLineSize)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("record %d: got %s %q, want %s %q", j, got[j].tag, got[j].content, want[j].tag, want[j].content)
				}
			}
		})
	}
}

func TestRelayLineFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"utc trims trailing zeros", fixedTime, "2026-11-23T10:04:05.12Z stderr F hello\n"},
		{"whole second", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05Z stderr F hello\n"},
		{"nanoseconds", time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC), "2026-01-02T03:04:05.000000001Z stderr F hello\n"},
		{"local offset", time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.FixedZone("X", 3600)), "2026-01-02T03:04:05.5+01:00 stderr F hello\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTestWriter(t, MaxLineSize)
			w.now = func() time.Time { return tc.now }
			if err := w.Relay(Stderr, strings.NewReader("hello\n")); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(w.Path())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods", "ns_name_uid", "c", "0.log")
	for i, line := range []string{"first\n", "second\n"} {
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Relay(Stdout, strings.NewReader(line)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		_, recs := readRecords(t, path)
		if len(recs) != i+1 {
			t.Fatalf("after run %d: %d records, want %d (the file must be appended to)", i, len(recs), i+1)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^0o640 != 0 {
		t.Errorf("mode %v, want at most 0640", perm)
	}
}

func TestRelayErrors(t *testing.T) {
	t.Run("unknown stream", func(t *testing.T) {
		w := newTestWriter(t, MaxLineSize)
		if err := w.Relay("stdin", strings.NewReader("x\n")); err == nil {
			t.Error("Relay accepted stream stdin")
		}
	})
	t.Run("EIO ends the stream like EOF", func(t *testing.T) {
		w := newTestWriter(t, MaxLineSize)
		r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(syscall.EIO))
		if err := w.Relay(Stdout, r); err != nil {
			t.Fatalf("Relay: %v", err)
		}
		if _, got := readRecords(t, w.Path()); fmt.Sprint(got) != fmt.Sprint([]rec{{"F", "a"}, {"P", "b"}}) {
			t.Errorf("records %q", got)
		}
	})
	t.Run("read error is returned after the content is written", func(t *testing.T) {
		w := newTestWriter(t, MaxLineSize)
		boom := errors.New("boom")
		r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
		if err := w.Relay(Stdout, r); !errors.Is(err, boom) {
			t.Fatalf("Relay: %v, want boom", err)
		}
		if _, got := readRecords(t, w.Path()); fmt.Sprint(got) != fmt.Sprint([]rec{{"F", "a"}, {"P", "b"}}) {
			t.Errorf("records %q", got)
		}
	})
	t.Run("write error keeps draining the input", func(t *testing.T) {
		w := newTestWriter(t, MaxLineSize)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		input := strings.NewReader(strings.Repeat("line\n", 100000))
		if err := w.Relay(Stdout, input); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Relay: %v, want a write error", err)
		}
		if input.Len() != 0 {
			t.Errorf("%d bytes left unread", input.Len())
		}
	})
}

// TestRelayTwoStreams relays both streams at once through real pipes and
// checks that every record is whole and each stream's lines are all there, in order.
func TestRelayTwoStreams(t *testing.T) {
	w := newTestWriter(t, MaxLineSize)
	w.now = time.Now
	const lines = 20000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, stream := range []string{Stdout, Stderr} {
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
			bw := bufio.NewWriterSize(pw, 4096)
			for i := range lines {
				// Every tenth line is longer than a record, to interleave P pieces too.
				if i%10 == 0 {
					fmt.Fprintf(bw, "%s %d %s\n", stream, i, strings.Repeat("z", MaxLineSize+100))
				} else {
					fmt.Fprintf(bw, "%s %d\n", stream, i)
				}
			}
			errs <- bw.Flush()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	streams, recs := readRecords(t, w.Path())
	var joined [2]strings.Builder
	switches := 0
	for i, s := range streams {
		k := streamOut
		if s == Stderr {
			k = streamErr
		}
		joined[k].WriteString(recs[i].content)
		if recs[i].tag == "F" {
			joined[k].WriteByte('\n')
		}
		if i > 0 && streams[i-1] != s {
			switches++
		}
	}
	for k, stream := range streamNames {
		var want strings.Builder
		for i := range lines {
			if i%10 == 0 {
				fmt.Fprintf(&want, "%s %d %s\n", stream, i, strings.Repeat("z", MaxLineSize+100))
			} else {
				fmt.Fprintf(&want, "%s %d\n", stream, i)
			}
		}
		if joined[k].String() != want.String() {
			t.Errorf("%s: the lines read back differ from those written", stream)
		}
	}
	t.Logf("%d records, the stream changed %d times", len(recs), switches)
}
