// Package integration runs the podrun binary as root against real pods, with a
// busybox image built from Debian's busybox-static package.
package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

var (
	podrunBin string
	testImage string
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "the integration tests run real pods and need root: sudo make test")
		os.Exit(1)
	}
	tmp, err := os.MkdirTemp("", "podrun-it-")
	if err != nil {
		panic(err)
	}
	podrunBin = os.Getenv("PODRUN_BIN")
	if podrunBin == "" {
		podrunBin = filepath.Join(tmp, "podrun")
		tags := "containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper seccomp"
		for _, b := range [][]string{{"-tags", tags, "-o", podrunBin, "../cmd/podrun"}, {"-tags", tags + " podrun_lean", "-o", podrunBin + "-shim", "../cmd/podrun-shim"}, {"-tags", tags + " podrun_image", "-o", podrunBin + "-image", "../cmd/podrun-image"}} {
			cmd := exec.Command("go", append([]string{"build"}, b...)...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building podrun:", err)
				os.Exit(1)
			}
		}
	}
	testImage = os.Getenv("PODRUN_TEST_IMAGE")
	if testImage == "" {
		testImage = filepath.Join(tmp, "busybox.tar")
		cmd := exec.Command("../tools/busybox-image.sh", testImage, "busybox:1.28", "docker-archive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the busybox test image:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// env is one test's private podrun installation: its own root, run root,
// bridge, subnet and cgroup parent, so tests never touch a user's pods or
// each other's.
type env struct {
	t                                           *testing.T
	root, runRoot, bridge, subnet, cgroupParent string
	// netns, when set, is a network namespace file podrun runs in (through
	// nsenter, which keeps the host's /sys and cgroup mounts).
	netns string
	// serviceCIDR is the env's Service range (a /24 of PODRUN_TEST_SERVICE_NET).
	serviceCIDR string
}

var envCounter atomic.Int32

// testNet is the /16 the tests carve their /24 subnets from; PODRUN_TEST_NET (e.g. "10.201")
// gives concurrent test runs on one host distinct ranges.
var testNet = func() string {
	if v := os.Getenv("PODRUN_TEST_NET"); v != "" {
		return v
	}
	return "10.198"
}()

// timeoutScale stretches the waits for pod states: PODRUN_TEST_TIMEOUT_SCALE=N
// for slow machines (make test-vm under qemu's software emulation sets it).
var timeoutScale = func() time.Duration {
	var n int
	if _, err := fmt.Sscanf(os.Getenv("PODRUN_TEST_TIMEOUT_SCALE"), "%d", &n); err == nil && n > 1 {
		return time.Duration(n)
	}
	return 1
}()

// testServiceNet is the /16 the tests carve their Service ranges from
// (PODRUN_TEST_SERVICE_NET, e.g. "10.221"; never 10.96, the host's default).
var testServiceNet = func() string {
	if v := os.Getenv("PODRUN_TEST_SERVICE_NET"); v != "" {
		return v
	}
	if parts := strings.Split(testNet, "."); len(parts) == 2 {
		if n, err := strconv.Atoi(parts[1]); err == nil && n < 255 {
			return fmt.Sprintf("%s.%d", parts[0], n+1)
		}
	}
	return "10.199"
}()

func newEnv(t *testing.T) *env {
	t.Helper()
	n := envCounter.Add(1)
	dir := t.TempDir()
	e := &env{
		t:            t,
		root:         filepath.Join(dir, "root"),
		runRoot:      filepath.Join(dir, "run"),
		bridge:       fmt.Sprintf("prit%d-%d", os.Getpid()%10000, n),
		subnet:       fmt.Sprintf("%s.%d.0/24", testNet, n%250),
		cgroupParent: fmt.Sprintf("/podrun-it-%d-%d", os.Getpid(), n),
		serviceCIDR:  fmt.Sprintf("%s.%d.0/24", testServiceNet, n%250),
	}
	t.Cleanup(e.cleanup)
	e.must("load", "-i", testImage, "--tag", "busybox:1.28")
	return e
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func (e *env) args(args ...string) []string {
	return append([]string{
		"--root", e.root, "--run-root", e.runRoot,
		"--bridge", e.bridge, "--subnet", e.subnet, "--cgroup-parent", e.cgroupParent,
		"--service-cidr", e.serviceCIDR,
	}, args...)
}

// podrun runs the binary with this env's global flags.
func (e *env) podrun(args ...string) result {
	e.t.Helper()
	return e.podrunIn("", args...)
}

func (e *env) podrunIn(stdin string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(podrunBin, e.args(args...)...)
	if e.netns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + e.netns, "--", podrunBin}, e.args(args...)...)...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running podrun %v: %v", args, err)
	}
	return r
}

