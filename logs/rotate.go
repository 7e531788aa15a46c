package logs

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Rotation follows the kubelet's container log manager
// (pkg/kubelet/logs/container_log_manager.go, rotateLog): when the log reaches
// its maximum size, the rotated files beyond MaxFiles-2 are removed (oldest
// first), the remaining rotated files are compressed to <log>.<timestamp>.gz,
// and the log itself is renamed to <log>.<timestamp> (left uncompressed, so
// that readers finish it) and reopened. So a container never has more than
// MaxFiles files: the live log, the newest rotated one, and MaxFiles-2
// compressed ones.
//
// Unlike the kubelet, which checks every 10 s and so lets a fast writer go
// far past the limit, the writer rotates before a write would take the file
// past MaxSize, at a record boundary. Compression runs in the background so
// that the container's output is never held up by it.
const (
	// DefaultMaxSize and DefaultMaxFiles are the kubelet's
	// --container-log-max-size and --container-log-max-files defaults.
	DefaultMaxSize  = 10 * 1024 * 1024
	DefaultMaxFiles = 5

	// rotateTimeFormat is the kubelet's timestampFormat for rotated logs.
	rotateTimeFormat = "20060102-150405"
	compressSuffix   = ".gz"
	tmpSuffix        = ".tmp"
)

