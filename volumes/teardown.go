package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Teardown releases everything Setup and Mounts made for the pod in podDir:
// it unmounts every mount under <podDir>/volume-subpaths and <podDir>/volumes
// (subPath binds, tmpfs of Memory emptyDirs, secrets, downwardAPI and projected
// volumes, and anything a container propagated there), then removes both
// directories. It needs nothing but podDir, so it works from another process
// after a crash, and running it again is a no-op. It never follows a symlink
// and never descends into a mount it could not unmount, so hostPath contents
// (which are never under podDir anyway) cannot be deleted through it.
func Teardown(podDir string) error {
	if podDir == "" {
		return errors.New("tearing down volumes: no pod directory given")
	}
	realPod, err := filepath.EvalSymlinks(podDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tearing down volumes in %s: %w", podDir, err)
	}
	realPod, err = filepath.Abs(realPod)
	if err != nil {
		return fmt.Errorf("tearing down volumes in %s: %w", podDir, err)
	}
	var errs []error
	for _, name := range []string{subPathsDirName, volumesDirName} {
		if err := tearDownDir(filepath.Join(realPod, name)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down volumes in %s: %w", podDir, err)
	}
	return nil
}

// Leftovers lists the mount points under podDir that are still mounted in this
// mount namespace (empty after a successful Teardown).
func Leftovers(podDir string) ([]string, error) {
	realPod, err := filepath.EvalSymlinks(podDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing mounts under %s: %w", podDir, err)
	}
	realPod, err = filepath.Abs(realPod)
	if err != nil {
		return nil, err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(realPod))
	if err != nil {
		return nil, fmt.Errorf("listing mounts under %s: %w", podDir, err)
	}
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// tearDownDir unmounts everything at or under dir and removes it. Only dir's
// parent is resolved: if dir itself is a symlink, just the link goes.
func tearDownDir(dir string) error {
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	dir = filepath.Join(parent, filepath.Base(dir))
	if err := unmountAll(dir); err != nil {
		return err
	}
	return removeTree(dir)
}

// unmountAll unmounts every mount at or under dir, newest first, until none is
// left (mounts can be stacked).
func unmountAll(dir string) error {
	const passes = 8
	for range passes {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return fmt.Errorf("listing mounts under %s: %w", dir, err)
		}
		if len(mounts) == 0 {
			return nil
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := unmount(mounts[i].Mountpoint); err != nil {
				return err
			}
		}
	}
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("listing mounts under %s: %w", dir, err)
	}
	if len(left) == 0 {
		return nil
	}
	paths := make([]string, 0, len(left))
	for _, m := range left {
		paths = append(paths, m.Mountpoint)
	}
	return fmt.Errorf("mounts remain under %s after %d attempts: %s", dir, passes, strings.Join(paths, ", "))
}

// unmount unmounts p without following a symlink at p. A busy mount (a process
// still has a file open there) is detached lazily so that the pod can go.
func unmount(p string) error {
	err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(p, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // EINVAL: no longer a mount point
	}
	return fmt.Errorf("unmounting %s: %w", p, err)
}

// removeTree removes path like os.RemoveAll (openat with O_NOFOLLOW, so no
// symlink is ever followed) but refuses to enter a directory on another mount.
func removeTree(path string) error {
	pfd, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", filepath.Dir(path), err)
	}
	defer unix.Close(pfd)
	id, err := mountIdentity(pfd)
	if err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(path), err)
	}
	return removeAt(pfd, filepath.Base(path), id, path)
}

type mountID struct {
	mnt uint64 // STATX_MNT_ID, when the kernel reports it
	dev uint64
}

func mountIdentity(fd int) (mountID, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return mountID{}, err
	}
	id := mountID{dev: uint64(stx.Dev_major)<<32 | uint64(stx.Dev_minor)}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		id.mnt = stx.Mnt_id
	}
	return id, nil
}

func removeAt(dirfd int, name string, parent mountID, display string) error {
	for attempt := 0; ; attempt++ {
		err := unix.Unlinkat(dirfd, name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("removing %s: %w", display, err)
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			if attempt < 3 {
				continue // replaced by a file or symlink meanwhile: unlink that
			}
		}
		if err != nil {
			return fmt.Errorf("opening %s: %w", display, err)
		}
		if err := removeChildren(fd, parent, display); err != nil {
			return err
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) || attempt >= 3 {
			return fmt.Errorf("removing %s: %w", display, err)
		}
	}
}

// removeChildren empties the directory fd (and closes it).
func removeChildren(fd int, parent mountID, display string) error {
	dir := os.NewFile(uintptr(fd), display)
	defer dir.Close()
	id, err := mountIdentity(fd)
	if err != nil {
		return fmt.Errorf("stat %s: %w", display, err)
	}
	if id.dev != parent.dev || id.mnt != parent.mnt {
		return fmt.Errorf("refusing to remove %s: another filesystem is mounted there", display)
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading %s: %w", display, err)
	}
	for _, n := range names {
		if err := removeAt(fd, n, parent, filepath.Join(display, n)); err != nil {
			return err
		}
	}
	return nil
}
