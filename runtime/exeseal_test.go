package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run root inside the binary's directory makes libcontainer fall back to copying
// the binary for every container: ExeSealingProblem must say so, and stay quiet for
// separate directories.
func TestExeSealingProblem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (overlayfs)")
	}
	if err := ExeSealingProblem(t.TempDir()); err != nil {
		t.Fatalf("separate directories: %v", err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	inside, err := os.MkdirTemp(filepath.Dir(exe), "run-root-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(inside)
	err = ExeSealingProblem(inside)
	if err == nil {
		t.Fatalf("a run root inside the binary's directory %s: no problem reported", filepath.Dir(exe))
	}
	if !strings.Contains(err.Error(), "copies the whole binary") || !strings.Contains(err.Error(), "run root outside the binary's directory") {
		t.Errorf("the warning does not say what happens and what to do: %v", err)
	}
}
