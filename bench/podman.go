package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// podmanBench runs Debian's podman with settings of its own: its containers.conf
// (cgroupfs cgroup manager, file events logger, runc, rlimits this host
// allows), storage.conf and registries.conf in a temporary directory given
// through CONTAINERS_CONF and friends, storage and run root there too, and
// every podman command in a network namespace of the bench's own, so that
// netavark's bridge and firewall rules never touch the host's network. The
// host's /etc/containers is read by nobody and changed by nothing.
type podmanBench struct {
	dir     string
	netns   string
	network string
	env     []string
	// existed records which host paths podman may create existed before, so
	// that close removes only what the bench's podman made.
	existed     map[string]bool
	netnsBefore map[string]bool
	// play and down are the times of podStart's runs.
	play, down samples
}

// Host paths rootful podman 4.3 writes whatever its configuration says:
// netavark's run dir, runc's state root, the blob-info cache of `podman
// load`, the directory of the pods' network namespaces. close removes the
// ones that did not exist before; only netavark's run dir (its IPAM database
// for the bench's network) with what it holds, the others only when empty.
var podmanHostPaths = []struct {
	path string
	all  bool
}{
	{"/run/containers", true},
	{"/run/runc", false},
	{"/run/libpod", false},
	{"/var/lib/containers/cache/blob-info-cache-v1.boltdb", false},
	{"/var/lib/containers/cache/blob-info-cache-v1.sqlite", false},
	{"/var/lib/containers/cache", false},
	{"/var/lib/containers", false},
	{"/run/netns", false},
}

const podmanCgroupParent = "/libpod_parent"

func newPodman(image string) (*podmanBench, error) {
	for _, bin := range []string{"podman", "runc", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s is not installed (make bench-compare installs Debian's runc and podman): %w", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "podrun-bench-podman-")
	if err != nil {
		return nil, err
	}
	p := &podmanBench{dir: dir, network: "podrun-bench", existed: map[string]bool{}, netnsBefore: map[string]bool{}}
	for _, hp := range podmanHostPaths {
		_, err := os.Lstat(hp.path)
		p.existed[hp.path] = err == nil
	}
	p.existed[podmanCgroupParent] = len(cgroupDirs(podmanCgroupParent)) > 0
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		p.netnsBefore[e.Name()] = true
	}
	if err := p.setup(image); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *podmanBench) setup(image string) error {
	var nofile, nproc unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		return err
	}
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &nproc); err != nil {
		return err
	}
	// Rootful podman gives containers 1048576 open files and lowers its own
	// process limit to 32768; asking more than the caller's hard limits fails
	// here without CAP_SYS_RESOURCE ("error setting rlimit ... operation not permitted").
	nprocMax := min(nproc.Max, 32768)
	conf := fmt.Sprintf(`[containers]
default_ulimits = ["nofile=%[2]d:%[2]d", "nproc=%[3]d:%[3]d"]
log_driver = "k8s-file"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "%[1]s/events.log"
runtime = "runc"
tmp_dir = "%[1]s/tmp"
static_dir = "%[1]s/libpod"
volume_path = "%[1]s/volumes"

[network]
network_backend = "netavark"
network_config_dir = "%[1]s/net"
`, p.dir, nofile.Max, nprocMax)
	storage := fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = \"%[1]s/storage\"\nrunroot = \"%[1]s/runroot\"\n", p.dir)
	files := map[string]string{
		"containers.conf": conf,
		"storage.conf":    storage,
		// Short names resolve to docker.io without asking anyone; nothing is pulled.
		"registries.conf": "unqualified-search-registries = []\nshort-name-mode = \"disabled\"\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	p.env = append(os.Environ(),
		"CONTAINERS_CONF="+filepath.Join(p.dir, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(p.dir, "storage.conf"),
		"CONTAINERS_REGISTRIES_CONF="+filepath.Join(p.dir, "registries.conf"),
	)
	p.netns = filepath.Join(p.dir, "netns")
	if err := newNetns(p.netns); err != nil {
		return err
	}
	subnet, err := freeSubnet()
	if err != nil {
		return err
	}
	// Its bridge lives in the namespace above, so podman's default name cannot clash.
	if _, err := p.run("network", "create", "--disable-dns", "--subnet", subnet, p.network); err != nil {
		return err
	}
	if _, err := p.run("load", "-i", image); err != nil {
		return err
	}
	return nil
}

// newNetns pins a new network namespace on path: a thread unshares it, the
// namespace is bind-mounted, and the thread is dropped with it.
func newNetns(path string) error {
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("creating a network namespace for podman: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("pinning podman's network namespace: %w", err)
			return
		}
		errc <- nil
	}()
	return <-errc
}

