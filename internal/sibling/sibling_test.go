package sibling

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A binary is found in the running binary's directory, and a missing one is
// named with where it must be installed.
func TestPath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Path(filepath.Base(exe)); err != nil || p != exe {
		t.Errorf("Path(itself) = %q, %v; want %q", p, err, exe)
	}
	_, err = Path("podrun-no-such-binary")
	if err == nil || !strings.Contains(err.Error(), "podrun-no-such-binary must be installed next to "+exe) {
		t.Errorf("Path(missing): %v", err)
	}
}
