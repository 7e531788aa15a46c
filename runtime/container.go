package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/user"
	devices "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/cgroups"

	// libcontainer's cgroup manager needs the device-rule backend registered.
	_ "github.com/opencontainers/cgroups/devices"
)

// defaultCapabilities is the capability set containerd's CRI plugin gives a
// container that asks for nothing else (and that the kubelet documents).
var defaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// Masked and read-only /proc and /sys paths as containerd's defaults.
var (
	defaultMaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// containerConfig is everything the adapter needs to create one container run.
type containerConfig struct {
	ID             string
	Hostname       string // "" when the container shares the host's UTS namespace
	Rootfs         string // mounted overlay
	ReadonlyRootfs bool
	Args, Env      []string
	Cwd            string
	User           user.ExecUser
	Mounts         []specs.Mount
	// Namespace paths to join; "" with the Host* flag means the host's namespace,
	// "" without it means a new one.
	NetNS, IPCNS, UTSNS, PIDNS string
	HostNetwork, HostIPC       bool
	HostPID                    bool
	CgroupsPath                string
	SystemdCgroup              bool // CgroupsPath is slice:prefix:name for the systemd driver
	Resources                  *specs.LinuxResources
	Privileged                 bool
	CapAdd, CapDrop            []string
	NoNewPrivileges            bool
	OOMScoreAdj                *int
	Sysctls                    map[string]string
	MaskedPaths, ReadonlyPaths []string
	// UnmaskedProc is procMount: Unmasked (ProcMountType, GA in Kubernetes
	// 1.36; the API server allows it with hostUsers: false only): no path is
	// masked or made read-only, as the kubelet's ConvertToRuntimeMaskedPaths
	// and ConvertToRuntimeReadonlyPaths give the runtime empty lists.
	UnmaskedProc bool
	Seccomp      *corev1.SeccompProfile
	SeccompDir   string
	// StdinFifo, when set, is the named pipe the container's stdin is fed
	// from (stdin: true); StdinOnce closes it after the first writer.
	StdinFifo string
	StdinOnce bool
	// UserNSBase, when not 0, gives the container a user namespace of its
	// own mapping container IDs 0-65535 to the host IDs from UserNSBase (the
	// pod's, hostUsers: false).
	UserNSBase uint32
	// MqueueDir is the pod's mqueue filesystem to bind at /dev/mqueue when
	// the container's user namespace cannot mount its IPC namespace's.
	MqueueDir string
}

func newContainerID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// spec builds the OCI runtime spec of a container, with the defaults of
// containerd's CRI plugin.
func (c *containerConfig) spec() *specs.Spec {
	caps := capabilities(c.Privileged, c.CapAdd, c.CapDrop)
	s := &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: c.Rootfs, Readonly: c.ReadonlyRootfs},
		Hostname: c.Hostname,
		Process: &specs.Process{
			Args: c.Args,
			Env:  c.Env,
			Cwd:  c.Cwd,
			User: specs.User{UID: uint32(c.User.Uid), GID: uint32(c.User.Gid)},
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Permitted: caps, Effective: caps,
			},
			NoNewPrivileges: c.NoNewPrivileges,
			OOMScoreAdj:     c.OOMScoreAdj,
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", sysMode(c.Privileged)}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", sysMode(c.Privileged)}},
		},
		Linux: &specs.Linux{
			CgroupsPath: c.CgroupsPath,
			Resources:   c.Resources,
			Sysctl:      c.Sysctls,
		},
	}
	for _, g := range c.User.Sgids {
		s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, uint32(g))
	}
	if !c.Privileged && !c.UnmaskedProc {
		s.Linux.MaskedPaths = append(append([]string(nil), defaultMaskedPaths...), c.MaskedPaths...)
		s.Linux.ReadonlyPaths = append(append([]string(nil), defaultReadonlyPaths...), c.ReadonlyPaths...)
	}
	s.Mounts = append(s.Mounts, c.Mounts...)
	ns := func(t specs.LinuxNamespaceType, path string, host bool) {
		if !host {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: t, Path: path})
		}
	}
	ns(specs.MountNamespace, "", false)
	ns(specs.PIDNamespace, c.PIDNS, c.HostPID)
	ns(specs.NetworkNamespace, c.NetNS, c.HostNetwork)
	ns(specs.IPCNamespace, c.IPCNS, c.HostIPC)
	ns(specs.UTSNamespace, c.UTSNS, c.UTSNS == "" && c.Hostname == "")
	if c.UserNSBase != 0 {
		// The user namespace is new, made after the pod's network, IPC and
		// UTS namespaces are joined (runc's nsexec joins before it
		// unshares); the hostname is the pinned UTS namespace's already,
		// which a process in another user namespace may not set.
		ns(specs.UserNamespace, "", false)
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: c.UserNSBase, Size: usernsLength}}
		s.Linux.UIDMappings, s.Linux.GIDMappings = m, m
		s.Hostname = ""
		// What a user namespace may not mount over namespaces it does not
		// own, bound instead, as runc's rootless spec does: the pod's
		// mqueue, mounted in its IPC namespace (pinNamespaces), and the
		// host's /sys, read-only, for a joined network namespace.
		for i := range s.Mounts {
			switch m := &s.Mounts[i]; {
			case m.Destination == "/dev/mqueue" && c.MqueueDir != "":
				*m = specs.Mount{Destination: "/dev/mqueue", Type: "bind", Source: c.MqueueDir, Options: []string{"rbind", "nosuid", "noexec", "nodev"}}
			case m.Destination == "/sys" && c.NetNS != "":
				*m = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
			}
		}
	}
	return s
}

