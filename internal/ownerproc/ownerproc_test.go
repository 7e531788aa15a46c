package ownerproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/store"
)

// WaitGone after the process gave up its record (ExitIfIdle) still waits
// until the process has exited: its last steps (its addresses on lo, its
// lock) come after the record.
func TestWaitGoneWaitsForTheExitingProcess(t *testing.T) {
	paths := store.OwnerPaths{Dir: t.TempDir()}
	cmd := exec.Command("sleep", "0.5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() { _ = cmd.Process.Kill(); <-done }()
	pid := cmd.Process.Pid
	start, err := store.ProcessStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The record as WriteOwner makes it, for the child.
	if err := os.WriteFile(paths.StartTimeFile(), []byte(strconv.FormatUint(start, 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.PidFile(), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	store.RemoveOwner(paths)
	p := Process{Paths: paths, What: "the test process", Needed: func() bool { return false }}
	if err := p.WaitGone(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err == nil && !strings.Contains(string(stat), ") Z ") {
		t.Errorf("WaitGone returned while the exiting process runs: %s", stat)
	}
}