// eventually polls until the output of the command args is want (or holds
// want, with contains), for at most 30 s; else the test fails with it.
func (e *env) eventually(want string, contains bool, args ...string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.must(args...).stdout
		if got == want || (contains && strings.Contains(got, want)) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("podrun %v: %q after 30s, want %q", args, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// failure is a command that must fail: its exit code and a part of its
// message on stderr, its prefix never doubled ("error: error:").
type failure struct {
	args []string
	code int
	msg  string
}

// mustFail runs each command and checks how it fails.
func (e *env) mustFail(cases ...failure) {
	e.t.Helper()
	for _, c := range cases {
		r := e.podrun(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || strings.Contains(r.stderr, "error: error:") {
			e.t.Errorf("podrun %v: %s\nwant exit %d and %q", c.args, r, c.code, c.msg)
		}
	}
}

func (e *env) must(args ...string) result {
	e.t.Helper()
	r := e.podrun(args...)
	if r.code != 0 {
		e.t.Fatalf("podrun %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// manifest writes a manifest to a file and returns its path.
func (e *env) manifest(yaml string) string {
	e.t.Helper()
	f, err := os.CreateTemp(e.t.TempDir(), "pod-*.yaml")
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := f.WriteString(yaml); err != nil {
		e.t.Fatal(err)
	}
	f.Close()
	return f.Name()
}

func (e *env) apply(yaml string, extra ...string) result {
	e.t.Helper()
	return e.must(append([]string{"apply", e.manifest(yaml)}, extra...)...)
}

func (e *env) pod(name string) *corev1.Pod {
	e.t.Helper()
	r := e.must("get", "pod", name, "-o", "json")
	var p corev1.Pod
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		e.t.Fatalf("decoding pod %s: %v\n%s", name, err, r.stdout)
	}
	return &p
}

// status is the STATUS column of `podrun get NAME`.
func (e *env) status(name string) string {
	e.t.Helper()
	r := e.must("get", name)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		e.t.Fatalf("get %s printed %q", name, r.stdout)
	}
	return strings.Fields(lines[1])[2]
}

// waitFor polls the pod until cond holds.
func (e *env) waitFor(name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	timeout *= timeoutScale
	deadline := time.Now().Add(timeout)
	for {
		p := e.pod(name)
		if cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			data, _ := json.MarshalIndent(p.Status, "", "  ")
			e.t.Fatalf("pod %s: not %s after %s; status:\n%s\nsupervisor log:\n%s", name, what, timeout, data, e.supervisorLog(p))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *env) waitPhase(name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	e.t.Helper()
	return e.waitFor(name, timeout, "in phase "+string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

func (e *env) supervisorLog(p *corev1.Pod) string {
	data, _ := os.ReadFile(filepath.Join(e.root, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "supervisor.log"))
	return string(data)
}

func containerState(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, s := range append(append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...) {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

// cleanup deletes every pod and then proves nothing of the env is left on the host.
func (e *env) cleanup() {
	t := e.t
	if t.Failed() {
		e.dumpSupervisors()
	}
	if _, err := os.Stat(e.root); err == nil {
		// Workload objects first, so that no controller replaces the pods.
		for _, kind := range []string{"deployments", "daemonsets", "statefulsets", "cronjobs", "jobs", "replicasets"} {
			if r := e.podrun("delete", kind, "--all", "-A", "--grace-period", "1"); r.code != 0 {
				t.Errorf("cleanup: delete %s --all: %s", kind, r)
			}
		}
		if r := e.podrun("delete", "--all", "-A", "--grace-period", "1"); r.code != 0 {
			t.Errorf("cleanup: delete --all: %s", r)
		}
		if r := e.podrun("delete", "svc", "--all", "-A"); r.code != 0 {
			t.Errorf("cleanup: delete svc --all: %s", r)
		}
	}
	for _, leftover := range e.leftovers() {
		t.Errorf("leftover after delete: %s", leftover)
	}
	// Now remove what the env itself owns, whatever the outcome.
	if link, err := netlink.LinkByName(e.bridge); err == nil {
		_ = netlink.LinkDel(link)
	}
	for _, d := range cgroupDirs(e.cgroupParent) {
		_ = os.Remove(d)
	}
}

// dumpSupervisors logs, for a failed test, each live supervisor's goroutines
// (SIGQUIT: the Go runtime writes them to its stderr, the supervisor's log, and
// exits) and the tail of every pod's supervisor log, before cleanup deletes them.
// Only a live supervisor of this env's store is signalled: its command line
// names this env's root.
func (e *env) dumpSupervisors() {
	recs, _ := store.ListPods(store.Layout{Root: e.root, RunRoot: e.runRoot}, "")
	for _, rec := range recs {
		paths := rec.Paths
		if pid := store.SupervisorPid(paths); pid > 0 {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if bytes.Contains(cmdline, []byte("\x00"+e.root+"\x00")) {
				_ = syscall.Kill(pid, syscall.SIGQUIT)
				for i := 0; i < 50 && store.SupervisorPid(paths) == pid; i++ {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		data, _ := os.ReadFile(paths.SupervisorLog())
		text := podrunGoroutines(string(data))
		if len(text) > 32<<10 {
			text = text[len(text)-32<<10:]
		}
		e.t.Logf("supervisor log of %s:\n%s", filepath.Base(paths.Dir), text)
	}
}

// podrunGoroutines shortens a Go runtime's goroutine dump (SIGQUIT) to the
// goroutines that run podrun's code, each as its header and podrun's frames;
// what comes before the dump is kept whole.
func podrunGoroutines(log string) string {
	before, dump, ok := strings.Cut(log, "SIGQUIT: quit")
	if !ok {
		return log
	}
	var b strings.Builder
	b.WriteString(before)
	b.WriteString("SIGQUIT: quit (goroutines running podrun's code, podrun's frames)\n")
	for _, g := range strings.Split(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if !strings.HasPrefix(lines[0], "goroutine ") || !strings.Contains(g, "github.com/podrun/podrun/") {
			continue
		}
		b.WriteString(lines[0] + "\n")
		for i := 1; i+1 < len(lines); i++ {
			if strings.HasPrefix(lines[i], "github.com/podrun/podrun/") {
				file, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " ")
				fn := withoutArgs(lines[i])
				b.WriteString("  " + strings.TrimPrefix(fn, "github.com/podrun/podrun/") + " " + file + "\n")
			}
		}
	}
	return b.String()
}

// withoutArgs is a dump's frame "pkg.(*T).f(0x1, {0x2, ...})" without its
// argument list: up to the parenthesis that the last one closes.
func withoutArgs(frame string) string {
	depth := 0
	for i := len(frame) - 1; i >= 0; i-- {
		switch frame[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				return frame[:i]
			}
		}
	}
	return frame
}

// leftovers lists what a deleted pod must not leave behind.
func (e *env) leftovers() []string {
	if e.netns != "" {
		var out []string
		inNetNS(e.t, e.netns, func() { out = e.hostLeftovers() })
		return out
	}
	return e.hostLeftovers()
}

func (e *env) hostLeftovers() []string {
	return runtime.Leftovers(store.Layout{Root: e.root, RunRoot: e.runRoot, CgroupParent: e.cgroupParent, Bridge: e.bridge, Subnet: e.subnet})
}

// cgroupDirs are the parent's directories in every mounted hierarchy.
func cgroupDirs(parent string) []string {
	var out []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, r := range roots {
		d := filepath.Join(r, parent)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// crashSupervisor kills the supervisor of the pod with the given UID with
// SIGKILL, as a crash would: nothing of the pod is torn down.
func (e *env) crashSupervisor(uid string) {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.runRoot, "pods", uid, "supervisor.pid"))
	if err != nil {
		e.t.Fatalf("reading the supervisor's pid: %v", err)
	}
	pid := strings.TrimSpace(string(data))
	if err := syscall.Kill(atoi(e.t, pid), syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	waitGone(e.t, pid)
}

// waitGone waits until a process no longer exists (or is a zombie).
func waitGone(t *testing.T, pid string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		data, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(data), ") Z ") {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("process %s did not exit", pid)
}