// rotatedLogs lists the rotated files of the log at path, oldest first, as
// the kubelet's cleanupUnusedLogs leaves them: temporary files and files that
// already have their compressed copy are left out (and removed when clean is
// set).
func rotatedLogs(path string, clean bool) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	prefix := base + "."
	names := map[string]bool{}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, prefix) && len(n) > len(prefix) {
			names[n] = true
		}
	}
	var out []string
	for n := range names {
		unused := strings.HasSuffix(n, tmpSuffix) || (!strings.HasSuffix(n, compressSuffix) && names[n+compressSuffix])
		if unused {
			if clean {
				_ = os.Remove(filepath.Join(dir, n))
			}
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	sortRotated(out, path)
	return out, nil
}

// sortRotated orders rotated files oldest first: by the timestamp in their
// name, then by the sequence number a rotation within the same second adds.
// (The kubelet sorts the names as strings; it rotates at most every 10 s.)
func sortRotated(files []string, path string) {
	key := func(f string) (string, int) {
		s := strings.TrimSuffix(strings.TrimPrefix(f, path+"."), compressSuffix)
		ts, seq, ok := strings.Cut(s, "~")
		if !ok {
			return ts, 0
		}
		n, _ := strconv.Atoi(seq)
		return ts, n
	}
	sort.Slice(files, func(i, j int) bool {
		ti, ni := key(files[i])
		tj, nj := key(files[j])
		if ti != tj {
			return ti < tj
		}
		return ni < nj
	})
}

// rotatedName is the name the live log gets at rotation: <log>.<timestamp>,
// with "~<n>" added when the log was already rotated within that second. Names
// only grow, so that the order of the files stays the order of their content
// even when a name was used and its file removed since.
func (w *Writer) rotatedName() string {
	ts := w.now().Format(rotateTimeFormat)
	seq := 0
	if ts <= w.lastRotated.ts {
		ts, seq = w.lastRotated.ts, w.lastRotated.seq+1
	}
	for ; ; seq++ {
		name := w.path + "." + ts
		if seq > 0 {
			name += "~" + strconv.Itoa(seq)
		}
		_, err1 := os.Lstat(name)
		_, err2 := os.Lstat(name + compressSuffix)
		if errors.Is(err1, fs.ErrNotExist) && errors.Is(err2, fs.ErrNotExist) {
			w.lastRotated.ts, w.lastRotated.seq = ts, seq
			return name
		}
	}
}

// rotate rotates the live log; w.mu is held. On failure the live log stays
// as it was and writing goes on into it.
func (w *Writer) rotate() error {
	w.compressing.Wait() // the previous rotation's compression, so files never exceed MaxFiles
	rotated, err := rotatedLogs(w.path, true)
	if err != nil {
		return fmt.Errorf("rotating log %s: %w", w.path, err)
	}
	keep := max(w.opts.MaxFiles-2, 0)
	for len(rotated) > keep {
		if err := os.Remove(rotated[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotating log %s: removing old log: %w", w.path, err)
		}
		rotated = rotated[1:]
	}
	name := w.rotatedName()
	if err := os.Rename(w.path, name); err != nil {
		return fmt.Errorf("rotating log %s: %w", w.path, err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		// Keep writing into the old file rather than lose output.
		if rerr := os.Rename(name, w.path); rerr != nil {
			return errors.Join(fmt.Errorf("rotating log %s: %w", w.path, err), rerr)
		}
		return fmt.Errorf("rotating log %s: %w", w.path, err)
	}
	_ = w.f.Close()
	w.f, w.size = f, 0
	var plain []string
	for _, r := range rotated {
		if !strings.HasSuffix(r, compressSuffix) {
			plain = append(plain, r)
		}
	}
	if len(plain) > 0 {
		w.compressing.Add(1)
		go func() {
			defer w.compressing.Done()
			for _, p := range plain {
				if err := compressLog(p); err != nil {
					w.notify(Notice{Kind: RotateFailed, Err: err})
				}
			}
		}()
	}
	return nil
}

// compressLog is the kubelet's compressLog: gzip into <log>.gz.tmp, rename
// it to <log>.gz, remove <log>.
func compressLog(log string) (err error) {
	in, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	defer in.Close()
	tmp := log + compressSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	if err := os.Rename(tmp, log+compressSuffix); err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	if err := os.Remove(log); err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	return nil
}

// RemoveRun removes the log of one container run with its rotated files, as
// the kubelet's containerLogManager.Clean does when the container is removed.
func RemoveRun(path string) error {
	var errs []error
	rotated, _ := rotatedLogs(path, true)
	for _, p := range append(rotated, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// segment is one rotated file read before the live log.
type segment struct {
	path string
	f    *os.File
	skip int64 // records to skip at the start (for Tail)
}

// openHistory opens the rotated files of the log at path, oldest first,
// leaving out the live file (in case it was rotated after it was opened). A
// file that is compressed or removed between listing and opening is looked
// for as its .gz, else skipped.
func openHistory(path string, live *os.File) ([]*segment, error) {
	names, err := rotatedLogs(path, false)
	if err != nil {
		return nil, nil // no directory: no history
	}
	liveInfo, _ := live.Stat()
	var out []*segment
	for _, n := range names {
		f, err := os.Open(n)
		if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(n, compressSuffix) {
			n += compressSuffix
			f, err = os.Open(n)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			closeSegments(out)
			return nil, fmt.Errorf("opening log %s: %w", n, err)
		}
		if fi, err := f.Stat(); err == nil && liveInfo != nil && os.SameFile(fi, liveInfo) {
			f.Close()
			continue
		}
		out = append(out, &segment{path: n, f: f})
	}
	return out, nil
}

func closeSegments(segs []*segment) {
	for _, s := range segs {
		s.f.Close()
	}
}

// reader returns the segment's content from its start.
func (s *segment) reader() (io.Reader, error) {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(s.path, compressSuffix) {
		return s.f, nil
	}
	return gzip.NewReader(bufio.NewReaderSize(s.f, readBufSize))
}

// countLines counts the segment's '\n'-terminated records.
func (s *segment) countLines() (int64, error) {
	r, err := s.reader()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, readBufSize)
	var n int64
	for {
		k, err := r.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' {
				n++
			}
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// tailHistory sets each segment's skip so that the segments give the `need`
// last records before the live file; segments that contribute nothing are
// dropped (and closed).
func tailHistory(segs []*segment, need int64) ([]*segment, error) {
	first := len(segs)
	for i := len(segs) - 1; i >= 0 && need > 0; i-- {
		n, err := segs[i].countLines()
		if err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("reading log %s: %w", segs[i].path, err)
		}
		first = i
		if n >= need {
			segs[i].skip = n - need
			need = 0
			break
		}
		need -= n
	}
	closeSegments(segs[:first])
	return segs[first:], nil
}
