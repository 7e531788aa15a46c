package cgroups

import (
	"fmt"
	"os"
	"strings"

	cg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
)

// DefaultDriver is the cgroup driver containerd and the kubelet would use on
// this host: systemd when systemd is PID 1 (sd_booted: /run/systemd/system
// exists) and the hierarchy is the unified cgroup v2 one, cgroupfs otherwise
// (on v1 and hybrid hosts, and under any other init). Two managers of one
// hierarchy fight: under systemd on v2, cgroups made behind its back can be
// moved or removed when it reorganises its tree.
func DefaultDriver() string {
	if cg.IsCgroup2UnifiedMode() && systemd.IsRunningSystemd() {
		return DriverSystemd
	}
	return DriverCgroupfs
}

// supervisorScopePrefix names the supervisors' scopes: podrun-supervisor-<uid>.scope.
const supervisorScopePrefix = "podrun-supervisor"

// SupervisorSlice holds the supervisors' scopes under the systemd driver, as
// rootful podman keeps conmon's libpod-conmon-<id>.scope in machine.slice and
// containerd runs its shims in its own service: out of the unit of whoever
// ran `podrun apply`.
const SupervisorSlice = "system.slice"

// LeaveCallerUnit moves the calling process (a pod supervisor) into a
// transient scope of its own, podrun-supervisor-<podUID>.scope in
// SupervisorSlice, through systemd: stopping the unit that started it (a
// login session's scope, a CI step's service) no longer kills the pod's
// supervisor. It returns the scope's cgroup path. Only for the systemd driver.
func LeaveCallerUnit(podUID string) (string, error) {
	if err := checkName("pod UID", podUID); err != nil {
		return "", err
	}
	return LeaveCallerUnitAs(supervisorScopePrefix, podUID)
}

// LeaveCallerUnitAs is LeaveCallerUnit for any podrun process that must
// outlive the command that started it (the services owner, the workload
// controllers): it moves into <prefix>-<name>.scope in SupervisorSlice.
func LeaveCallerUnitAs(prefix, name string) (string, error) {
	if err := checkName("scope name", prefix+"-"+name); err != nil {
		return "", err
	}
	config := &cg.Cgroup{
		Systemd: true, Parent: SupervisorSlice, ScopePrefix: prefix, Name: name,
		Resources: &cg.Resources{SkipDevices: true},
	}
	m, err := manager.New(config)
	if err != nil {
		return "", fmt.Errorf("creating the systemd scope %s-%s: %w", prefix, name, err)
	}
	if err := m.Apply(os.Getpid()); err != nil {
		return "", fmt.Errorf("moving the process into its systemd scope: %w", err)
	}
	scope := prefix + "-" + name + ".scope"
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "0::") && strings.HasSuffix(line, "/"+scope) {
			return strings.TrimPrefix(line, "0::"), nil
		}
	}
	// A scope of that name left over from an earlier process makes systemd
	// start nothing; say where the process stayed.
	return "", fmt.Errorf("the process is not in %s after starting it (/proc/self/cgroup: %s)", scope, strings.TrimSpace(string(data)))
}
