package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// runTmpfs mounts a tmpfs at dir/run-tmpfs for the state that podrun's run
// root and runc's state root keep: their defaults, /run/podrun and /run/runc,
// are on a tmpfs on the systemd hosts both are made for (CI runners). A
// host whose /run is a disk directory would measure its file system instead:
// on ext4 without a journal (this project's development VM) every new inode
// is a scan of the recently deleted ones, ~30 ms of CPU per pod start.
// The mount is made under dir, never at a path podrun's leak check looks
// under, and unmountTmpfs removes it.
func runTmpfs(dir string) (string, error) {
	mnt := filepath.Join(dir, "run-tmpfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return "", err
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=512m"); err != nil {
		return "", fmt.Errorf("mounting a tmpfs for the run state at %s: %w", mnt, err)
	}
	return mnt, nil
}

// unmountTmpfs undoes runTmpfs (what is in it goes with it).
func unmountTmpfs(dir string) error {
	mnt := filepath.Join(dir, "run-tmpfs")
	if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmounting %s: %w", mnt, err)
	}
	return nil
}
