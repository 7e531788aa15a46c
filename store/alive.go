package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcessStartTime is a process's start time in clock ticks since boot (field
// 22 of /proc/<pid>/stat), which tells a process from a later one that reuses
// its pid (runc's state keeps it for the same reason).
func ProcessStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStartTime(string(data))
}

// parseStartTime reads the start time and refuses zombies (a dead process
// whose parent has not waited yet).
func parseStartTime(stat string) (uint64, error) {
	// The command name is in parentheses and may itself hold spaces or ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state); the start time is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("process has exited")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// WriteSupervisor records the calling process as the pod's supervisor: its
// start time first, then its pid.
func WriteSupervisor(paths PodPaths) error {
	pid := os.Getpid()
	start, err := ProcessStartTime(pid)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(paths.StartTimeFile(), []byte(strconv.FormatUint(start, 10))); err != nil {
		return err
	}
	return writeFileAtomic(paths.PidFile(), []byte(strconv.Itoa(pid)))
}

// SupervisorPid returns the pid of the pod's supervisor when it is alive, else
// 0: the recorded pid runs and started when the recorded supervisor did, as
// runc's hasInit decides. Asking creates and locks nothing.
func SupervisorPid(paths PodPaths) int {
	return livePid(paths.PidFile(), paths.StartTimeFile())
}

// livePid is the pid recorded in pidFile when that process runs and started
// at the time recorded in startFile (runc's hasInit), else 0.
func livePid(pidFile, startFile string) int {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	data, err = os.ReadFile(startFile)
	if err != nil {
		return 0
	}
	want, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0
	}
	if got, err := ProcessStartTime(pid); err != nil || got != want {
		return 0
	}
	return pid
}
