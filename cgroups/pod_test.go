package cgroups

// Integration tests: they run as root and create real cgroups under a unique
// parent per test, removed in t.Cleanup even when the test fails.

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// helperEnv re-executes the test binary as a helper process instead of tests.
const helperEnv = "PODRUN_CGROUPS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "alloc":
		helperAlloc()
	case "sleep":
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "orphan":
		helperOrphan()
	}
	os.Exit(3)
}

// helperAlloc waits for a line on stdin (sent once it is in its cgroup), then
// touches up to 1GiB of memory and reports if it survived.
func helperAlloc() {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(4)
	}
	var keep [][]byte
	for i := 0; i < 1024; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("survived", len(keep))
	os.Exit(0)
}

// helperOrphan starts a sleeping grandchild in its own session, prints its pid
// and exits, leaving it to PID 1 as a crashed supervisor leaves its containers.
func helperOrphan() {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		os.Exit(5)
	}
	fmt.Println(cmd.Process.Pid)
	os.Exit(0)
}

func helper(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd
}

// testParent returns a unique cgroup parent, destroyed when the test ends.
func testParent(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	parent := "/podrun-test-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		if err := DestroyParent(parent, DefaultDestroyTimeout); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if left, _ := Leftovers(parent); len(left) > 0 {
			t.Errorf("cleanup left %v", left)
		}
	})
	return parent
}

func readFile(t *testing.T, dir, file string) string {
	t.Helper()
	if dir == "" {
		t.Fatalf("no directory for %s", file)
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func TestMode(t *testing.T) {
	var st unix.Statfs_t
	want := "v1"
	if err := unix.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		want = "v2"
	} else if err := unix.Statfs("/sys/fs/cgroup/unified", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		want = "hybrid"
	}
	if got := Mode(); got != want {
		t.Fatalf("Mode() = %q, want %q", got, want)
	}
}

// expect describes the pod cgroup values a test reads back; 0 = unlimited.
type expect struct {
	shares uint64
	quota  int64
	memory int64
	pids   int64
}

// checkPodFiles reads the pod cgroup's files and compares them with e.
func checkPodFiles(t *testing.T, p *Pod, e expect) {
	t.Helper()
	if cg.IsCgroup2UnifiedMode() {
		dir := p.Files("cpu")
		if got, want := readFile(t, dir, "cpu.weight"), strconv.FormatUint(CPUWeight(e.shares), 10); got != want {
			t.Errorf("cpu.weight = %s, want %s", got, want)
		}
		wantMax := "max 100000"
		if e.quota > 0 {
			wantMax = fmt.Sprintf("%d 100000", e.quota)
		}
		if got := readFile(t, dir, "cpu.max"); got != wantMax {
			t.Errorf("cpu.max = %s, want %s", got, wantMax)
		}
		wantMem := "max"
		if e.memory > 0 {
			wantMem = strconv.FormatInt(e.memory, 10)
		}
		if got := readFile(t, dir, "memory.max"); got != wantMem {
			t.Errorf("memory.max = %s, want %s", got, wantMem)
		}
		wantPids := "max"
		if e.pids > 0 {
			wantPids = strconv.FormatInt(e.pids, 10)
		}
		if got := readFile(t, dir, "pids.max"); got != wantPids {
			t.Errorf("pids.max = %s, want %s", got, wantPids)
		}
		return
	}
	cpu := p.Files("cpu")
	if got, want := readFile(t, cpu, "cpu.shares"), strconv.FormatUint(e.shares, 10); got != want {
		t.Errorf("cpu.shares = %s, want %s", got, want)
	}
	wantQuota := int64(-1)
	if e.quota > 0 {
		wantQuota = e.quota
	}
	if got := readFile(t, cpu, "cpu.cfs_quota_us"); got != strconv.FormatInt(wantQuota, 10) {
		t.Errorf("cpu.cfs_quota_us = %s, want %d", got, wantQuota)
	}
	if got := readFile(t, cpu, "cpu.cfs_period_us"); got != "100000" {
		t.Errorf("cpu.cfs_period_us = %s, want 100000", got)
	}
	// Unlimited reads back as the kernel's page-aligned maximum, as at the root.
	mem := p.Files("memory")
	wantMem := readFile(t, strings.TrimSuffix(mem, p.Path()), "memory.limit_in_bytes")
	if e.memory > 0 {
		wantMem = strconv.FormatInt(e.memory, 10)
	}
	if got := readFile(t, mem, "memory.limit_in_bytes"); got != wantMem {
		t.Errorf("memory.limit_in_bytes = %s, want %s", got, wantMem)
	}
	wantPids := "max"
	if e.pids > 0 {
		wantPids = strconv.FormatInt(e.pids, 10)
	}
	if got := readFile(t, p.Files("pids"), "pids.max"); got != wantPids {
		t.Errorf("pids.max = %s, want %s", got, wantPids)
	}
}

func TestCreatePod(t *testing.T) {
	seedLimits := list("cpu", "100m", "memory", "2200Mi")
	tests := []struct {
		name string
		r    Resources
		want expect
	}{
		{
			name: "seed example (Guaranteed)",
			r:    PodResources(seedLimits, seedLimits, corev1.PodQOSGuaranteed, true, true, 0),
			want: expect{shares: 102, quota: 10000, memory: 2306867200},
		},
		{
			name: "Burstable without every cpu limit",
			r: PodResources(list("cpu", "250m", "memory", "64Mi"), list("memory", "128Mi"),
				corev1.PodQOSBurstable, false, true, 0),
			want: expect{shares: 256, memory: 128 * mi},
		},
		{
			name: "BestEffort has no limit",
			r:    PodResources(nil, nil, corev1.PodQOSBestEffort, false, false, 0),
			want: expect{shares: 2},
		},
		{
			name: "pids limit",
			r:    PodResources(nil, nil, corev1.PodQOSBestEffort, false, false, 64),
			want: expect{shares: 2, pids: 64},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := testParent(t)
			p, err := CreatePod(parent, "uid-1", tc.r, "")
			if err != nil {
				t.Fatal(err)
			}
			if want := parent + "/poduid-1"; p.Path() != want {
				t.Errorf("Path() = %s, want %s", p.Path(), want)
			}
			checkPodFiles(t, p, tc.want)
			if err := DestroyPod(parent, "uid-1"); err != nil {
				t.Fatal(err)
			}
			if left, err := Leftovers(parent); err != nil || len(left) > 0 {
				t.Fatalf("Leftovers = %v, %v", left, err)
			}
		})
	}
}

