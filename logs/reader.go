package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options select what Read prints, as kubectl logs' flags do.
type Options struct {
	// Follow keeps reading new records until done() reports the container
	// finished (or the context ends).
	Follow bool
	// Tail starts at the last Tail records of the file; -1 means all. Like the
	// kubelet, it counts records (a P-split line counts once per piece), and
	// without Follow it also stops after that many records.
	Tail int64
	// Since skips records older than this; zero means all.
	Since time.Time
	// Timestamps prints each line's timestamp (RFC3339Nano, fixed width) first.
	Timestamps bool
	// LimitBytes stops after this many bytes of output (timestamps included,
	// Prefix not, as in kubectl where the prefix is added client-side); 0 means no limit.
	LimitBytes int64
	// Prefix is printed before each line, e.g. "[pod/myapp/init-mydb] ".
	Prefix string
}

const (
	// timeFormatOut is the kubelet's RFC3339NanoFixed: fixed width, so timestamps line up.
	timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"
	// pollInterval is how often a follower checks done() and the file without
	// a change notification (the kubelet's logForceCheckPeriod is 1s).
	pollInterval = 250 * time.Millisecond
	// doneMinInterval spaces out a follower's calls to done().
	doneMinInterval = 50 * time.Millisecond
	// ctxCheckEvery is how many records a follower copies between context checks.
	ctxCheckEvery = 1024
)

// errMaximumWrite ends a read that reached LimitBytes; it is not a failure.
var errMaximumWrite = errors.New("maximum write")

// Read writes the log at path to stdout and stderr, each record to its
// stream (a nil writer drops that stream). Without Follow it prints what the
// file holds and returns; a missing file is an error (wrapping fs.ErrNotExist).
//
// With Follow, it waits for the file to appear, prints what it holds, and
// keeps printing new records until done() returns true, then prints the rest
// and returns nil. done must only return true once the container has exited
// and its Relay calls have returned (the file is complete); it may be nil,
// and then Read follows until ctx ends, returning ctx.Err().
func Read(ctx context.Context, path string, opts Options, stdout, stderr io.Writer, done func() bool) error {
	wt := &waiter{path: path, dir: filepath.Dir(path)}
	defer wt.close()
	if done == nil {
		done = func() bool { return false }
	}

	f, err := openLog(ctx, path, opts.Follow, done, wt)
	if err != nil {
		return err
	}
	defer f.Close()

	start, err := tailStart(f, opts.Tail)
	if err != nil {
		return fmt.Errorf("finding the last %d lines of log %s: %w", opts.Tail, path, err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seeking to %d in log %s: %w", start, path, err)
	}

	out := newOutput(stdout, stderr, opts)
	r := bufio.NewReaderSize(f, readBufSize)
	var scratch []byte
	limited := opts.Tail >= 0 && !opts.Follow
	left := opts.Tail
	final := !opts.Follow // once set, the next EOF ends the read
	first := true
	records := 0
	var lastDone time.Time
	for {
		if limited && left == 0 {
			return out.flush()
		}
		line, rerr := readRecord(r, &scratch)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return errors.Join(fmt.Errorf("reading log %s: %w", path, rerr), out.flush())
		}
		if rerr != nil && !final {
			// Put back an unfinished record so it is read whole later.
			if len(line) > 0 {
				if _, err := f.Seek(-int64(len(line)), io.SeekCurrent); err != nil {
					return errors.Join(fmt.Errorf("seeking back in log %s: %w", path, err), out.flush())
				}
				r.Reset(f)
			}
			if err := out.flush(); err != nil {
				return err
			}
			// done() is checked before the last pass, so records written before
			// it turned true are still read. It may be costly (it reads the
			// pod's status), so a log that changes often does not call it at every change.
			if now := time.Now(); now.Sub(lastDone) >= doneMinInterval {
				lastDone = now
				if done() {
					final = true
					continue
				}
			}
			if err := wt.wait(ctx); err != nil {
				return err
			}
			continue
		}
		if rerr != nil && len(line) == 0 {
			return out.flush()
		}
		// A complete record, or (at the final EOF) an incomplete last one,
		// which the kubelet prints too.
		rec, err := parseRecord(line)
		if err != nil {
			if first {
				// The kubelet fails when the first line is not a log format it knows.
				return errors.Join(fmt.Errorf("reading log %s: unsupported log format %q: %w", path, line[:min(len(line), 80)], err), out.flush())
			}
			// Later malformed lines are skipped, as the kubelet does.
			continue
		}
		first = false
		if err := out.write(&rec); err != nil {
			if errors.Is(err, errMaximumWrite) {
				return out.flush()
			}
			return errors.Join(fmt.Errorf("writing log %s: %w", path, err), out.flush())
		}
		if limited {
			left--
		}
		if rerr != nil {
			return out.flush()
		}
		if records++; opts.Follow && records%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, out.flush())
			}
		}
	}
}

