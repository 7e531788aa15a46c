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
// stream (a nil writer drops that stream). The log's rotated files (see
// WriterOptions) are read first, oldest first, so the output is the run's
// whole retained log. Without Follow it prints what the files hold and
// returns; a missing file is an error (wrapping fs.ErrNotExist).
//
// With Follow, it waits for the file to appear, prints what it holds, and
// keeps printing new records until done() returns true, then prints the rest
// and returns nil; when the file is rotated meanwhile it finishes the rotated
// file and goes on with the new one, as the kubelet's ReadLogs does. done
// must only return true once the container has exited and its Relay calls
// have returned (the file is complete); it may be nil, and then Read follows
// until ctx ends, returning ctx.Err().
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
	rf := &rotationFollower{path: path}
	defer func() {
		f.Close()
		if rf.next != nil {
			rf.next.Close()
		}
		closeSegments(rf.queue)
	}()

	start, found, err := tailStartCount(f, opts.Tail)
	if err != nil {
		return fmt.Errorf("finding the last %d lines of log %s: %w", opts.Tail, path, err)
	}
	history, err := openHistory(path, f)
	if err != nil {
		return err
	}
	if opts.Tail >= 0 {
		if history, err = tailHistory(history, opts.Tail-found); err != nil {
			return err
		}
	}
	defer closeSegments(history)

	out := newOutput(stdout, stderr, opts)
	sink := &recordSink{path: path, out: out, first: true, limited: opts.Tail >= 0 && !opts.Follow, left: opts.Tail}
	var scratch []byte
	for _, seg := range history {
		stop, err := sink.segment(seg, &scratch)
		if err != nil {
			return errors.Join(err, out.flush())
		}
		if stop {
			return out.flush()
		}
	}

	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seeking to %d in log %s: %w", start, path, err)
	}
	r := bufio.NewReaderSize(f, readBufSize)
	final := !opts.Follow // once set, the next EOF ends the read
	records := 0
	var lastDone time.Time
	for {
		if sink.full() {
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
			if switched, err := rf.check(&f, r, sink, &scratch); err != nil || switched {
				if err != nil {
					return ignoreMaximumWrite(err, out)
				}
				continue
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
		if len(line) > 0 {
			// A complete record, or (at the final EOF) an incomplete last one,
			// which the kubelet prints too.
			stop, err := sink.take(line)
			if err != nil {
				return errors.Join(err, out.flush())
			}
			if stop {
				return out.flush()
			}
		}
		if rerr != nil {
			// The final EOF: a follower goes on with the live file if its
			// file was rotated before the container ended.
			if opts.Follow {
				if switched, err := rf.check(&f, r, sink, &scratch); err != nil || switched {
					if err != nil {
						return ignoreMaximumWrite(err, out)
					}
					continue
				}
			}
			return out.flush()
		}
		if records++; opts.Follow && records%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, out.flush())
			}
		}
	}
}

// ignoreMaximumWrite ends a read: errMaximumWrite (joined with a real error
// or not) says the output is complete.
func ignoreMaximumWrite(err error, out *output) error {
	if errors.Is(err, errMaximumWrite) {
		var errs []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !errors.Is(e, errMaximumWrite) {
					errs = append(errs, e)
				}
			}
		}
		return errors.Join(append(errs, out.flush())...)
	}
	return errors.Join(err, out.flush())
}

// rotationFollower moves a follower on from a log file that was rotated away.
type rotationFollower struct {
	path  string
	next  *os.File   // the new live file
	queue []*segment // files rotated after ours and before next
}

