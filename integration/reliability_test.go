package integration

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// relEnv is newEnv with this file's tag (prl) in the names of the bridge and
// cgroup parent it creates. With onTmpfs, --root lives on a tmpfs of that
// many MiB, so that a test can fill the disk.
func relEnv(t *testing.T, onTmpfsMiB int) *env {
	t.Helper()
	n := envCounter.Add(1)
	dir := t.TempDir()
	e := &env{
		t:            t,
		root:         filepath.Join(dir, "root"),
		runRoot:      filepath.Join(dir, "run"),
		bridge:       fmt.Sprintf("prl%d-%d", os.Getpid()%10000, n),
		subnet:       fmt.Sprintf("%s.%d.0/24", testNet, n%250),
		cgroupParent: fmt.Sprintf("/podrun-prl-%d-%d", os.Getpid(), n),
	}
	if onTmpfsMiB > 0 {
		disk := filepath.Join(dir, "disk")
		if err := os.Mkdir(disk, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%dm", onTmpfsMiB)); err != nil {
			t.Fatal(err)
		}
		// Registered first, so it runs after the env's cleanup.
		t.Cleanup(func() { _ = unix.Unmount(disk, unix.MNT_DETACH) })
		e.root = filepath.Join(disk, "root")
	}
	t.Cleanup(e.cleanup)
	e.must("load", "-i", testImage, "--tag", "busybox:1.28")
	return e
}

// logDir is the directory of a container's log files.
func (e *env) logDir(p *corev1.Pod, container string) string {
	return filepath.Join(e.root, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), container)
}

