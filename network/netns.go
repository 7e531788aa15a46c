package network

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// createNetNS creates a network namespace and pins it with a bind mount at
// path, as containerd's pkg/netns does: a locked OS thread unshares its
// network namespace, the namespace is bind-mounted from
// /proc/self/task/<tid>/ns/net, and the thread goes back to its namespace.
func createNetNS(path string) (retErr error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating netns directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("creating netns mount point: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("creating netns mount point: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(path)
		}
	}()

	errCh := make(chan error, 1)
	go func() {
		// The thread is never unlocked (as in containerd): a goroutine that
		// exits while locked takes its thread with it, so no other goroutine
		// can ever run on a thread whose namespaces were changed.
		runtime.LockOSThread()
		errCh <- func() error {
			orig, err := netns.Get()
			if err != nil {
				return fmt.Errorf("getting the current network namespace: %w", err)
			}
			defer orig.Close()
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unsharing the network namespace: %w", err)
			}
			src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
			mountErr := unix.Mount(src, path, "none", unix.MS_BIND, "")
			if err := netns.Set(orig); err != nil {
				return fmt.Errorf("returning to the original network namespace: %w", err)
			}
			if mountErr != nil {
				return fmt.Errorf("bind-mounting the network namespace on %s: %w", path, mountErr)
			}
			return nil
		}()
	}()
	if err := <-errCh; err != nil {
		return fmt.Errorf("creating network namespace %s: %w", path, err)
	}
	return nil
}

// removeNetNS unmounts the pinned namespace (freeing it once no process is
// in it) and removes the file. Missing pieces are not an error.
func removeNetNS(path string) error {
	for range 8 { // a path can carry stacked mounts; remove them all
		err := unix.Unmount(path, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return fmt.Errorf("unmounting network namespace %s: %w", path, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing network namespace file %s: %w", path, err)
	}
	return nil
}

// mountPoints lists the mount points of this mount namespace under dir
// (dir itself included).
func mountPoints(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mount table: %w", err)
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountInfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mount table: %w", err)
	}
	return out, nil
}

// unescapeMountInfo undoes the octal escapes (\040 for space…) of mountinfo.
func unescapeMountInfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isMountPoint(path string) (bool, error) {
	mps, err := mountPoints(path)
	if err != nil {
		return false, err
	}
	for _, mp := range mps {
		if mp == filepath.Clean(path) {
			return true, nil
		}
	}
	return false, nil
}

// netnsLeftovers lists the files and the mounts under the netns directory.
func netnsLeftovers(dir string) (files, mounts []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, e := range entries {
		files = append(files, filepath.Join(dir, e.Name()))
	}
	mps, err := mountPoints(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, mp := range mps {
		if mp != filepath.Clean(dir) {
			mounts = append(mounts, mp)
		}
	}
	return files, mounts, nil
}
