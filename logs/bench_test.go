package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const benchTotal = 200 << 20 // what the container writes

// benchRelay relays one run of produce's output (written into the pipe's
// write end, which it must close) into a fresh log and checks the log holds it all.
func benchRelay(b *testing.B, produce func(pw *os.File) error) {
	b.SetBytes(benchTotal)
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		path := filepath.Join(dir, fmt.Sprintf("%d.log", i))
		i++
		w, err := Create(path)
		if err != nil {
			b.Fatal(err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		produced := make(chan error, 1)
		go func() { produced <- produce(pw) }()
		if err := w.Relay(Stdout, pr); err != nil {
			b.Fatal(err)
		}
		if err := <-produced; err != nil {
			b.Fatal(err)
		}
		pr.Close()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() < benchTotal {
			b.Fatalf("log holds %d bytes, less than the %d written", fi.Size(), benchTotal)
		}
		os.Remove(path)
		b.StartTimer()
	}
}

// BenchmarkRelay relays 200 MiB written as fast as a goroutine can into a
// pipe, for several line lengths (100 KiB lines are split into P records).
func BenchmarkRelay(b *testing.B) {
	for _, lineLen := range []int{80, 1024, 100 << 10} {
		b.Run(fmt.Sprintf("line=%d", lineLen), func(b *testing.B) {
			line := strings.Repeat("x", lineLen-1) + "\n"
			block := []byte(strings.Repeat(line, max(1, (1<<20)/lineLen)))
			benchRelay(b, func(pw *os.File) error {
				defer pw.Close()
				for left := benchTotal; left > 0; {
					n := min(left, len(block))
					if _, err := pw.Write(block[:n]); err != nil {
						return err
					}
					left -= n
				}
				return nil
			})
		})
	}
}

// BenchmarkRelayProcess relays a real process writing 200 MiB of 80-byte
// lines to its stdout (yes | head), as a container's output arrives.
func BenchmarkRelayProcess(b *testing.B) {
	if _, err := exec.LookPath("yes"); err != nil {
		b.Fatalf("yes: %v", err)
	}
	script := fmt.Sprintf("yes %s | head -c %d", bytes.Repeat([]byte{'x'}, 79), benchTotal)
	benchRelay(b, func(pw *os.File) error {
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout = pw
		err := cmd.Run()
		pw.Close()
		return err
	})
}

// BenchmarkRead prints a 200 MiB log of 80-byte lines (what podrun logs does)
// into a discarding writer.
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "0.log")
	w, err := Create(path)
	if err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("x", 79) + "\n"
	if err := w.Relay(Stdout, strings.NewReader(strings.Repeat(line, benchTotal/len(line)))); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchTotal)
	for b.Loop() {
		var n countingWriter
		if err := Read(context.Background(), path, Options{Tail: -1}, &n, &n, nil); err != nil {
			b.Fatal(err)
		}
		if n < benchTotal/80*80 {
			b.Fatalf("read %d bytes", n)
		}
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