func (p *podmanBench) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--net=" + p.netns, "podman",
		"--root", filepath.Join(p.dir, "storage"), "--runroot", filepath.Join(p.dir, "runroot")}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Env = p.env
	return cmd
}

func (p *podmanBench) run(args ...string) (string, error) {
	_, _, out, err := p.timed(args...)
	return out, err
}

func (p *podmanBench) timed(args ...string) (time.Time, time.Duration, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := p.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return start, took, out.String(), fmt.Errorf("podman %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return start, took, out.String(), nil
}

// states maps container names to their state (running, exited ...).
func (p *podmanBench) states() (map[string]string, error) {
	out, err := p.run("ps", "-a", "--format", "json")
	if err != nil {
		return nil, err
	}
	var list []struct {
		Names []string
		State string
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("reading podman ps: %w", err)
	}
	m := map[string]string{}
	for _, c := range list {
		for _, n := range c.Names {
			m[n] = c.State
		}
	}
	return m, nil
}

// warmUp plays and downs the start pod once, untimed: the first play builds
// podman's pause image.
func (p *podmanBench) warmUp(path string) error {
	if _, err := p.run("kube", "play", "--network", p.network, path); err != nil {
		return err
	}
	_, err := p.run("kube", "down", path)
	return err
}

// podStart plays the start pod (the app must be running when play returns),
// then downs it, once.
func (p *podmanBench) podStart(path string) error {
	_, took, _, err := p.timed("kube", "play", "--network", p.network, path)
	if err != nil {
		return err
	}
	st, err := p.states()
	if err != nil {
		return err
	}
	if st["start-app"] != "running" {
		return fmt.Errorf("podman kube play returned with start-app %q, want running", st["start-app"])
	}
	_, d, _, err := p.timed("kube", "down", path)
	if err != nil {
		return err
	}
	p.play, p.down = append(p.play, took), append(p.down, d)
	return nil
}

type podmanScale struct {
	sequential, concurrent scaleRun
	failedConcurrent       int
	mem50                  memFigures
}

// scale plays the scale pods one after another, then all at once; each time
// every app container must run, then `podman pod rm --all --force --time 0`.
func (p *podmanBench) scale(paths []string) (*podmanScale, error) {
	res := &podmanScale{}
	n := len(paths)
	walls := make([]time.Duration, n)
	begin := time.Now()
	for i, path := range paths {
		var err error
		if _, walls[i], _, err = p.timed("kube", "play", "--network", p.network, path); err != nil {
			return nil, err
		}
	}
	res.sequential.total = time.Since(begin)
	res.sequential.wall = samples(slices.Clone(walls))
	if err := p.allRunning(n); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	var err error
	if res.mem50, err = p.memory(); err != nil {
		return nil, err
	}
	if res.sequential.del, res.sequential.leftovers, err = p.removeAll(); err != nil {
		return nil, err
	}

	progress("podman: %d pods at once", n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	gate := make(chan struct{})
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			_, walls[i], _, errs[i] = p.timed("kube", "play", "--network", p.network, path)
		}()
	}
	begin = time.Now()
	close(gate)
	wg.Wait()
	res.concurrent.total = time.Since(begin)
	for i, err := range errs {
		if err != nil {
			res.failedConcurrent++
			progress("podman kube play of %s failed: %v", filepath.Base(paths[i]), err)
			continue
		}
		res.concurrent.wall = append(res.concurrent.wall, walls[i])
	}
	if res.failedConcurrent == 0 {
		if err := p.allRunning(n); err != nil {
			return nil, err
		}
	}
	if res.concurrent.del, res.concurrent.leftovers, err = p.removeAll(); err != nil {
		return nil, err
	}
	return res, nil
}

func (p *podmanBench) allRunning(n int) error {
	st, err := p.states()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if s := st[scaleName(i)+"-app"]; s != "running" {
			return fmt.Errorf("podman: %s-app is %q, want running", scaleName(i), s)
		}
	}
	return nil
}

// removeAll removes every pod and lists what podman left behind.
func (p *podmanBench) removeAll() (time.Duration, []string, error) {
	_, took, _, err := p.timed("pod", "rm", "--all", "--force", "--time", "0")
	if err != nil {
		return 0, nil, err
	}
	return took, p.leftovers(), nil
}

