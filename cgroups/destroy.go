package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
	"golang.org/x/sys/unix"
)

// DefaultDestroyTimeout bounds DestroyPod: the time killed processes get to
// leave the cgroup (their parent must reap them, which a slow PID 1 does in
// seconds) and for rmdir to stop returning EBUSY.
const DefaultDestroyTimeout = 30 * time.Second

// DestroyPod removes the pod cgroup <parent>/pod<podUID> and everything below
// it, in every hierarchy and in both the cgroupfs and systemd layouts: every
// process still inside is SIGKILLed (v2: cgroup.kill; v1: freeze, kill, thaw),
// DestroyPod waits for them to leave, then removes the children and the pod
// cgroup, retrying EBUSY. It needs nothing but its arguments, so it works from
// another process after a supervisor crash, and a pod already gone is not an
// error. The parent is kept. A caller that is the parent of processes in the
// pod must keep reaping them meanwhile (e.g. a goroutine in Wait).
func DestroyPod(parent, podUID string) error {
	return DestroyPodWithin(parent, podUID, DefaultDestroyTimeout)
}

// DestroyPodWithin is DestroyPod with its own bound on the wait.
func DestroyPodWithin(parent, podUID string, timeout time.Duration) error {
	parent, err := cleanParent(parent)
	if err != nil {
		// No cgroup was made under a parent that creation refuses: there is
		// nothing to destroy, and the pod's deletion must not fail for it.
		return nil
	}
	if err := checkName("pod UID", podUID); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	_, podSlice := systemdSlices(parent, podUID)
	var errs []error
	if err := destroyTree(podPath(parent, podUID), deadline); err != nil {
		errs = append(errs, err)
	}
	if slicePath, err := systemd.ExpandSlice(podSlice); err == nil {
		if err := destroySlice(slicePath, podSlice, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroying the cgroup of pod %s: %w", podUID, err)
	}
	return nil
}

// DestroyParent destroys every pod cgroup under parent as DestroyPod does, and
// parent itself (for tests and for uninstalling podrun).
func DestroyParent(parent string, timeout time.Duration) error {
	parent, err := cleanParent(parent)
	if err != nil {
		return err
	}
	if parent == "/" {
		return errors.New("refusing to destroy the root cgroup")
	}
	deadline := time.Now().Add(timeout)
	var errs []error
	if err := destroyTree(parent, deadline); err != nil {
		errs = append(errs, err)
	}
	if p := systemdParentPath(parent); p != "" {
		slice, _ := systemdSlices(parent, "x")
		if err := destroySlice(p, slice, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroying cgroup parent %s: %w", parent, err)
	}
	return nil
}

// destroySlice removes a slice of the systemd driver: its processes are
// killed first, then systemd is asked to stop the unit, and what is left of
// its directories is removed.
func destroySlice(rel, slice string, deadline time.Time) error {
	dirs, err := hierarchyDirs(rel)
	if err != nil {
		return err
	}
	if len(existing(dirs)) == 0 {
		return nil
	}
	if err := killAndWait(rel, existing(dirs), deadline); err != nil {
		return err
	}
	if systemd.IsRunningSystemd() {
		parent := "-.slice"
		if i := strings.LastIndex(slice, "-"); i > 0 {
			parent = slice[:i] + ".slice"
		}
		m, err := manager.New(&cg.Cgroup{Systemd: true, Parent: parent, Name: slice, Resources: &cg.Resources{SkipDevices: true}})
		if err == nil {
			// Stops the unit; failures leave directories that removeTree handles.
			_ = m.Destroy()
		}
	}
	return removeTree(rel, existing(dirs), deadline)
}

// destroyTree kills every process in cgroup rel and below, waits for them to
// go and removes the directories, in every hierarchy.
func destroyTree(rel string, deadline time.Time) error {
	dirs, err := hierarchyDirs(rel)
	if err != nil {
		return err
	}
	dirs = existing(dirs)
	if len(dirs) == 0 {
		return nil
	}
	if err := killAndWait(rel, dirs, deadline); err != nil {
		return err
	}
	return removeTree(rel, dirs, deadline)
}

// killAndWait SIGKILLs every process in dirs (and below) until none is left.
func killAndWait(rel string, dirs []string, deadline time.Time) error {
	killAll(rel, dirs)
	delay := 5 * time.Millisecond
	for {
		pids := pidsIn(dirs)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in cgroup %s after SIGKILL", pids, rel)
		}
		// Stragglers: processes that joined a hierarchy the freezer did not cover.
		signalPids(rel, pids)
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// killAll kills the processes in dirs with as little room for them to fork as
// the kernel gives: cgroup.kill on v2, freeze/kill/thaw on v1.
func killAll(rel string, dirs []string) {
	if cg.IsCgroup2UnifiedMode() {
		dir := dirs[0]
		if err := cg.WriteFile(dir, "cgroup.kill", "1"); err == nil {
			return
		}
		// Kernels before 5.14 have no cgroup.kill.
		frozen := cg.WriteFile(dir, "cgroup.freeze", "1") == nil
		signalPids(rel, pidsIn(dirs))
		if frozen {
			_ = cg.WriteFile(dir, "cgroup.freeze", "0")
		}
		return
	}
	var freezer string
	if mnt, err := cg.FindCgroupMountpoint("", "freezer"); err == nil {
		freezer = filepath.Join(mnt, rel)
	}
	frozen := false
	if freezer != "" {
		if _, err := os.Stat(freezer); err == nil {
			// Freezing is best effort: a cgroup stuck FREEZING is thawed by Set
			// and its processes are killed anyway, then re-killed by the wait loop.
			frozen = (&fs.FreezerGroup{}).Set(freezer, &cg.Resources{Freezer: cg.Frozen}) == nil
		}
	}
	signalPids(rel, pidsIn(dirs))
	if frozen {
		// v1 frozen tasks only die once thawed.
		_ = (&fs.FreezerGroup{}).Set(freezer, &cg.Resources{Freezer: cg.Thawed})
	}
}

// pidsIn lists the processes in dirs and their descendants, without duplicates.
func pidsIn(dirs []string) []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range dirs {
		pids, _ := cg.GetAllPids(d) // a directory vanishing meanwhile holds no one
		for _, p := range pids {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Ints(out)
	return out
}

// signalPids SIGKILLs pids through pidfds, after checking that each process is
// still in cgroup rel, so that a recycled pid is never hit.
func signalPids(rel string, pids []int) {
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if errors.Is(err, unix.ENOSYS) {
				// Kernels before 5.3: plain kill, accepting the pid-reuse window.
				if inCgroup(pid, rel) {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
			continue
		}
		if inCgroup(pid, rel) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		_ = unix.Close(fd)
	}
}

// inCgroup says whether process pid is in cgroup rel or below, in any hierarchy.
func inCgroup(pid int, rel string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := parts[2]
		if p == rel || strings.HasPrefix(p, rel+"/") {
			return true
		}
	}
	return false
}

// removeTree removes dirs and everything below them, children first, retrying
// EBUSY (processes not yet reaped) until the deadline.
func removeTree(rel string, dirs []string, deadline time.Time) error {
	var errs []error
	for _, d := range dirs {
		sub, err := subdirs(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing cgroups below %s: %w", d, err))
			continue
		}
		all := append([]string{d}, sub...)
		for i := len(all) - 1; i >= 0; i-- {
			if err := rmdirWait(rel, all[i], deadline); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func rmdirWait(rel, dir string, deadline time.Time) error {
	delay := 5 * time.Millisecond
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			signalPids(rel, pidsIn([]string{dir}))
			time.Sleep(delay)
			delay = min(2*delay, 100*time.Millisecond)
		default:
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
	}
}
