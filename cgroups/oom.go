package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/fscommon"
	"golang.org/x/sys/unix"
)

// OOMKilled says whether the kernel's OOM killer has killed a process of the
// cgroup at cgroupPath (a cgroup path such as Pod.ContainerPath(id), or a host
// directory below /sys/fs/cgroup), whichever limit ran out: the container's or
// the pod's. v1 reads memory.oom_control (oom_kill, or under_oom when the
// killer is disabled), v2 memory.events (oom_kill). The counter lives as long
// as the cgroup: ask before libcontainer's Destroy removes it.
func OOMKilled(cgroupPath string) (bool, error) {
	dir, err := memoryDir(cgroupPath)
	if err != nil {
		return false, err
	}
	if cg.IsCgroup2UnifiedMode() {
		n, err := fscommon.GetValueByKey(dir, "memory.events", "oom_kill")
		if err != nil {
			return false, fmt.Errorf("reading the OOM kills of cgroup %s: %w", cgroupPath, err)
		}
		return n > 0, nil
	}
	n, err := fscommon.GetValueByKey(dir, "memory.oom_control", "oom_kill")
	if err != nil {
		return false, fmt.Errorf("reading the OOM kills of cgroup %s: %w", cgroupPath, err)
	}
	if n > 0 {
		return true, nil
	}
	under, err := fscommon.GetValueByKey(dir, "memory.oom_control", "under_oom")
	if err != nil {
		return false, fmt.Errorf("reading the OOM state of cgroup %s: %w", cgroupPath, err)
	}
	return under > 0, nil
}

// OOMKillCount is the number of processes of the cgroup the OOM killer has
// killed so far (for a caller that reuses a cgroup across restarts).
func OOMKillCount(cgroupPath string) (uint64, error) {
	dir, err := memoryDir(cgroupPath)
	if err != nil {
		return 0, err
	}
	file := "memory.oom_control"
	if cg.IsCgroup2UnifiedMode() {
		file = "memory.events"
	}
	n, err := fscommon.GetValueByKey(dir, file, "oom_kill")
	if err != nil {
		return 0, fmt.Errorf("reading the OOM kills of cgroup %s: %w", cgroupPath, err)
	}
	return n, nil
}

// MemoryDir picks the memory controller's directory from a cgroup manager's
// paths by controller (libcontainer's State.CgroupPaths): the v2 directory on
// a unified host, the v1 memory one otherwise (on a hybrid host "" is the v2
// mount, which has no memory controller).
func MemoryDir(paths map[string]string) string {
	if cg.IsCgroup2UnifiedMode() {
		return paths[""]
	}
	return paths["memory"]
}

// memoryDir is the host directory of the memory controller for cgroupPath.
func memoryDir(cgroupPath string) (string, error) {
	if strings.HasPrefix(cgroupPath, "/sys/fs/cgroup/") {
		return filepath.Clean(cgroupPath), nil
	}
	if !filepath.IsAbs(cgroupPath) {
		return "", fmt.Errorf("cgroup path %q must be absolute", cgroupPath)
	}
	if cg.IsCgroup2UnifiedMode() {
		return filepath.Join(fs2.UnifiedMountpoint, cgroupPath), nil
	}
	mnt, err := cg.FindCgroupMountpoint("", "memory")
	if err != nil {
		return "", fmt.Errorf("finding the memory cgroup hierarchy: %w", err)
	}
	return filepath.Join(mnt, cgroupPath), nil
}

// OOMWatch follows a container cgroup's OOM kills while the cgroup lives. On
// cgroup v2 under the systemd driver the container's scope, memory.events with
// it, is removed by systemd as soon as its last process exits — before the
// supervisor, woken by that exit, could read the counter. So the counter is
// read when the kernel says memory.events changed, as containerd's shim does
// (cgroups/v2 Manager.EventChan) and libcontainer's NotifyOOM
// (registerMemoryEventV2): inotify on memory.events and cgroup.events.
type OOMWatch struct {
	dir    string
	f      *os.File
	killed atomic.Bool
	done   chan struct{}
}

