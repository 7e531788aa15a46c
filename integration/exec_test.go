package integration

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExec(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.28
    env: [{name: GREETING, value: hello}]
    workingDir: /tmp
    command: ['sleep', '3600']
`, "--wait")
	// The container's env and working directory; the command's exit code.
	r := e.podrun("exec", "shell", "--", "sh", "-c", `echo "$GREETING from $(pwd)"; exit 7`)
	if r.code != 7 || r.stdout != "hello from /tmp\n" {
		t.Fatalf("exec: %s", r)
	}
	// -i passes stdin.
	if r := e.podrunIn("piped input\n", "exec", "-i", "shell", "--", "cat"); r.stdout != "piped input\n" {
		t.Fatalf("exec -i: %s", r)
	}
	// -it on a terminal: a shell with a terminal of the caller's size.
	ptm, tty := imgOpenPty(t)
	defer ptm.Close()
	cmd := exec.Command(podrunBin, e.args("exec", "-it", "shell", "--", "sh")...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if _, err := io.WriteString(ptm, "tty; stty size; exit 5\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 5 {
			t.Fatalf("exec -it exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("exec -it did not end")
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	got := out.String()
	mu.Unlock()
	if !strings.Contains(got, "/dev/pts/") || !strings.Contains(got, "30 100") {
		t.Fatalf("exec -it printed %q, want a terminal of 30 rows and 100 columns", got)
	}
	// The caller's terminal is raw: lines must come with their \r, or they staircase.
	if !strings.Contains(got, "30 100\r\n") {
		t.Fatalf("exec -it printed %q: lines end without \\r on a raw terminal", got)
	}
	// A container the pod does not have: the API server's BadRequest, exit 1 as kubectl.
	if r := e.podrun("exec", "shell", "-c", "nope", "--", "true"); r.code != 1 {
		t.Fatalf("exec in an unknown container: %s", r)
	}
}