// check is called at EOF. The first call that sees a new file at path opens
// it, and the files rotated between ours and it, and returns true: the old
// file is then read to its end (the writer may have written to it just
// before the rotation). The call at the old file's next EOF renders the
// files in between and switches to the new one.
func (rf *rotationFollower) check(f **os.File, r *bufio.Reader, sink *recordSink, scratch *[]byte) (bool, error) {
	if rf.next != nil {
		(*f).Close()
		*f, rf.next = rf.next, nil
		r.Reset(*f)
		queue := rf.queue
		rf.queue = nil
		defer closeSegments(queue)
		for _, seg := range queue {
			if stop, err := sink.segment(seg, scratch); err != nil || stop {
				return true, errors.Join(err, errMaximumWrite)
			}
		}
		return true, nil
	}
	cur, err := (*f).Stat()
	if err != nil {
		return false, fmt.Errorf("reading log %s: %w", rf.path, err)
	}
	st, err := os.Stat(rf.path)
	if err != nil || os.SameFile(cur, st) {
		return false, nil // not rotated (or the new file is not there yet)
	}
	nf, err := os.Open(rf.path)
	if err != nil {
		return false, nil
	}
	segs, _ := openHistory(rf.path, nf)
	own := ownSegment(*f, segs)
	closeSegments(segs[:own+1])
	rf.next, rf.queue = nf, segs[own+1:]
	return true, nil
}

// ownSegment finds the rotated file that f was: the same file, else (it was
// compressed since) the one that starts with the same record. It returns -1
// when f's file is gone, which rotation does to the oldest files only.
func ownSegment(f *os.File, segs []*segment) int {
	fi, err := f.Stat()
	if err != nil {
		return -1
	}
	for i, s := range segs {
		if si, err := s.f.Stat(); err == nil && os.SameFile(fi, si) {
			return i
		}
	}
	first := firstLine(f)
	if len(first) == 0 {
		return -1
	}
	for i, s := range segs {
		if r, err := s.reader(); err == nil && bytes.Equal(firstLine(r), first) {
			return i
		}
	}
	return -1
}

// firstLine returns the first record of a log (at most one read buffer of it).
func firstLine(r io.Reader) []byte {
	if f, ok := r.(*os.File); ok {
		r = io.NewSectionReader(f, 0, readBufSize)
	}
	line, _ := bufio.NewReaderSize(r, readBufSize).ReadSlice('\n')
	return append([]byte(nil), line...)
}

// recordSink renders the records of one read: it parses lines, skips bad
// ones as the kubelet does, and counts toward Tail.
type recordSink struct {
	path    string
	out     *output
	first   bool
	limited bool
	left    int64
}

func (s *recordSink) full() bool { return s.limited && s.left == 0 }

// take renders one line; stop says the read is complete.
func (s *recordSink) take(line []byte) (stop bool, err error) {
	if s.full() {
		return true, nil
	}
	rec, err := parseRecord(line)
	if err != nil {
		if s.first {
			// The kubelet fails when the first line is not a log format it knows.
			return true, fmt.Errorf("reading log %s: unsupported log format %q: %w", s.path, line[:min(len(line), 80)], err)
		}
		// Later malformed lines are skipped, as the kubelet does.
		return false, nil
	}
	s.first = false
	if err := s.out.write(&rec); err != nil {
		if errors.Is(err, errMaximumWrite) {
			return true, nil
		}
		return true, fmt.Errorf("writing log %s: %w", s.path, err)
	}
	if s.limited {
		s.left--
	}
	return false, nil
}

// segment renders a rotated file after skipping its first seg.skip records.
func (s *recordSink) segment(seg *segment, scratch *[]byte) (bool, error) {
	rd, err := seg.reader()
	if err != nil {
		return false, fmt.Errorf("reading log %s: %w", seg.path, err)
	}
	r := bufio.NewReaderSize(rd, readBufSize)
	for skip := seg.skip; ; {
		line, rerr := readRecord(r, scratch)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return false, fmt.Errorf("reading log %s: %w", seg.path, rerr)
		}
		if len(line) > 0 {
			if skip > 0 {
				skip--
			} else if stop, err := s.take(line); err != nil || stop {
				return stop, err
			}
		}
		if rerr != nil {
			return false, nil
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
	off, _, err := tailStartCount(f, n)
	return off, err
}

// tailStartCount is tailStart that also says how many of the n lines it found.
func tailStartCount(f *os.File, n int64) (int64, int64, error) {
	if n < 0 {
		return 0, 0, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, readBufSize)
	var seen int64
	for end := fi.Size(); end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for {
			i := bytes.LastIndexByte(b, '\n')
			if i < 0 {
				break
			}
			if seen++; seen > n {
				return start + int64(i) + 1, n, nil
			}
			b = b[:i]
		}
		end = start
	}
	return 0, seen, nil
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