// WatchOOM starts following the OOM kills of the cgroup v2 directory dir (a
// host path below /sys/fs/cgroup, e.g. from libcontainer's state). Start it
// before the container's process runs. On v1 it only reads the counter in
// Killed (v1 cgroups stay until libcontainer's Destroy).
func WatchOOM(dir string) (*OOMWatch, error) {
	w := &OOMWatch{dir: dir, done: make(chan struct{})}
	if !cg.IsCgroup2UnifiedMode() {
		close(w.done)
		return w, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watching the OOM kills of %s: %w", dir, err)
	}
	evWd, err := unix.InotifyAddWatch(fd, filepath.Join(dir, "memory.events"), unix.IN_MODIFY)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching the OOM kills of %s: %w", dir, err)
	}
	cgWd, err := unix.InotifyAddWatch(fd, filepath.Join(dir, "cgroup.events"), unix.IN_MODIFY)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching the OOM kills of %s: %w", dir, err)
	}
	// Non-blocking, so that Go's poller reads it and Close ends the read.
	w.f = os.NewFile(uintptr(fd), "inotify")
	w.check(false)
	go w.run(evWd, cgWd)
	return w, nil
}

// check reads the counter; gone says a failed read counts as a kill (after
// memory.events changed: the cgroup was removed right after, as runc's
// registerMemoryEventV2 decides).
func (w *OOMWatch) check(gone bool) {
	n, err := fscommon.GetValueByKey(w.dir, "memory.events", "oom_kill")
	if n > 0 || (err != nil && gone) {
		w.killed.Store(true)
	}
}

func (w *OOMWatch) run(evWd, cgWd int) {
	defer close(w.done)
	var buf [16 * (unix.SizeofInotifyEvent + unix.PathMax + 1)]byte
	for {
		n, err := w.f.Read(buf[:])
		if err != nil || n < unix.SizeofInotifyEvent {
			return
		}
		// Every event of the read first: the kernel may queue cgroup.events'
		// "populated 0" before the memory.events change of the same kill.
		end := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch int(ev.Wd) {
			case evWd:
				w.check(true)
			case cgWd:
				populated, err := fscommon.GetValueByKey(w.dir, "cgroup.events", "populated")
				if err != nil || populated == 0 {
					end = true
				}
			}
			if ev.Mask&unix.IN_IGNORED != 0 { // the cgroup was removed
				end = true
			}
		}
		if end {
			w.check(false)
			return
		}
	}
}

// Killed stops the watch and says whether the OOM killer killed a process of
// the cgroup. Call it once the container's processes are gone: it waits a
// moment for the kernel's last notifications (they are delivered from a work
// queue, possibly after the exit was seen).
func (w *OOMWatch) Killed() bool {
	select {
	case <-w.done:
	case <-time.After(oomSettle):
	}
	if w.f != nil {
		_ = w.f.Close()
		<-w.done
	}
	if !w.killed.Load() {
		if ok, err := OOMKilled(w.dir); err == nil && ok {
			w.killed.Store(true)
		}
	}
	return w.killed.Load()
}

// Stop ends the watch without waiting (a container that never ran).
func (w *OOMWatch) Stop() {
	if w.f != nil {
		_ = w.f.Close()
		<-w.done
	}
}

// oomSettle bounds how long Killed waits for the cgroup's last events.
const oomSettle = 2 * time.Second

// MemoryUsage is the memory a cgroup's processes use, page cache included,
// from its memory directory (MemoryDir): memory.current on v2,
// memory.usage_in_bytes on v1, as the kubelet's GetPodCgroupMemoryUsage
// reads it.
func MemoryUsage(dir string) (int64, error) {
	file := "memory.usage_in_bytes"
	if cg.IsCgroup2UnifiedMode() {
		file = "memory.current"
	}
	n, err := fscommon.GetCgroupParamUint(dir, file)
	if err != nil {
		return 0, fmt.Errorf("reading the memory usage of cgroup %s: %w", dir, err)
	}
	return int64(n), nil
}
