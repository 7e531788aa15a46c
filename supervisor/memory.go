package supervisor

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// started reports whether every app container of the pod runs or has run
// (or the pod has ended): the start's allocations are garbage by then.
func started(st corev1.PodStatus) bool {
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		return true
	}
	if len(st.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range st.ContainerStatuses {
		if c.State.Running == nil && c.State.Terminated == nil {
			return false
		}
	}
	return true
}

var releasing sync.Mutex

// releaseDelay is how long after the start releaseMemory waits.
const releaseDelay = 500 * time.Millisecond

// releaseMemory gives back to the kernel what the supervisor touched to start
// the pod and does not need while it waits: the freed Go heap
// (debug.FreeOSMemory), and its mappings of its own code and read-only data,
// which libcontainer and the start touched almost whole. Those pages stay in
// the page cache, shared with every other podrun-shim; dropping this
// process's mapping of them (MADV_DONTNEED on a private mapping that was
// never written is exactly that) only means the code it runs again is
// mapped again, a minor fault per 64 KiB.
func releaseMemory() {
	if !releasing.TryLock() {
		return
	}
	defer releasing.Unlock()
	debug.FreeOSMemory()
	dropExeMappings()
}

// dropExeMappings unmaps the pages of the executable's read-only mappings
// (text, rodata) that hold no private copy: a mapping with any anonymous
// page (RELRO, written by the loader) is left alone.
func dropExeMappings() {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	type vma struct{ start, end uintptr }
	var (
		drop []vma
		cur  *vma
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			cur = nil
			// start-end perms offset dev inode [path]
			lo, hi, _ := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			inode, err3 := strconv.ParseUint(f[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil || inode != exe.Ino {
				continue
			}
			if perms := f[1]; perms[1] == 'w' || perms[3] != 'p' {
				continue
			}
			if maj, min, ok := strings.Cut(f[3], ":"); !ok || !sameDev(maj, min, exe.Dev) {
				continue
			}
			drop = append(drop, vma{uintptr(start), uintptr(end)})
			cur = &drop[len(drop)-1]
			continue
		}
		if cur != nil && len(f) >= 2 && f[0] == "Anonymous:" && f[1] != "0" {
			drop = drop[:len(drop)-1] // a private copy: keep the mapping's pages
			cur = nil
		}
	}
	for _, v := range drop {
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, v.start, v.end-v.start, unix.MADV_DONTNEED)
	}
}

// sameDev compares smaps' hexadecimal major:minor with a stat's device.
func sameDev(maj, min string, dev uint64) bool {
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(min, 16, 32)
	return err1 == nil && err2 == nil && uint32(a) == unix.Major(dev) && uint32(b) == unix.Minor(dev)
}
