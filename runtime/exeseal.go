package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ExeSealingProblem says why libcontainer cannot seal this binary cheaply for
// containers whose state lies under stateDir, or nil when it can.
//
// libcontainer re-executes a sealed copy of /proc/self/exe as every container's
// init. It first tries a read-only overlay with the binary's directory and the
// container's state directory as its two lower directories (exeseal.sealedOverlayfs
// in runc 1.5); when that fails it silently copies the whole binary into a memfd
// (CloneSelfExe): about 20 ms and the binary's size in memory for every container.
// The overlay fails when the two directories overlap (ELOOP): a run root inside the
// binary's directory, or the binary inside the run root. This does the same
// fsopen/fsconfig steps without mounting anything, so podrun can warn instead.
func ExeSealingProblem(stateDir string) error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil // nothing to compare with; libcontainer will say more
	}
	binDir := filepath.Dir(exe)
	fd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("overlayfs cannot be used to seal %s (fsopen: %w): every container start copies the whole binary", exe, err)
	}
	defer unix.Close(fd)
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	if err := unix.FsconfigSetString(fd, "lowerdir", esc.Replace(binDir)+":"+esc.Replace(stateDir)); err != nil {
		return fmt.Errorf("overlayfs refuses %s and %s as lower directories (%w): every container start copies the whole binary %s; keep the run root outside the binary's directory and the binary outside the run root", binDir, stateDir, err, exe)
	}
	_ = unix.FsconfigSetString(fd, "xino", "off")
	if err := unix.FsconfigCreate(fd); err != nil {
		return fmt.Errorf("libcontainer cannot seal %s with an overlay of %s and %s (%w), so every container start copies the whole binary into memory; keep the run root outside the binary's directory and the binary outside the run root", exe, binDir, stateDir, err)
	}
	return nil
}