func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestLogRotation: with --container-log-max-size and --container-log-max-files
// a container's log is rotated as the kubelet rotates it (never more than
// max-files files, none past max-size, older ones gzipped), and `podrun logs`
// reads the retained output across the rotated files, with --tail too.
func TestLogRotation(t *testing.T) {
	e := relEnv(t, 0)
	const lines = 4000
	path := e.manifest(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ["sh", "-c", "i=0; while [ $i -lt %d ]; do echo line $i; i=$((i+1)); done; sleep 3600"]
`, lines))
	e.must("--container-log-max-size", "16Ki", "--container-log-max-files", "3", "apply", path)
	p := e.waitPhase("chatty", corev1.PodRunning, 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for e.must("logs", "chatty", "--tail", "1").stdout != fmt.Sprintf("line %d\n", lines-1) {
		if time.Now().After(deadline) {
			t.Fatalf("the last line never came: %s", e.podrun("logs", "chatty", "--tail", "1"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the background compression of the last rotation

	entries, err := os.ReadDir(e.logDir(p, "app"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var plain, gz int
	for _, en := range entries {
		names = append(names, en.Name())
		fi, _ := en.Info()
		switch {
		case en.Name() == "0.log":
		case regexp.MustCompile(`^0\.log\.\d{8}-\d{6}(~\d+)?\.gz$`).MatchString(en.Name()):
			gz++
		case regexp.MustCompile(`^0\.log\.\d{8}-\d{6}(~\d+)?$`).MatchString(en.Name()):
			plain++
		default:
			t.Errorf("unexpected log file %s", en.Name())
		}
		if fi != nil && !strings.HasSuffix(en.Name(), ".gz") && fi.Size() > 16*1024 {
			t.Errorf("%s has %d bytes, more than --container-log-max-size 16Ki", en.Name(), fi.Size())
		}
	}
	if len(entries) != 3 || plain != 1 || gz != 1 {
		t.Errorf("log files %v: want 0.log, one rotated file and one gzipped one (--container-log-max-files 3)", names)
	}

	out := e.must("logs", "chatty").stdout
	var first int
	fmt.Sscanf(out, "line %d", &first)
	if out != numberedLines(first, lines) {
		t.Errorf("podrun logs is not the end of the output in order (from line %d, %d bytes)", first, len(out))
	}
	// More than one file's worth: the read went across rotated files.
	if n := strings.Count(out, "\n"); n*len("2026-11-26T08:00:00.123456789Z stdout F line 1234\n") < 2*16*1024 {
		t.Errorf("podrun logs printed only %d lines: the rotated files were not read", n)
	}
	tail := lines - first - 10
	if got := e.must("logs", "chatty", "--tail", fmt.Sprint(tail)).stdout; got != numberedLines(lines-tail, lines) {
		t.Errorf("--tail %d across rotated files: %d bytes, want lines %d to %d", tail, len(got), lines-tail, lines-1)
	}
}

// TestLogKeepsPreviousRunOnly: a crash-looping container keeps the logs of its
// current and previous runs only, as the kubelet does, and `logs -p` works.
func TestLogKeepsPreviousRunOnly(t *testing.T) {
	e := relEnv(t, 0)
	path := e.manifest(`apiVersion: v1
kind: Pod
metadata:
  name: crashy
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ["sh", "-c", "echo run; exit 1"]
`)
	e.must("--crashloop-backoff-initial", "100ms", "--crashloop-backoff-max", "200ms", "apply", path)
	p := e.waitFor("crashy", 90*time.Second, "restarted 5 times", func(p *corev1.Pod) bool {
		return containerState(p, "app").RestartCount >= 5
	})
	entries, err := os.ReadDir(e.logDir(p, "app"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	if len(names) > 2 {
		t.Errorf("log files after %d restarts: %v; want only the current and the previous run's", containerState(p, "app").RestartCount, names)
	}
	if r := e.must("logs", "crashy", "-p"); r.stdout != "run\n" {
		t.Errorf("logs -p: %q", r.stdout)
	}
}

// TestLogOutputLostOnFullDiskIsReported: output a full disk cannot take is
// counted and reported as events that describe shows, while the disk is full
// and once it is not.
func TestLogOutputLostOnFullDiskIsReported(t *testing.T) {
	e := relEnv(t, 48)
	path := e.manifest(`apiVersion: v1
kind: Pod
metadata:
  name: writer
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); usleep 2000; done"]
`)
	e.must("apply", path)
	e.waitPhase("writer", corev1.PodRunning, 60*time.Second)
	filler := filepath.Join(filepath.Dir(e.root), "filler")
	dd := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M")
	_ = dd.Run() // ends with "No space left on device"
	t.Cleanup(func() { os.Remove(filler) })

	wait := func(what string, cond func(string) bool) string {
		deadline := time.Now().Add(30 * time.Second)
		for {
			out := e.must("describe", "writer").stdout
			if cond(out) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("describe never showed %s:\n%s", what, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	out := wait("the loss", func(s string) bool { return strings.Contains(s, "cannot be written to its log") })
	if !strings.Contains(out, "LogOutputLost") || !strings.Contains(out, "no space left on device") {
		t.Errorf("describe while the disk is full:\n%s", out)
	}
	time.Sleep(time.Second) // lose some more
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	out = wait("the count", func(s string) bool {
		return regexp.MustCompile(`\d+ bytes \(\d+ lines\) of output of container app were lost`).MatchString(s)
	})
	m := regexp.MustCompile(`(\d+) bytes \((\d+) lines\) of output`).FindStringSubmatch(out)
	if m == nil || m[2] == "0" {
		t.Errorf("describe after the disk has room again:\n%s", out)
	}
	// Output is written again.
	before := e.must("logs", "writer", "--tail", "1").stdout
	time.Sleep(500 * time.Millisecond)
	if after := e.must("logs", "writer", "--tail", "1").stdout; after == before {
		t.Errorf("the log does not grow again: %q", after)
	}
}

// TestRecursiveReadOnlyHostPath: a read-only hostPath with recursiveReadOnly
// Enabled or IfPossible keeps its submounts read-only too (a plain read-only
// mount does not), and bindMountOptions reach the mount.
func TestRecursiveReadOnlyHostPath(t *testing.T) {
	e := relEnv(t, 0)
	host := filepath.Join(t.TempDir(), "host")
	sub := filepath.Join(host, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(host, "tool"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	try := `for f in /mnt/top /mnt/sub/$(hostname)-x; do if touch $f 2>/dev/null; then echo "$f WROTE"; else echo "$f REFUSED"; fi; done`
	container := func(name, extra string) string {
		return fmt.Sprintf(`  - name: %s
    image: busybox:1.28
    command: ["sh", "-c", %q]
    volumeMounts:
    - name: host
      mountPath: /mnt
      readOnly: true
%s`, name, strings.ReplaceAll(try, "$(hostname)", name), extra)
	}
	e.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rro
spec:
  restartPolicy: Never
  volumes:
  - name: host
    hostPath:
      path: %s
  containers:
%s%s%s  - name: noexec
    image: busybox:1.28
    command: ["sh", "-c", "/mnt/tool || echo NOEXEC"]
    volumeMounts:
    - name: host
      mountPath: /mnt
      bindMountOptions: ["noexec"]
`, host,
		container("enabled", "      recursiveReadOnly: Enabled\n"),
		container("ifpossible", "      recursiveReadOnly: IfPossible\n"),
		container("plain", "")))
	p := e.waitPhase("rro", corev1.PodSucceeded, 60*time.Second)
	// status.containerStatuses[].volumeMounts (RecursiveReadOnlyMounts, as
	// mount_rro_linux_test.go reads them): a read-only mount says whether it
	// is recursively read-only.
	for c, want := range map[string]string{"enabled": "true/Enabled", "ifpossible": "true/Enabled", "plain": "true/Disabled", "noexec": "false/"} {
		got := "none"
		for _, vm := range containerState(p, c).VolumeMounts {
			if vm.Name == "host" && vm.MountPath == "/mnt" {
				got = fmt.Sprintf("%v/", vm.ReadOnly)
				if vm.RecursiveReadOnly != nil {
					got += string(*vm.RecursiveReadOnly)
				}
			}
		}
		if got != want {
			t.Errorf("container %s: status volumeMounts %s, want %s", c, got, want)
		}
	}
	logs := func(c string) string { return e.must("logs", "rro", "-c", c).stdout }
	for _, c := range []string{"enabled", "ifpossible"} {
		if want := fmt.Sprintf("/mnt/top REFUSED\n/mnt/sub/%s-x REFUSED\n", c); logs(c) != want {
			t.Errorf("container %s (recursiveReadOnly): %q, want %q", c, logs(c), want)
		}
		if _, err := os.Stat(filepath.Join(sub, c+"-x")); err == nil {
			t.Errorf("container %s wrote into the submount on the host", c)
		}
	}
	// The reason recursiveReadOnly exists: readOnly alone leaves submounts writable.
	if want := "/mnt/top REFUSED\n/mnt/sub/plain-x WROTE\n"; logs("plain") != want {
		t.Errorf("container plain (readOnly only): %q, want %q", logs("plain"), want)
	}
	if got := logs("noexec"); !strings.Contains(got, "NOEXEC") || strings.Contains(got, "ran") {
		t.Errorf("container noexec (bindMountOptions noexec) ran the tool: %q", got)
	}
}