// openLog opens the log; when following, it waits for the file to appear.
func openLog(ctx context.Context, path string, follow bool, done func() bool, wt *waiter) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if err == nil {
			return f, nil
		}
		if !follow || !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("opening log %s: %w", path, err)
		}
		if done() {
			// The file may have been created just before done() turned true.
			if f, err = os.Open(path); err == nil {
				return f, nil
			}
			return nil, fmt.Errorf("opening log %s: %w", path, err)
		}
		if err := wt.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// readRecord reads one line (with its '\n', if any) into a reused buffer when
// it does not fit the reader's. The result is valid until the next call.
func readRecord(r *bufio.Reader, scratch *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append((*scratch)[:0], line...)
	for {
		line, err = r.ReadSlice('\n')
		buf = append(buf, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			*scratch = buf
			return buf, err
		}
	}
}

// tailStart returns the offset of the last n lines of f, as the kubelet's
// tail.FindTailLineStartIndex does: n < 0 means the start of the file, and an
// unterminated last line is not counted.
func tailStart(f *os.File, n int64) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, readBufSize)
	var seen int64
	for end := fi.Size(); end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for {
			i := bytes.LastIndexByte(b, '\n')
			if i < 0 {
				break
			}
			if seen++; seen > n {
				return start + int64(i) + 1, nil
			}
			b = b[:i]
		}
		end = start
	}
	return 0, nil
}

// output renders records onto the two streams per Options.
type output struct {
	opts   Options
	w      [2]*bufio.Writer
	last   int     // the stream written last, flushed before the other is written (keeps their order)
	atBOL  [2]bool // the next record of each stream starts a line
	remain int64
	ts     []byte
}

func newOutput(stdout, stderr io.Writer, opts Options) *output {
	o := &output{opts: opts, last: -1, atBOL: [2]bool{true, true}, remain: math.MaxInt64}
	for i, w := range []io.Writer{stdout, stderr} {
		if w != nil {
			o.w[i] = bufio.NewWriterSize(w, 32*1024)
		}
	}
	if opts.LimitBytes > 0 {
		o.remain = opts.LimitBytes
	}
	return o
}

// write renders one record: the kubelet's logWriter.write, with the timestamp
// (and Prefix) only at the start of a line, so a P-split line keeps one. The
// kubelet tracks line starts across both streams; tracking them per stream
// gives the same result for every log whose streams do not interleave inside
// a split line, and a correct one when they do.
func (o *output) write(rec *record) error {
	bol := o.atBOL[rec.stream]
	if n := len(rec.content); n > 0 {
		o.atBOL[rec.stream] = rec.content[n-1] == '\n'
	} else {
		o.atBOL[rec.stream] = true
	}
	if rec.ts.Before(o.opts.Since) {
		return nil
	}
	w := o.w[rec.stream]
	if w == nil {
		return nil
	}
	if o.last >= 0 && o.last != rec.stream {
		if err := o.w[o.last].Flush(); err != nil {
			return err
		}
	}
	o.last = rec.stream

	if bol && o.opts.Prefix != "" {
		if _, err := w.WriteString(o.opts.Prefix); err != nil {
			return err
		}
	}
	content := rec.content
	if bol && o.opts.Timestamps {
		o.ts = rec.ts.AppendFormat(o.ts[:0], timeFormatOut)
		o.ts = append(o.ts, ' ')
		ts := o.ts
		if int64(len(ts)) > o.remain {
			ts = ts[:o.remain]
		}
		n, err := w.Write(ts)
		o.remain -= int64(n)
		if err != nil {
			return err
		}
		if o.remain <= 0 {
			return errMaximumWrite
		}
	}
	if int64(len(content)) > o.remain {
		content = content[:o.remain]
	}
	n, err := w.Write(content)
	o.remain -= int64(n)
	if err != nil {
		return err
	}
	if o.remain <= 0 {
		return errMaximumWrite
	}
	return nil
}

