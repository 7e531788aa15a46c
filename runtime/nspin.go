package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// pinNamespaces creates the pod's IPC and UTS namespaces (the ones the
// kubelet's sandbox shares between a pod's containers, besides the network)
// and keeps them alive with bind mounts under dir, so that no process has to
// hold them open between containers.
func pinNamespaces(dir, hostname string, ipc, uts, mqueue bool) error {
	if !ipc && !uts {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// The thread's namespaces change, so it must never run other goroutines:
		// returning while locked makes the Go runtime end the thread.
		goruntime.LockOSThread()
		flags := 0
		if ipc {
			flags |= unix.CLONE_NEWIPC
		}
		if uts {
			flags |= unix.CLONE_NEWUTS
		}
		if err := unix.Unshare(flags); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if uts {
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				errc <- fmt.Errorf("setting hostname %q: %w", hostname, err)
				return
			}
		}
		tid := unix.Gettid()
		for _, ns := range []struct {
			name string
			want bool
		}{{"ipc", ipc}, {"uts", uts}} {
			if !ns.want {
				continue
			}
			target := filepath.Join(dir, ns.name)
			f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o400)
			if err != nil {
				errc <- err
				return
			}
			f.Close()
			src := fmt.Sprintf("/proc/self/task/%d/ns/%s", tid, ns.name)
			if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
				errc <- fmt.Errorf("pinning %s namespace: %w", ns.name, err)
				return
			}
		}
		if ipc && mqueue {
			// The IPC namespace's message queue filesystem, mounted from
			// inside it, for containers that cannot mount it themselves
			// (their own user namespace does not own it: hostUsers false).
			target := filepath.Join(dir, "mqueue")
			if err := os.MkdirAll(target, 0o755); err != nil {
				errc <- err
				return
			}
			if err := unix.Mount("mqueue", target, "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				errc <- fmt.Errorf("mounting the pod's mqueue: %w", err)
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		_ = unpinNamespaces(dir)
		return err
	}
	return nil
}

// mountShm gives the pod one /dev/shm, shared like its IPC namespace, as
// containerd's sandbox does (64 MiB).
func mountShm(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("shm", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mounting the pod's /dev/shm: %w", err)
	}
	return nil
}

// unpinNamespaces undoes pinNamespaces and mountShm; it is idempotent.
func unpinNamespaces(dir string) error {
	var errs []error
	for _, name := range []string{"ipc", "uts", "shm", "mqueue"} {
		p := filepath.Join(dir, name)
		if err := unmountAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unmountAll detaches every mount stacked on path; a path that is not mounted
// (or does not exist) is fine.
func unmountAll(path string) error {
	for i := 0; i < 16; i++ {
		err := unix.Unmount(path, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unmounting %s: %w", path, err)
		}
	}
	return nil
}
