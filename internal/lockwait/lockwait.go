// Package lockwait tells the user when podrun waits for a lock that another
// process holds, so that a command blocked behind another one says so
// instead of hanging silently.
package lockwait

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// After is how long a wait goes unmentioned.
const After = time.Second

// Out is where the message goes.
var (
	outMu sync.Mutex
	Out   io.Writer = os.Stderr
)

// Notice is called before waiting for the lock on path. If the wait lasts
// longer than After it prints "waiting for lock on PATH (held by process
// PID)". Call stop as soon as the lock is taken or the wait ends.
func Notice(path string) (stop func()) {
	t := time.AfterFunc(After, func() {
		msg := "waiting for lock on " + path
		if pid := holder(path); pid > 0 {
			msg += fmt.Sprintf(" (held by process %d)", pid)
		}
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintln(Out, msg)
	})
	return func() { t.Stop() }
}

// holder finds a process that holds a lock on path in /proc/locks (0 if none is found).
func holder(path string) int {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; blocked waiters are marked "->".
	want := fmt.Sprintf(":%d", st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" {
			continue
		}
		dev := strings.Split(fields[5], ":")
		if len(dev) != 3 || !strings.HasSuffix(fields[5], want) || ":"+dev[2] != want {
			continue
		}
		major, err1 := strconv.ParseUint(dev[0], 16, 32)
		minor, err2 := strconv.ParseUint(dev[1], 16, 32)
		if err1 != nil || err2 != nil || major != uint64(unix.Major(st.Dev)) || minor != uint64(unix.Minor(st.Dev)) {
			continue
		}
		pid, _ := strconv.Atoi(fields[4])
		return pid
	}
	return 0
}