// CreatePod again on an existing pod cgroup converges on the new values,
// including back to unlimited.
func TestCreatePodIdempotent(t *testing.T) {
	parent := testParent(t)
	g := list("cpu", "500m", "memory", "256Mi")
	if _, err := CreatePod(parent, "u", PodResources(g, g, corev1.PodQOSGuaranteed, true, true, 100), ""); err != nil {
		t.Fatal(err)
	}
	p, err := CreatePod(parent, "u", PodResources(nil, nil, corev1.PodQOSBestEffort, false, false, 0), "")
	if err != nil {
		t.Fatalf("second CreatePod: %v", err)
	}
	checkPodFiles(t, p, expect{shares: 2})
}

func TestFilesAreTheManagersDirs(t *testing.T) {
	parent := testParent(t)
	p, err := CreatePod(parent, "u", Resources{CPUShares: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ctl := range []string{"cpu", "memory", "pids"} {
		d := p.Files(ctl)
		want := filepath.Join("/sys/fs/cgroup", ctl, parent, "podu")
		if cg.IsCgroup2UnifiedMode() {
			want = filepath.Join("/sys/fs/cgroup", parent, "podu")
		}
		if d != want {
			t.Errorf("Files(%q) = %s, want %s", ctl, d, want)
		}
		if _, err := os.Stat(d); err != nil {
			t.Errorf("Files(%q): %v", ctl, err)
		}
	}
}

// joinContainer creates container id's cgroup from ContainerConfig as
// libcontainer does (Apply with the pid, then Set) and puts pid in it.
func joinContainer(t *testing.T, p *Pod, id string, r Resources, pid int) {
	t.Helper()
	config := p.ContainerConfig(id, r)
	if want := p.Path() + "/" + id; config.Path != want {
		t.Fatalf("ContainerConfig Path = %s, want %s", config.Path, want)
	}
	m, err := manager.New(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(pid); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := m.Set(config.Resources); err != nil {
		t.Fatalf("Set: %v", err)
	}
}

// running is a started helper, reaped in the background as the supervisor
// reaps its containers.
type running struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (r *running) wait() error {
	<-r.done
	return r.err
}

func startHelper(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = r.wait()
	})
	return r
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func TestOOMKilled(t *testing.T) {
	tests := []struct {
		name               string
		podMem, contMem    string // "" = no memory limit
		wantContainerLimit string // the container's memory limit as read back
	}{
		{name: "past the container's 32Mi limit", podMem: "256Mi", contMem: "32Mi", wantContainerLimit: "33554432"},
		{name: "past the pod's 32Mi limit", podMem: "32Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := testParent(t)
			podLimits := list("cpu", "500m", "memory", tc.podMem)
			p, err := CreatePod(parent, "oom", PodResources(podLimits, podLimits, corev1.PodQOSGuaranteed, true, true, 0), "")
			if err != nil {
				t.Fatal(err)
			}
			limits := list("cpu", "100m")
			if tc.contMem != "" {
				limits = list("cpu", "100m", "memory", tc.contMem)
			}
			r := ContainerResources(&corev1.Container{Resources: corev1.ResourceRequirements{Limits: limits}}, nil)

			cmd := helper(t, "alloc")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cmd.Stdout = &out
			proc := startHelper(t, cmd)
			joinContainer(t, p, "hog", r, cmd.Process.Pid)

			// The container cgroup carries the container's own values.
			if !cg.IsCgroup2UnifiedMode() {
				if tc.wantContainerLimit != "" {
					if got := readFile(t, filepath.Join(p.Files("memory"), "hog"), "memory.limit_in_bytes"); got != tc.wantContainerLimit {
						t.Errorf("container memory.limit_in_bytes = %s, want %s", got, tc.wantContainerLimit)
					}
				}
				if got := readFile(t, filepath.Join(p.Files("cpu"), "hog"), "cpu.cfs_quota_us"); got != "10000" {
					t.Errorf("container cpu.cfs_quota_us = %s, want 10000", got)
				}
			} else if tc.wantContainerLimit != "" {
				if got := readFile(t, filepath.Join(p.Files("memory"), "hog"), "memory.max"); got != tc.wantContainerLimit {
					t.Errorf("container memory.max = %s, want %s", got, tc.wantContainerLimit)
				}
			}
			if killed, err := OOMKilled(p.ContainerPath("hog")); err != nil || killed {
				t.Fatalf("before allocating: OOMKilled = %v, %v", killed, err)
			}

			if _, err := io.WriteString(stdin, "go\n"); err != nil {
				t.Fatal(err)
			}
			if werr := proc.wait(); !killedBySIGKILL(werr) {
				t.Fatalf("helper ended with %v (output %q), want SIGKILL by the OOM killer", werr, out.String())
			}
			killed, err := OOMKilled(p.ContainerPath("hog"))
			if err != nil || !killed {
				t.Fatalf("OOMKilled = %v, %v; want true", killed, err)
			}
			if n, err := OOMKillCount(p.ContainerPath("hog")); err != nil || n == 0 {
				t.Fatalf("OOMKillCount = %d, %v; want > 0", n, err)
			}
			// The host directory form gives the same answer.
			if killed, err := OOMKilled(filepath.Join(p.Files("memory"), "hog")); err != nil || !killed {
				t.Fatalf("OOMKilled(host dir) = %v, %v; want true", killed, err)
			}
		})
	}
}

func TestOOMKilledMissingCgroup(t *testing.T) {
	if _, err := OOMKilled("/podrun-test-does-not-exist/x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OOMKilled on a missing cgroup: %v, want ErrNotExist", err)
	}
	if _, err := OOMKilled("relative/path"); err == nil {
		t.Fatal("OOMKilled accepted a relative path")
	}
}

