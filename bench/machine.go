package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// machine describes the host the figures come from.
func machine(podrunBin string) string {
	var parts []string
	cpu := firstValue("/proc/cpuinfo", "model name")
	if cpu == "" {
		cpu = goruntime.GOARCH
	}
	parts = append(parts, fmt.Sprintf("%s, %d cores", cpu, goruntime.NumCPU()))
	if kb := firstValue("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		fmt.Sscan(strings.Fields(kb)[0], &n)
		parts = append(parts, fmt.Sprintf("%.0f GiB", float64(n)/(1<<20)))
	}
	if os := osRelease(); os != "" {
		parts = append(parts, os)
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		parts = append(parts, "kernel "+unix.ByteSliceToString(uts.Release[:]))
	}
	parts = append(parts, cgroupMode())
	if out, err := exec.Command(podrunBin, "version").Output(); err == nil {
		parts = append(parts, strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	}
	parts = append(parts, goruntime.Version())
	return strings.Join(parts, ", ")
}

// firstValue is the value of the first "key : value" line of a /proc file.
func firstValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func osRelease() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// cgroupMode tells cgroup v2, v1, or v1 with a v2 mount beside it (hybrid).
func cgroupMode() string {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "cgroup unknown"
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "cgroup v2"
	}
	if err := unix.Statfs("/sys/fs/cgroup/unified", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "cgroup v1 (hybrid)"
	}
	return "cgroup v1"
}

// loadAverage is the 1-minute load when the bench starts: the host may be shared.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