// TestSeccompDefault: --seccomp-default gives containers that set no profile
// the RuntimeDefault profile, which blocks unshare(CLONE_NEWUSER) for a
// container without CAP_SYS_ADMIN; without the flag they stay unconfined, as
// with the kubelet.
func TestSeccompDefault(t *testing.T) {
	e := relEnv(t, 0)
	pod := func(name string) string {
		return e.manifest(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ["sh", "-c", "if unshare -U true 2>/dev/null; then echo ALLOWED; else echo BLOCKED; fi"]
`, name))
	}
	e.must("apply", pod("seccomp-off"))
	e.must("--seccomp-default", "apply", pod("seccomp-on"))
	e.waitPhase("seccomp-off", corev1.PodSucceeded, 60*time.Second)
	e.waitPhase("seccomp-on", corev1.PodSucceeded, 60*time.Second)
	if got := e.must("logs", "seccomp-off").stdout; got != "ALLOWED\n" {
		t.Errorf("without --seccomp-default: %q, want ALLOWED", got)
	}
	if got := e.must("logs", "seccomp-on").stdout; got != "BLOCKED\n" {
		t.Errorf("with --seccomp-default: %q, want BLOCKED", got)
	}
}

// TestSecretsNeverUnderRoot: a Secret's values are in the container (volume,
// subPath, env, envFrom, projected) but in no file under --root.
func TestSecretsNeverUnderRoot(t *testing.T) {
	e := relEnv(t, 0)
	const value = "prl-s3cr3t-9d1f0c7e"
	e.apply(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: %s
---
apiVersion: v1
kind: Pod
metadata:
  name: secretive
spec:
  volumes:
  - name: sec
    secret:
      secretName: creds
  - name: proj
    projected:
      sources:
      - secret:
          name: creds
  containers:
  - name: app
    image: busybox:1.28
    command: ["sleep", "3600"]
    env:
    - name: PASSWORD
      valueFrom:
        secretKeyRef:
          name: creds
          key: password
    envFrom:
    - secretRef:
        name: creds
    volumeMounts:
    - name: sec
      mountPath: /sec
    - name: sec
      mountPath: /pw
      subPath: password
    - name: proj
      mountPath: /proj
`, value))
	e.waitPhase("secretive", corev1.PodRunning, 60*time.Second)
	if got := e.must("exec", "secretive", "--", "sh", "-c", `cat /sec/password /pw /proj/password; echo " $PASSWORD $password"`).stdout; got != fmt.Sprintf("%s%s%s %s %s\n", value, value, value, value, value) {
		t.Fatalf("the container does not see the secret: %q", got)
	}
	needles := [][]byte{[]byte(value), []byte(base64.StdEncoding.EncodeToString([]byte(value)))}
	_ = filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, n := range needles {
			if bytes.Contains(data, n) {
				t.Errorf("the Secret value is in %s", p)
			}
		}
		return nil
	})
}

