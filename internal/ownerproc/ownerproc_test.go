package ownerproc

import (
	"fmt"
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

// TestMain lets the test binary be the standby process of TestStandby.
func TestMain(m *testing.M) {
	if os.Getenv("OWNERPROC_TEST_STANDBY") == "1" {
		work, ok, err := StandbyWork()
		if !ok {
			if err != nil {
				os.Exit(3)
			}
			os.Exit(0) // discarded
		}
		fmt.Println("given", work) // to the log it was given
		Ready(os.NewFile(3, "ready"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func standbyForTest(t *testing.T) *Standby {
	t.Helper()
	t.Setenv("OWNERPROC_TEST_STANDBY", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := SpawnStandby(exe, nil, "the test standby")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A standby given its work writes to the log it is given and becomes ready;
// it takes work once; a discarded one exits before Discard returns.
func TestStandby(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log")
	s := standbyForTest(t)
	ok, err := s.Give("uid-1", logPath, 30*time.Second)
	if !ok || err != nil {
		t.Fatalf("Give: %v %v", ok, err)
	}
	if b, _ := os.ReadFile(logPath); string(b) != "given uid-1\n" {
		t.Errorf("the standby's log: %q, want %q", b, "given uid-1\n")
	}
	if ok, _ := s.Give("uid-2", logPath, time.Second); ok {
		t.Error("a standby took work twice")
	}
	s.Discard() // nothing left to discard
	var nilStandby *Standby
	if ok, _ := nilStandby.Give("uid-3", logPath, time.Second); ok {
		t.Error("no standby took work")
	}
	nilStandby.Discard()

	d := standbyForTest(t)
	pid := d.p.cmd.Process.Pid
	d.Discard()
	if d.p.cmd.ProcessState == nil || !d.p.cmd.ProcessState.Success() {
		t.Errorf("a discarded standby (pid %d) did not exit 0 before Discard returned: %v", pid, d.p.cmd.ProcessState)
	}
	if ok, _ := d.Give("uid-4", logPath, time.Second); ok {
		t.Error("a discarded standby took work")
	}
}
