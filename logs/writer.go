// Package logs writes and reads container logs in the CRI log format, the way
// containerd writes them and the kubelet reads them:
//
//	<RFC3339Nano timestamp> <stdout|stderr> <F|P> <content>\n
//
// The writer follows containerd's internal/cri/io/logger.go (redirectLogs):
// lines longer than MaxLineSize are split into P records with the remainder in
// a final F record, a "\r\n" line ending loses its '\r', and output that ends
// without a newline is written as a P record. The reader follows the kubelet's
// pkg/kubelet/kuberuntime/logs/logs.go (ReadLogs): tail, since, timestamps,
// limitBytes and follow.
package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The CRI stream names.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxLineSize is the longest content of one record, containerd's default
// max_container_log_line_size; longer lines are split into P records.
const MaxLineSize = 16 * 1024

const (
	// readBufSize matches the default pipe capacity, so one read drains a full pipe.
	readBufSize = 64 * 1024
	// flushSize bounds the batch of records written with one write(2).
	flushSize = 256 * 1024
	// timestampFormat is what containerd writes (variable width, trailing zeros trimmed).
	timestampFormat = time.RFC3339Nano
)

// Writer is one log file, shared by both streams of one container run. Each
// stream is relayed by its own Relay call; records of the two streams
// interleave whole, never mid-record.
type Writer struct {
	path   string
	maxLen int
	now    func() time.Time
	opts   WriterOptions

	mu     sync.Mutex
	f      *os.File
	size   int64 // of the live file
	closed bool
	// retryRotateAt is the size at which a failed rotation is tried again.
	retryRotateAt int64
	// dropping is the ongoing loss: output that could not be written.
	dropping *Notice
	dropped  [2]int64 // bytes and records lost over the writer's life

	compressing sync.WaitGroup
	lastRotated struct {
		ts  string
		seq int
	}
}

// WriterOptions are the log's rotation policy and where its trouble is reported.
type WriterOptions struct {
	// MaxSize is the size at which the log is rotated (0: never), the
	// kubelet's --container-log-max-size.
	MaxSize int64
	// MaxFiles is how many files the log may have, the live one included
	// (the kubelet's --container-log-max-files; at least 2 when MaxSize is set).
	MaxFiles int
	// Notify, when set, is told about output that could not be written (so
	// that it is reported, never dropped silently) and about failed
	// rotations. It may be called with the writer's lock held, and from a
	// goroutine of the writer: it must not call the writer.
	Notify func(Notice)
}

// NoticeKind says what a Notice reports.
type NoticeKind int

const (
	// DropStarted: a write failed; from now on lost output is counted.
	DropStarted NoticeKind = iota
	// DropEnded: writing works again (or the log was closed); Bytes and
	// Records say how much output was lost since DropStarted.
	DropEnded
	// RotateFailed: the log could not be rotated or compressed; writing goes on.
	RotateFailed
)

// Notice is a problem with the log that its owner should report.
type Notice struct {
	Kind           NoticeKind
	Bytes, Records int64
	Err            error
}

// Create creates the log file's directories and opens the file for appending,
// as containerd does (O_APPEND|O_CREATE, mode 0640). The log is never rotated.
func Create(path string) (*Writer, error) { return Open(path, WriterOptions{}) }

// Open is Create with a rotation policy and a place to report trouble.
func Open(path string, opts WriterOptions) (*Writer, error) {
	if opts.MaxSize > 0 && opts.MaxFiles < 2 {
		return nil, fmt.Errorf("opening log %s: at least 2 log files are needed to rotate, not %d", path, opts.MaxFiles)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating directory for log %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening log %s: %w", path, err)
	}
	w := &Writer{path: path, maxLen: MaxLineSize, now: time.Now, f: f, opts: opts}
	if fi, err := f.Stat(); err == nil {
		w.size = fi.Size()
	}
	return w, nil
}

// Dropped is how much output could not be written over the writer's life.
func (w *Writer) Dropped() (bytes, records int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped[0], w.dropped[1]
}

// Path is the log file's path.
func (w *Writer) Path() string { return w.path }

// Relay copies r into the log as records of stream ("stdout" or "stderr")
// until r reports EOF (or EIO, which is how a terminal's master side ends),
// then writes what is left of an unterminated line as a P record and returns.
// Every record is written by the time Relay returns. Like containerd, Relay
// keeps draining r after a write error, so a container never blocks on a full
// pipe; it returns the first write error at the end.
func (w *Writer) Relay(stream string, r io.Reader) error {
	if stream != Stdout && stream != Stderr {
		return fmt.Errorf("relaying into log %s: unknown stream %q, want %q or %q", w.path, stream, Stdout, Stderr)
	}
	rl := &relay{w: w, stream: stream, maxLen: w.maxLen}
	buf := make([]byte, readBufSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			// One clock reading per read: the bytes of one read arrived together,
			// and formatting a timestamp per line would cost more than the copy.
			rl.stamp()
			rl.feed(buf[:n])
			rl.flush()
		}
		if err != nil {
			rl.stamp()
			rl.finish()
			rl.flush()
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO) {
				return rl.werr
			}
			return errors.Join(fmt.Errorf("reading %s for log %s: %w", stream, w.path, err), rl.werr)
		}
	}
}

// Close closes the log file, after any compression of rotated files has
// finished, and reports output lost until then. Call it after every Relay has returned.
func (w *Writer) Close() error {
	w.compressing.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.endDrop()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("closing log %s: %w", w.path, err)
	}
	return nil
}

