package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// logLine is what the log container repeats: 127 characters and a newline,
// so that 200 MiB are whole lines.
var logLine = strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 4)[:127]

// The pod of (5a): a container writing bytes to stdout as fast as it can.
// `yes | head -c` itself manages only ~200 MB/s here (busybox writes 4 KiB
// at a time), so an init container writes the lines to a memory-backed
// emptyDir first and the container measured cats them (busybox cat uses
// sendfile: ~4 GB/s into a pipe on this host).
const floodPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: flood
spec:
  restartPolicy: Never
  initContainers:
  - name: prepare
    image: busybox:1.28
    command: ["sh", "-c", "yes %s | head -c %d > /data/out"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: c
    image: busybox:1.28
    command: ["cat", "/data/out"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {medium: Memory}
`

// The pod of (5b): a container printing its own clock (µs since the epoch,
// from adjtimex(2), which needs no privilege to read) every 200 ms.
const followPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: follow
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command:
    - sh
    - -c
    - |
      sleep 1
      %s
`

// stampLoop prints the clock n times, 200 ms apart.
func stampLoop(n int) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do adjtimex | awk '/tv_sec/ {s=$2} /tv_usec/ {u=$2} END {printf "%%d%%06d\n", s, u}'; sleep 0.2; done`, n)
}

type logsResult struct {
	bytes int64
	// capture is Started → the exit published, which waits for the last byte
	// to be in the log file.
	capture  time.Duration
	late     bool
	fileSize int64
	// exact says `podrun logs` returned exactly what the container wrote.
	exact              bool
	gotSum, wantSum    string
	gotBytes           int64
	read               time.Duration
	source             time.Duration // the same command on the host, into a pipe
	followTotal        samples       // container clock → `logs -f` printed it
	followCapture      samples       // container clock → the log record's timestamp
	followPrint        samples       // log record's timestamp → printed
	stampSelf          samples       // the clock pipeline alone, on the host
	followLines, lines int
	historyLines       int // lines written before the follower started, not in the figures
}

func logsBench(e *env, size int64, busybox string) (*logsResult, error) {
	res := &logsResult{bytes: size}
	path, err := e.manifest("flood", fmt.Sprintf(floodPodYAML, logLine, size))
	if err != nil {
		return nil, err
	}
	watch, err := watchExit(e.l.PodsDir(), "flood", "c")
	if err != nil {
		return nil, err
	}
	if _, err := e.run("apply", path, "--wait", "--timeout", "5m"); err != nil {
		return nil, err
	}
	seen, err := watch.wait(time.Minute)
	if err != nil {
		return nil, err
	}
	rec, err := e.record("flood")
	if err != nil {
		return nil, err
	}
	if rec.Pod.Status.Phase != corev1.PodSucceeded {
		return nil, fmt.Errorf("pod flood is %s, want Succeeded", rec.Pod.Status.Phase)
	}
	evs, err := e.podEvents(rec)
	if err != nil {
		return nil, err
	}
	started, err := evs.must("Started", appObject("c"))
	if err != nil {
		return nil, err
	}
	res.capture, res.late = seen.written.Sub(started), seen.late
	if st, err := os.Stat(rec.LogPath("c", 0)); err == nil {
		res.fileSize = st.Size()
	}

	// What `podrun logs` returns, hashed as it streams.
	res.wantSum = expectedSum(size)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "logs", "flood")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	h := sha256.New()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res.gotBytes, err = io.Copy(h, out)
	if werr := cmd.Wait(); werr != nil || err != nil {
		return nil, fmt.Errorf("podrun logs flood: %v %v: %s", werr, err, stderr.String())
	}
	res.read = time.Since(t0)
	res.gotSum = hex.EncodeToString(h.Sum(nil))
	res.exact = res.gotSum == res.wantSum && res.gotBytes == size
	if _, err := e.run("delete", "flood", "--force"); err != nil {
		return nil, err
	}

	if busybox != "" {
		if res.source, err = sourceRate(busybox, e.dir, size); err != nil {
			return nil, err
		}
	}
	if err := followBench(e, res, busybox); err != nil {
		return nil, err
	}
	return res, nil
}

// expectedSum is the sha256 of `yes logLine | head -c size`.
func expectedSum(size int64) string {
	h := sha256.New()
	chunk := []byte(strings.Repeat(logLine+"\n", 8192))
	for left := size; left > 0; {
		n := min(left, int64(len(chunk)))
		h.Write(chunk[:n])
		left -= n
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sourceRate cats the same bytes from a file in the page cache on the host
// into a pipe that the bench drains: how fast the writer alone goes.
func sourceRate(busybox, dir string, size int64) (time.Duration, error) {
	path := filepath.Join(dir, "flood.out")
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	chunk := []byte(strings.Repeat(logLine+"\n", 8192))
	for left := size; left > 0; {
		n := min(left, int64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			f.Close()
			return 0, err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	cmd := exec.Command(busybox, "cat", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, out)
	if werr := cmd.Wait(); werr != nil || err != nil || n != size {
		return 0, fmt.Errorf("running the log writer on the host: %v %v (%d bytes)", werr, err, n)
	}
	return time.Since(t0), nil
}

// followBench measures how long a line takes from the container to
// `podrun logs -f --timestamps`.
func followBench(e *env, res *logsResult, busybox string) error {
	const lines = 20
	path, err := e.manifest("follow", fmt.Sprintf(followPodYAML, stampLoop(lines)))
	if err != nil {
		return err
	}
	// Not `apply --wait`: that waits for a restartPolicy Never pod to finish
	// (since 9aa6865), and every line would then be read from history, not
	// followed. The container sleeps a second before its first line, so the
	// follower is up before it; a line stamped before the follower started
	// is counted apart (historyLines) and left out of the figures.
	if _, err := e.run("apply", path); err != nil {
		return err
	}
	if _, err := e.run("wait", "pod/follow", "--for=jsonpath={.status.phase}=Running", "--timeout", "1m"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "logs", "-f", "--timestamps", "follow")
	followFrom := time.Now()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		arrived := time.Now()
		stamp, rest, ok := strings.Cut(sc.Text(), " ")
		record, err1 := time.Parse(time.RFC3339Nano, stamp)
		us, err2 := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("podrun logs -f --timestamps printed %q", sc.Text())
		}
		wrote := time.UnixMicro(us)
		if record.Before(followFrom) {
			res.historyLines++
			continue
		}
		res.followTotal = append(res.followTotal, arrived.Sub(wrote))
		res.followCapture = append(res.followCapture, record.Sub(wrote))
		res.followPrint = append(res.followPrint, arrived.Sub(record))
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("podrun logs -f follow: %w: %s", err, stderr.String())
	}
	res.lines, res.followLines = lines, len(res.followTotal)
	if res.followLines+res.historyLines != lines {
		return fmt.Errorf("podrun logs -f printed %d lines, the container wrote %d", res.followLines, lines)
	}
	if _, err := e.run("delete", "follow", "--force"); err != nil {
		return err
	}
	if busybox == "" {
		return nil
	}
	// The same clock pipeline on the host, read straight from its pipe: the
	// part of the delay that is the container's own (fork, awk, exit).
	cmd = exec.Command(busybox, "sh", "-c", strings.ReplaceAll(strings.ReplaceAll(stampLoop(lines), "adjtimex", busybox+" adjtimex"), "awk", busybox+" awk"))
	hostOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc = bufio.NewScanner(hostOut)
	for sc.Scan() {
		arrived := time.Now()
		us, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			return fmt.Errorf("the clock pipeline printed %q", sc.Text())
		}
		res.stampSelf = append(res.stampSelf, arrived.Sub(time.UnixMicro(us)))
	}
	return cmd.Wait()
}
