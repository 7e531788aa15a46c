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

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// Create creates the log file's directories and opens the file for appending,
// as containerd does (O_APPEND|O_CREATE, mode 0640).
func Create(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating directory for log %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening log %s: %w", path, err)
	}
	return &Writer{path: path, maxLen: MaxLineSize, now: time.Now, f: f}, nil
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

// Close closes the log file. Call it after every Relay has returned.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("closing log %s: %w", w.path, err)
	}
	return nil
}

// write appends a batch of whole records under the lock, so the two streams'
// records never interleave inside a record.
func (w *Writer) write(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	_, err := w.f.Write(b)
	return err
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
