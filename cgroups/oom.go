package cgroups

import (
	"fmt"
	"path/filepath"
	"strings"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/fscommon"
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