// TestManifestLimits: an object over the API server's 3 MiB is refused fast
// and in little memory, and a relative hostPath is refused at apply; exit 2
// and nothing created.
func TestManifestLimits(t *testing.T) {
	e := relEnv(t, 0)
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\nspec:\n  containers:\n")
	for i := 0; i < 600000; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    image: busybox:1.28\n    command: [\"true\"]\n", i)
	}
	huge := e.manifest(b.String())
	// /usr/bin/time measures podrun's own peak memory (the rusage of a child
	// of this big test process would count the test's pages it was forked with).
	rssFile := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, podrunBin}, e.args("apply", huge)...)...)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		cmd = exec.Command(podrunBin, e.args("apply", huge)...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Without the limit podrun parses it for minutes in gigabytes: stop that.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	timer.Stop()
	took := time.Since(start)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("apply of a %d MB manifest: %v, want exit 2\n%s", b.Len()>>20, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "object is too large") || !strings.Contains(stderr.String(), "3145728") {
		t.Errorf("message: %s", stderr.String())
	}
	if data, err := os.ReadFile(rssFile); err == nil {
		var maxRSS int // KiB
		// The last line; time(1) writes "Command exited with non-zero status 2" first.
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Sscanf(lines[len(lines)-1], "%d", &maxRSS)
		t.Logf("%d MB manifest refused in %s, max RSS %d MiB", b.Len()>>20, took.Round(time.Millisecond), maxRSS>>10)
		if maxRSS == 0 || maxRSS > 256*1024 {
			t.Errorf("refusing it took %d MiB of memory", maxRSS>>10)
		}
	}
	if took > 10*time.Second {
		t.Errorf("refusing it took %s", took)
	}

	rel := e.podrun("apply", e.manifest(`apiVersion: v1
kind: Pod
metadata:
  name: rel
spec:
  containers:
  - name: a
    image: busybox:1.28
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    hostPath:
      path: var/data
`))
	if rel.code != 2 || !strings.Contains(rel.stderr, "spec.volumes[0].hostPath.path") {
		t.Errorf("relative hostPath: %s", rel)
	}
	if got := e.must("get").stdout + e.must("get").stderr; !strings.Contains(got, "No resources found") {
		t.Errorf("something was created: %s", got)
	}
}

// TestLockWaitMessage: a command that waits more than a second for a lock
// another process holds says so, naming the lock and its holder.
func TestLockWaitMessage(t *testing.T) {
	e := relEnv(t, 0)
	lockPath := filepath.Join(e.root, "images", "locks", "index.lock")
	held := flock.New(lockPath)
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(2500 * time.Millisecond); held.Unlock() }()
	start := time.Now()
	r := e.must("load", "-i", testImage, "--tag", "other:1")
	if time.Since(start) < 2*time.Second {
		t.Fatalf("load did not wait for the lock (%s)", time.Since(start))
	}
	want := fmt.Sprintf("waiting for lock on %s (held by process %d)", lockPath, os.Getpid())
	if strings.Count(r.stderr, want) != 1 {
		t.Errorf("load's stderr %q, want one %q", r.stderr, want)
	}
	// A lock that is free says nothing.
	if r := e.must("load", "-i", testImage, "--tag", "other:2"); strings.Contains(r.stderr, "waiting for lock") {
		t.Errorf("load without contention printed %q", r.stderr)
	}
}