func (o *output) flush() error {
	var errs []error
	for _, w := range o.w {
		if w != nil {
			if err := w.Flush(); err != nil {
				errs = append(errs, fmt.Errorf("writing log output: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// notifyEnabled lets tests exercise the poll-only fallback.
var notifyEnabled = true

// waiter waits for the log to change: an fsnotify watch on its directory
// (which also sees the file being created), with a poll as the fallback and
// to check done() regularly.
type waiter struct {
	path, dir string
	w         *fsnotify.Watcher
	noNotify  bool // fsnotify is unavailable (e.g. out of inotify instances): poll only
	watching  bool
}

// wait returns after the log may have changed, after pollInterval, or with
// ctx's error.
func (wt *waiter) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !wt.watching && !wt.noNotify && notifyEnabled {
		if wt.w == nil {
			w, err := fsnotify.NewWatcher()
			if err != nil {
				wt.noNotify = true
			}
			wt.w = w
		}
		if wt.w != nil && wt.w.Add(wt.dir) == nil {
			// Changes made before the watch began were not seen: look again first.
			wt.watching = true
			return nil
		}
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if wt.watching {
		events, errs = wt.w.Events, wt.w.Errors
	}
	timer := time.NewTimer(pollInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Name == wt.path {
				wt.drain()
				return nil
			}
		case _, ok := <-errs:
			// An overflowed or failed watch loses events; the poll covers for it.
			if !ok {
				errs = nil
			}
		}
	}
}

// drain discards queued events: the caller is about to read everything they announce.
func (wt *waiter) drain() {
	for {
		select {
		case _, ok := <-wt.w.Events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func (wt *waiter) close() {
	if wt.w != nil {
		wt.w.Close()
	}
}

// Termination-message limits the kubelet applies with FallbackToLogsOnError.
const (
	TerminationMessageLogLines = 80
	TerminationMessageLogBytes = 2048
)

// Tail returns the end of a finished log as the kubelet builds a
// FallbackToLogsOnError termination message: both streams of the last
// maxLines records (all when negative), of which the last maxBytes bytes are
// kept (all when not positive). Use TerminationMessageLogLines and
// TerminationMessageLogBytes for the kubelet's values.
func Tail(path string, maxLines int, maxBytes int) ([]byte, error) {
	buf := lastBytes{max: maxBytes}
	if maxBytes <= 0 {
		buf.max = math.MaxInt
	}
	if err := Read(context.Background(), path, Options{Tail: int64(maxLines)}, &buf, &buf, nil); err != nil {
		return nil, err
	}
	return buf.bytes(), nil
}

// lastBytes keeps the last max bytes written to it, like the kubelet's circbuf.
type lastBytes struct {
	max int
	b   []byte
}

func (l *lastBytes) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > l.max && len(l.b)-l.max > l.max+readBufSize {
		l.b = append(l.b[:0], l.b[len(l.b)-l.max:]...)
	}
	return len(p), nil
}

func (l *lastBytes) bytes() []byte {
	if len(l.b) > l.max {
		return l.b[len(l.b)-l.max:]
	}
	return l.b
}