func sysMode(privileged bool) string {
	if privileged {
		return "rw"
	}
	return "ro"
}

// capabilities applies the container's add/drop lists to the default set as
// containerd does: "ALL" in drop clears the defaults, "ALL" in add grants all.
func capabilities(privileged bool, add, drop []string) []string {
	all := allCapabilities()
	if privileged {
		return all
	}
	norm := func(c string) string {
		if c == "ALL" || len(c) > 4 && c[:4] == "CAP_" {
			return c
		}
		return "CAP_" + c
	}
	set := map[string]bool{}
	for _, c := range defaultCapabilities {
		set[c] = true
	}
	for _, c := range drop {
		if norm(c) == "ALL" {
			set = map[string]bool{}
			break
		}
	}
	for _, c := range add {
		if norm(c) == "ALL" {
			for _, a := range all {
				set[a] = true
			}
			continue
		}
		set[norm(c)] = true
	}
	for _, c := range drop {
		delete(set, norm(c))
	}
	var out []string
	for _, c := range all {
		if set[c] {
			out = append(out, c)
		}
	}
	return out
}

// runningContainer is one started container run.
type runningContainer struct {
	id      string
	lc      *libcontainer.Container
	proc    *libcontainer.Process
	relayed sync.WaitGroup
	stdin   *stdinRelay       // stdin: true
	oom     *cgroups.OOMWatch // nil when the watch could not start
	cgDir   string            // the container's memory cgroup directory on the host
}

// startContainer creates and starts a container whose stdout and stderr are
// relayed by relay (called once per stream, in its own goroutine).
//
// With ahead set, the container is created and its init left waiting on
// libcontainer's exec fifo, before any of the container's own code runs
// (libcontainer's Start); release lets it run (Exec). Otherwise it runs at once.
func startContainer(stateRoot string, cfg *containerConfig, ahead bool, relay func(stream string, r io.Reader)) (*runningContainer, error) {
	spec := cfg.spec()
	filter, err := seccompFilter(cfg.Seccomp, cfg.Privileged, cfg.SeccompDir, spec)
	if err != nil {
		return nil, err
	}
	spec.Linux.Seccomp = filter
	lcConfig, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       cfg.ID,
		Spec:             spec,
		UseSystemdCgroup: cfg.SystemdCgroup,
	})
	if err != nil {
		return nil, fmt.Errorf("building container config: %w", err)
	}
	if cfg.Privileged {
		lcConfig.Cgroups.Resources.Devices = []*devices.Rule{{Type: devices.WildcardDevice, Major: devices.Wildcard, Minor: devices.Wildcard, Permissions: "rwm", Allow: true}}
	}
	lc, err := libcontainer.Create(stateRoot, cfg.ID, lcConfig)
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = lc.Destroy()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		_ = lc.Destroy()
		return nil, err
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()
	proc := &libcontainer.Process{
		Args:   cfg.Args,
		Env:    cfg.Env,
		Cwd:    cfg.Cwd,
		UID:    cfg.User.Uid,
		GID:    cfg.User.Gid,
		Stdin:  devNull,
		Stdout: outW,
		Stderr: errW,
		Init:   true,
	}
	var stdin *stdinRelay
	if cfg.StdinFifo != "" {
		s, inR, err := newStdinRelay(cfg.StdinFifo, cfg.StdinOnce)
		if err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			_ = lc.Destroy()
			return nil, fmt.Errorf("making the container's stdin: %w", err)
		}
		defer inR.Close() // the container holds its own copy
		proc.Stdin, stdin = inR, s
	}
	proc.AdditionalGroups = append(proc.AdditionalGroups, cfg.User.Sgids...)
	rc := &runningContainer{id: cfg.ID, lc: lc, proc: proc, stdin: stdin}
	rc.relayed.Add(2)
	go func() { defer rc.relayed.Done(); defer outR.Close(); relay("stdout", outR) }()
	go func() { defer rc.relayed.Done(); defer errR.Close(); relay("stderr", errR) }()
	// Start, then watch the cgroup's OOM kills before the process is let run
	// (Exec): under the systemd driver its scope is gone once it exits. A
	// container created ahead of its turn is let run at its turn (release).
	runErr := lc.Start(proc)
	if runErr == nil {
		rc.watchOOM()
		if !ahead {
			runErr = lc.Exec()
		}
	}
	// The container holds its own copies; ours must go so the relays see EOF.
	outW.Close()
	errW.Close()
	if runErr != nil {
		stdin.stop()
		_ = lc.Destroy()
		if rc.oom != nil {
			rc.oom.Stop()
		}
		// A container created ahead has no log yet: its relays wait for the
		// caller to say where its output goes, which it does on this error
		// (the relays then drain the pipes and end). Waiting here would
		// wait for ever.
		if !ahead {
			rc.relayed.Wait()
		}
		return nil, fmt.Errorf("starting container process: %w", runErr)
	}
	return rc, nil
}