// write appends a batch of whole records under the lock, so the two streams'
// records never interleave inside a record. With a MaxSize the log is
// rotated at a record boundary before it would grow past it.
func (w *Writer) write(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	var first error
	for len(b) > 0 {
		n := len(b)
		if maxSize := w.opts.MaxSize; maxSize > 0 && w.size+int64(n) > maxSize {
			if w.size == 0 {
				// As many whole records as fit, and at least one.
				if i := bytes.LastIndexByte(b[:min(int64(n), maxSize)], '\n'); i >= 0 {
					n = i + 1
				} else if i := bytes.IndexByte(b, '\n'); i >= 0 {
					n = i + 1
				}
			} else if i := bytes.LastIndexByte(b[:min(int64(n), max(maxSize-w.size, 0))], '\n'); i >= 0 {
				n = i + 1 // what fits before rotating
			} else if w.size >= w.retryRotateAt {
				if err := w.rotate(); err != nil {
					w.retryRotateAt = w.size + maxSize
					w.notify(Notice{Kind: RotateFailed, Err: err})
				} else {
					w.retryRotateAt = 0
					continue
				}
			}
		}
		if err := w.put(b[:n]); err != nil && first == nil {
			first = err
		}
		b = b[n:]
	}
	return first
}

// put writes whole records to the live file. A failed write is undone (a
// torn record would corrupt the next one) and the lost output is counted.
func (w *Writer) put(b []byte) error {
	n, err := w.f.Write(b)
	if err != nil {
		if n > 0 {
			_ = w.f.Truncate(w.size)
		}
		if w.dropping == nil {
			w.dropping = &Notice{Kind: DropEnded, Err: err}
			w.notify(Notice{Kind: DropStarted, Err: err})
		}
		lines := int64(bytes.Count(b, []byte{'\n'}))
		w.dropping.Bytes += int64(len(b))
		w.dropping.Records += lines
		w.dropped[0] += int64(len(b))
		w.dropped[1] += lines
		return err
	}
	w.size += int64(n)
	w.endDrop()
	return nil
}

// endDrop reports the end of an ongoing loss.
func (w *Writer) endDrop() {
	if w.dropping != nil {
		d := *w.dropping
		w.dropping = nil
		w.notify(d)
	}
}

func (w *Writer) notify(n Notice) {
	if w.opts.Notify != nil {
		w.opts.Notify(n)
	}
}

var crByte = []byte{'\r'}

// relay turns one stream's bytes into records. It reproduces containerd's
// redirectLogs output for any chunking of the input: content is split into P
// records only once it exceeds maxLen, and a '\r' ending a read is held back
// until the next byte shows whether it belongs to a "\r\n" line ending.
type relay struct {
	w      *Writer
	stream string
	maxLen int

	hdr  []byte // "<timestamp> <stream> " for the current read
	cur  []byte // content of the unfinished line, at most maxLen bytes
	cr   bool   // the last read ended in a withheld '\r'
	out  []byte // records not yet written
	werr error  // first write error
}

func (rl *relay) stamp() {
	rl.hdr = rl.w.now().AppendFormat(rl.hdr[:0], timestampFormat)
	rl.hdr = append(rl.hdr, ' ')
	rl.hdr = append(rl.hdr, rl.stream...)
	rl.hdr = append(rl.hdr, ' ')
}

// feed consumes one read's bytes.
func (rl *relay) feed(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			rl.releaseCR()
			if data[len(data)-1] == '\r' {
				rl.cr = true
				data = data[:len(data)-1]
			}
			rl.add(data)
			return
		}
		line := data[:i]
		data = data[i+1:]
		if rl.cr {
			rl.cr = false
			if i > 0 { // the withheld '\r' was content, not half of "\r\n"
				rl.add(crByte)
			}
		}
		if i > 0 && line[i-1] == '\r' {
			line = line[:i-1]
		}
		rest := rl.split(line)
		rl.emit('F', rl.cur, rest)
		rl.cur = rl.cur[:0]
	}
}

// finish ends the stream: an unterminated line becomes a P record, as in containerd.
func (rl *relay) finish() {
	rl.releaseCR()
	if len(rl.cur) > 0 {
		rl.emit('P', rl.cur, nil)
		rl.cur = rl.cur[:0]
	}
}

func (rl *relay) releaseCR() {
	if rl.cr {
		rl.cr = false
		rl.add(crByte)
	}
}

// add appends content to the unfinished line.
func (rl *relay) add(b []byte) {
	rest := rl.split(b)
	if rl.cur == nil {
		rl.cur = make([]byte, 0, rl.maxLen)
	}
	rl.cur = append(rl.cur, rest...)
}

// split writes P records while the unfinished line plus b exceeds maxLen and
// returns the part of b that is left.
func (rl *relay) split(b []byte) []byte {
	for len(rl.cur)+len(b) > rl.maxLen {
		k := rl.maxLen - len(rl.cur)
		rl.emit('P', rl.cur, b[:k])
		rl.cur = rl.cur[:0]
		b = b[k:]
	}
	return b
}

// emit appends one record whose content is a followed by b.
func (rl *relay) emit(tag byte, a, b []byte) {
	rl.out = append(rl.out, rl.hdr...)
	rl.out = append(rl.out, tag, ' ')
	rl.out = append(rl.out, a...)
	rl.out = append(rl.out, b...)
	rl.out = append(rl.out, '\n')
	if len(rl.out) >= flushSize {
		rl.flush()
	}
}

func (rl *relay) flush() {
	if len(rl.out) == 0 {
		return
	}
	if err := rl.w.write(rl.out); err != nil && rl.werr == nil {
		rl.werr = fmt.Errorf("writing %s to log %s: %w", rl.stream, rl.w.path, err)
	}
	rl.out = rl.out[:0]
}