func TestDestroyPodKillsAndRemoves(t *testing.T) {
	parent := testParent(t)
	p, err := CreatePod(parent, "live", Resources{CPUShares: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	var procs []*running
	for _, id := range []string{"app", "sidecar"} {
		cmd := helper(t, "sleep")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, startHelper(t, cmd))
		joinContainer(t, p, id, ContainerResources(&corev1.Container{}, nil), cmd.Process.Pid)
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper said %q", line)
		}
	}
	dirs := p.Paths()

	if err := DestroyPod(parent, "live"); err != nil {
		t.Fatalf("DestroyPod: %v", err)
	}
	for _, proc := range procs {
		if err := proc.wait(); !killedBySIGKILL(err) {
			t.Errorf("helper ended with %v, want SIGKILL", err)
		}
	}
	for ctl, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pod cgroup dir for %q (%s) still there: %v", ctl, d, err)
		}
	}
	if left, err := Leftovers(parent); err != nil || len(left) > 0 {
		t.Fatalf("Leftovers = %v, %v", left, err)
	}
	// The parent stays, like kubepods.
	if _, err := os.Stat(filepath.Dir(p.Files("memory"))); err != nil {
		t.Errorf("parent removed: %v", err)
	}
	if err := DestroyPod(parent, "live"); err != nil {
		t.Fatalf("second DestroyPod: %v", err)
	}
	if err := DestroyPod(parent, "never-created"); err != nil {
		t.Fatalf("DestroyPod of a pod that never existed: %v", err)
	}
}