func (p *podmanBench) leftovers() []string {
	var out []string
	if ids, err := p.run("ps", "-a", "-q"); err == nil && strings.TrimSpace(ids) != "" {
		out = append(out, "containers "+strings.Join(strings.Fields(ids), " "))
	}
	if ids, err := p.run("pod", "ps", "-q"); err == nil && strings.TrimSpace(ids) != "" {
		out = append(out, "pods "+strings.Join(strings.Fields(ids), " "))
	}
	mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir))
	for _, m := range mounts {
		if strings.HasSuffix(m.Mountpoint, "/merged") || strings.HasSuffix(m.Mountpoint, "/shm") {
			out = append(out, "mount "+m.Mountpoint)
		}
	}
	for _, pid := range p.conmons() {
		out = append(out, fmt.Sprintf("conmon process %d", pid))
	}
	for _, d := range cgroupDirs(podmanCgroupParent) {
		sub, _ := os.ReadDir(d)
		for _, s := range sub {
			if s.IsDir() {
				out = append(out, "cgroup "+filepath.Join(d, s.Name()))
			}
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if !p.netnsBefore[e.Name()] {
			out = append(out, "netns /run/netns/"+e.Name())
		}
	}
	return out
}

// conmons are the live conmon processes of this podman (their command line
// names its storage).
func (p *podmanBench) conmons() []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		comm, _ := os.ReadFile(filepath.Join(proc, "comm"))
		if strings.TrimSpace(string(comm)) != "conmon" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		if !bytes.Contains(cmdline, []byte(p.dir)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(proc, "stat")); err != nil || strings.Contains(string(stat), ") Z ") {
			continue
		}
		var pid int
		fmt.Sscan(filepath.Base(proc), &pid)
		out = append(out, pid)
	}
	return out
}

// memory is what podman keeps running per pod besides the containers' own
// processes: a conmon per container and the infra container (catatonit).
func (p *podmanBench) memory() (memFigures, error) {
	var m memFigures
	conmons := p.conmons()
	pids := slices.Clone(conmons)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		comm, _ := os.ReadFile(filepath.Join(proc, "comm"))
		if strings.TrimSpace(string(comm)) != "catatonit" {
			continue
		}
		var pid, ppid int
		fmt.Sscan(filepath.Base(proc), &pid)
		stat, _ := os.ReadFile(filepath.Join(proc, "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			var state string
			fmt.Sscan(string(stat[i+1:]), &state, &ppid)
		}
		if slices.Contains(conmons, ppid) {
			pids = append(pids, pid)
		}
	}
	states, err := p.states()
	if err != nil {
		return m, err
	}
	for name, s := range states {
		if strings.HasSuffix(name, "-app") && s == "running" {
			m.pods++
		}
	}
	if m.pods == 0 {
		return m, fmt.Errorf("podman runs no pod")
	}
	for _, pid := range pids {
		rss, pss, anon, err := smapsRollup(pid)
		if err != nil {
			return m, err
		}
		m.rssTotal += rss
		m.pssTotal += pss
		m.anonTotal += anon
	}
	m.rssMean = m.rssTotal / int64(m.pods)
	m.pssMean = m.pssTotal / int64(m.pods)
	m.anonMean = m.anonTotal / int64(m.pods)
	return m, nil
}

// close removes everything the bench's podman made, on the host too.
func (p *podmanBench) close() []string {
	var problems []string
	if p.env != nil {
		if _, err := p.run("pod", "rm", "--all", "--force", "--time", "0"); err != nil {
			problems = append(problems, err.Error())
		}
		if _, err := p.run("rm", "--all", "--force", "--time", "0"); err != nil {
			problems = append(problems, err.Error())
		}
		_, _ = p.run("rmi", "--all", "--force")
	}
	// Storage keeps its overlay mount (and podman its netns pin) under dir.
	mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir))
	slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil {
			problems = append(problems, fmt.Sprintf("unmounting %s: %v", m.Mountpoint, err))
		}
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil && len(entries) == 0 && !p.existed["/run/netns"] {
		// podman makes the directory a mount point of its own to pin namespaces in.
		_ = unix.Unmount("/run/netns", unix.MNT_DETACH)
	}
	for _, hp := range podmanHostPaths {
		if p.existed[hp.path] {
			continue
		}
		remove := os.Remove
		if hp.all {
			remove = os.RemoveAll
		}
		if err := remove(hp.path); err != nil && !os.IsNotExist(err) {
			problems = append(problems, fmt.Sprintf("podman left %s: %v", hp.path, err))
		}
	}
	if !p.existed[podmanCgroupParent] {
		removeCgroupTree(podmanCgroupParent)
	}
	if err := os.RemoveAll(p.dir); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}