// watchOOM starts following the OOM kills of the container's cgroup, found
// in libcontainer's state whatever the driver (a systemd scope or a cgroupfs
// directory).
func (rc *runningContainer) watchOOM() {
	st, err := rc.lc.State()
	if err != nil {
		return
	}
	if rc.cgDir = cgroups.MemoryDir(st.CgroupPaths); rc.cgDir == "" {
		return
	}
	if w, err := cgroups.WatchOOM(rc.cgDir); err == nil {
		rc.oom = w
	}
}

// oomKilled says whether the OOM killer killed a process of the container;
// call it after wait.
func (rc *runningContainer) oomKilled() bool {
	if rc.oom != nil {
		return rc.oom.Killed()
	}
	if rc.cgDir == "" {
		return false
	}
	oom, _ := cgroups.OOMKilled(rc.cgDir)
	return oom
}

// release lets a container created ahead of its turn run its process
// (libcontainer's Exec opens the exec fifo the init waits on).
func (rc *runningContainer) release() error { return rc.lc.Exec() }

// exitStatus is how a container run ended.
type exitStatus struct {
	Code   int32
	Signal syscall.Signal
}

// wait blocks until the container's init exits and its output is fully relayed.
// Every other process of the container dies with its init (own pid namespace).
func (rc *runningContainer) wait() exitStatus {
	st, err := rc.proc.Wait()
	rc.stdin.stop()
	// In a shared PID namespace the init's children outlive it and would hold
	// the output pipes open: end them (a no-op with a private namespace).
	_ = rc.lc.Signal(syscall.SIGKILL)
	var es exitStatus
	if st == nil {
		var ee interface{ ExitCode() int }
		if errors.As(err, &ee) {
			es.Code = int32(ee.ExitCode())
		} else {
			es.Code = 255
		}
	} else if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		es.Signal = ws.Signal()
		es.Code = 128 + int32(ws.Signal())
	} else {
		es.Code = int32(st.ExitCode())
	}
	rc.relayed.Wait()
	return es
}

func (rc *runningContainer) signal(sig os.Signal) error {
	return rc.lc.Signal(sig)
}

func (rc *runningContainer) pid() int {
	pid, _ := rc.proc.Pid()
	return pid
}

// destroy removes the container's libcontainer state and cgroup, killing any process left.
func (rc *runningContainer) destroy() error {
	_ = rc.lc.Signal(syscall.SIGKILL)
	return rc.lc.Destroy()
}

// killAllContainers sends SIGKILL to every container under a pod's
// libcontainer state root. It needs nothing in memory, so `podrun delete` can
// use it after a supervisor crash.
func killAllContainers(stateRoot string) {
	entries, _ := os.ReadDir(stateRoot)
	for _, e := range entries {
		if lc, err := libcontainer.Load(stateRoot, e.Name()); err == nil {
			_ = lc.Signal(syscall.SIGKILL)
		}
	}
}

// destroyAllContainers removes the libcontainer state of every container of a
// pod whose processes are gone (killAllContainers, then the pod cgroup's
// teardown, make sure of that).
func destroyAllContainers(stateRoot string) error {
	entries, err := os.ReadDir(stateRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		lc, err := libcontainer.Load(stateRoot, e.Name())
		if err != nil {
			// A half-created container has no usable state; its cgroup went with the pod's.
			_ = os.RemoveAll(filepath.Join(stateRoot, e.Name()))
			continue
		}
		// An orphaned init may linger briefly until its new parent reaps it.
		var derr error
		for i := 0; i < 100; i++ {
			if derr = lc.Destroy(); derr == nil {
				break
			}
			_ = lc.Signal(syscall.SIGKILL)
			time.Sleep(50 * time.Millisecond)
		}
		if derr != nil {
			errs = append(errs, fmt.Errorf("destroying container %s: %w", e.Name(), derr))
		}
	}
	return errors.Join(errs...)
}