// A supervisor that crashed leaves processes re-parented to PID 1; another
// process destroys the pod knowing only its parent and UID.
func TestDestroyPodAfterSupervisorCrash(t *testing.T) {
	parent := testParent(t)
	p, err := CreatePod(parent, "orphaned", Resources{CPUShares: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := helper(t, "orphan").Output()
	if err != nil {
		t.Fatalf("orphan helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan helper printed %q", out)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		_ = unix.Close(pidfd)
	})
	joinContainer(t, p, "app", ContainerResources(&corev1.Container{}, nil), pid)

	if err := DestroyPod(parent, "orphaned"); err != nil {
		t.Fatalf("DestroyPod: %v", err)
	}
	// Dead: gone, or a zombie waiting for PID 1 to reap it.
	if state := procState(pid); state != "" && state != "Z" && state != "X" {
		t.Errorf("orphan %d is in state %q after DestroyPod, want dead", pid, state)
	}
	if left, err := Leftovers(parent); err != nil || len(left) > 0 {
		t.Fatalf("Leftovers = %v, %v", left, err)
	}
}

func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndex(s, ")")
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

func TestContainerConfig(t *testing.T) {
	parent := testParent(t)
	p, err := CreatePod(parent, "cfg", Resources{CPUShares: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	r := ContainerResources(&corev1.Container{Resources: corev1.ResourceRequirements{
		Limits: list("cpu", "10m", "memory", "1100Mi")}}, nil)
	c := p.ContainerConfig("web", r)
	if c.Path != parent+"/podcfg/web" || c.Systemd {
		t.Errorf("Path = %s, Systemd = %v", c.Path, c.Systemd)
	}
	if c.Resources.CpuShares != 10 || c.Resources.CpuQuota != 1000 || c.Resources.CpuPeriod != 100000 || c.Resources.Memory != 1100*mi {
		t.Errorf("Resources = %+v", *c.Resources)
	}
	if c.Resources.SkipDevices || len(c.Resources.Devices) == 0 {
		t.Errorf("container config has no device rules")
	}
	if got := p.ContainerCgroupsPath("web"); got != c.Path {
		t.Errorf("ContainerCgroupsPath = %s, want %s", got, c.Path)
	}
}

// describe shows PodPath: the directory CreatePod uses under either driver.
func TestPodPath(t *testing.T) {
	for _, tc := range []struct{ parent, uid, driver, want string }{
		{"/podrun", "u-1", DriverCgroupfs, "/podrun/podu-1"},
		{"", "u-1", "", "/podrun/podu-1"},
		{"/podrun", "u-1", DriverSystemd, "/podrun.slice/podrun-podu_1.slice"},
		{"/a-b/c", "u", DriverSystemd, "/a_b.slice/a_b-c.slice/a_b-c-podu.slice"},
		{"relative", "u", DriverCgroupfs, ""},
	} {
		if got := PodPath(tc.parent, tc.uid, tc.driver); got != tc.want {
			t.Errorf("PodPath(%q, %q, %q) = %q, want %q", tc.parent, tc.uid, tc.driver, got, tc.want)
		}
	}
}

// A parent that creation refuses holds no pod cgroup: destroying one under it
// succeeds, so that a pod recorded with such a parent can always be deleted.
func TestDestroyPodUnderARefusedParent(t *testing.T) {
	if err := CheckParent("podrun-relative"); err == nil {
		t.Fatal("a relative parent is accepted")
	}
	if err := DestroyPodWithin("podrun-relative", "0123", 0); err != nil {
		t.Errorf("DestroyPod under a relative parent: %v", err)
	}
	if err := CheckParent("/podrun"); err != nil {
		t.Errorf("/podrun: %v", err)
	}
}
