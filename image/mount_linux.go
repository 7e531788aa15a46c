package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// MountRootfs mounts at target an overlayfs of layerDirs (bottom first, as LayerDirs
// returns them) under the writable upper directory; work must be an empty directory on the
// same filesystem as upper. All paths must be absolute.
//
// The kernel takes mount options of at most one page. When the absolute layer paths do
// not fit, the lower directories are named by short symlinks in a private directory, and
// the mount runs on a thread whose working directory is that directory (unshare(CLONE_FS)
// keeps the process's own working directory untouched), so images with a hundred layers
// and more mount too. Safe for concurrent use.
//
// The mount is volatile (overlayfs skips every sync of the upper directory, also the
// sync_filesystem of the whole upper filesystem at unmount, which can stall for tens of
// milliseconds when other processes have dirty data): upper must die with the container
// run, as podrun's do (a fresh upper and work directory for every run; after a crash
// overlayfs refuses to reuse a volatile work directory, and nothing reuses it). Kernels
// without volatile (before 5.10) get the plain mount.
func MountRootfs(layerDirs []string, upper, work, target string) error {
	if len(layerDirs) == 0 {
		return errors.New("mounting rootfs: an image needs at least one layer")
	}
	for _, p := range append(slices.Clone(layerDirs), upper, work, target) {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("mounting rootfs at %s: path %q is not absolute", target, p)
		}
		// ':' separates lower dirs and ',' options; overlayfs has no escaping we can rely on.
		if strings.ContainsAny(p, ":,") {
			return fmt.Errorf("mounting rootfs at %s: path %q contains ':' or ','", target, p)
		}
	}
	lowers := slices.Clone(layerDirs)
	slices.Reverse(lowers) // overlayfs wants the top layer first
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lowers, ":"), upper, work)
	if len(opts)+len(",volatile") < os.Getpagesize() && !namedByFD(lowers) {
		if err := mountOverlay(target, opts); err != nil {
			return fmt.Errorf("mounting overlay rootfs at %s (%d layers): %w", target, len(lowers), err)
		}
		return nil
	}
	return mountShortLowers(lowers, upper, work, target)
}

func mountShortLowers(lowers []string, upper, work, target string) error {
	return withShortLowers(lowers, target, func(names []string) error {
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(names, ":"), upper, work)
		if len(opts)+len(",volatile") >= os.Getpagesize() {
			return fmt.Errorf("%d layers do not fit in the kernel's mount options (%d bytes, limit %d)", len(lowers), len(opts), os.Getpagesize()-1)
		}
		return mountOverlay(target, opts)
	})
}

// namedByFD: a lower directory is an idmapped clone named by its file
// descriptor (IDMapLayers). Such names go through withShortLowers' links,
// so that the overlay's options, which the container sees in its mount
// table, do not name /proc (containerd's idmapped layers show as temporary
// directories; a "mount | grep /proc" in the container finds /proc alone,
// as the node e2e tests count).
func namedByFD(lowers []string) bool {
	for _, l := range lowers {
		if strings.HasPrefix(l, "/proc/self/fd/") {
			return true
		}
	}
	return false
}

// withShortLowers runs mount with the lower directories named by short
// symlinks, on a thread whose working directory holds them (MountRootfs).
func withShortLowers(lowers []string, target string, mount func(names []string) error) error {
	links, err := os.MkdirTemp("", "podrun-lowers-")
	if err != nil {
		return fmt.Errorf("mounting overlay at %s: %w", target, err)
	}
	// The kernel resolves lowerdir paths at mount time; the links are not needed after.
	defer os.RemoveAll(links)
	names := make([]string, len(lowers))
	for i, l := range lowers {
		names[i] = strconv.FormatInt(int64(i), 36)
		if err := os.Symlink(l, filepath.Join(links, names[i])); err != nil {
			return fmt.Errorf("mounting overlay at %s: %w", target, err)
		}
	}
	errc := make(chan error, 1)
	go func() {
		// This thread's working directory changes; locked and never unlocked, the thread
		// ends with this goroutine instead of running others.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("unshare(CLONE_FS): %w", err)
			}
			if err := unix.Chdir(links); err != nil {
				return err
			}
			return mount(names)
		}()
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("mounting overlay at %s (%d layers): %w", target, len(lowers), err)
	}
	return nil
}

// MountReadOnly mounts at target the image whose layer directories are
// layerDirs (bottom first, as LayerDirs returns them), read-only, for an
// image volume: the layers merged by an overlay of lower directories only,
// with no upper directory, as containerd's overlay snapshotter mounts a
// View; a single layer, which overlayfs will not mount without an upper
// directory, is a read-only bind of it (the snapshotter's "ro,rbind"),
// attached from a detached clone (open_tree, mount_setattr, move_mount).
// With userns (a pod's user namespace) the layers are idmapped as
// IDMapLayers does for a rootfs. UnmountRootfs releases the mount.
func MountReadOnly(layerDirs []string, userns *os.File, target string) error {
	if len(layerDirs) == 0 {
		return errors.New("mounting an image read-only: it has no layer")
	}
	for _, p := range append(slices.Clone(layerDirs), target) {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("mounting an image read-only at %s: path %q is not absolute", target, p)
		}
		if strings.ContainsAny(p, ":,") {
			return fmt.Errorf("mounting an image read-only at %s: path %q contains ':' or ','", target, p)
		}
	}
	if len(layerDirs) == 1 {
		return bindReadOnly(layerDirs[0], userns, target)
	}
	lowers := slices.Clone(layerDirs)
	if userns != nil {
		mapped, closeLayers, err := IDMapLayers(layerDirs, userns)
		if err != nil {
			return err
		}
		defer closeLayers()
		lowers = mapped
	}
	slices.Reverse(lowers) // overlayfs wants the top layer first
	mount := func(names []string) error {
		opts := "lowerdir=" + strings.Join(names, ":")
		if len(opts) >= os.Getpagesize() {
			return fmt.Errorf("%d layers do not fit in the kernel's mount options (%d bytes, limit %d)", len(lowers), len(opts), os.Getpagesize()-1)
		}
		return unix.Mount("overlay", target, "overlay", unix.MS_RDONLY, opts)
	}
	if len("lowerdir=")+len(strings.Join(lowers, ":")) < os.Getpagesize() && !namedByFD(lowers) {
		if err := mount(lowers); err != nil {
			return fmt.Errorf("mounting overlay at %s (%d layers): %w", target, len(lowers), err)
		}
		return nil
	}
	return withShortLowers(lowers, target, mount)
}

// bindReadOnly attaches a read-only clone of dir at target, idmapped with
// userns when it is given.
func bindReadOnly(dir string, userns *os.File, target string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cloning %s for a read-only bind mount: %w", dir, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if userns != nil {
		attr.Attr_set |= unix.MOUNT_ATTR_IDMAP
		attr.Userns_fd = uint64(userns.Fd())
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("making the clone of %s read-only: %w", dir, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("bind-mounting %s read-only at %s: %w", dir, target, err)
	}
	return nil
}

// noVolatile is set once the kernel has refused overlayfs's volatile option.
var noVolatile atomic.Bool

// mountOverlay mounts the overlay with volatile, or without it on a kernel that does
// not know it (EINVAL).
func mountOverlay(target, opts string) error {
	if !noVolatile.Load() {
		err := unix.Mount("overlay", target, "overlay", 0, opts+",volatile")
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
		if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
			return err
		}
		noVolatile.Store(true)
		return nil
	}
	return unix.Mount("overlay", target, "overlay", 0, opts)
}

// UnmountRootfs unmounts target. It is idempotent: a target that is not mounted (or does
// not exist) is not an error. A busy mount is detached lazily.
func UnmountRootfs(target string) error {
	// Loop: the same target may have been mounted more than once.
	for range 32 {
		err := unix.Unmount(target, 0)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not a mount point (any more)
		case errors.Is(err, unix.EBUSY):
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("unmounting rootfs %s (lazily): %w", target, err)
			}
		default:
			return fmt.Errorf("unmounting rootfs %s: %w", target, err)
		}
	}
	return fmt.Errorf("unmounting rootfs %s: still mounted after 32 unmounts", target)
}

// IDMapLayers gives each layer directory an idmapped clone (open_tree
// OPEN_TREE_CLONE, then mount_setattr MOUNT_ATTR_IDMAP with userns), so
// that an overlay of them shows the image's files owned by the user
// namespace's IDs, as containerd's overlay snapshotter does for pods with
// user namespaces (kernel 5.19+). The clones are detached mounts named by
// /proc/self/fd paths: overlayfs takes its own private clone of each layer
// at mount time, so close closes them and leaves no mount behind.
func IDMapLayers(layerDirs []string, userns *os.File) (paths []string, close func(), err error) {
	var fds []int
	close = func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	for _, dir := range layerDirs {
		fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			close()
			return nil, nil, fmt.Errorf("cloning layer %s for an idmapped mount: %w", dir, err)
		}
		fds = append(fds, fd)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			close()
			return nil, nil, fmt.Errorf("idmapping layer %s (needs kernel 5.19 or later and a filesystem that supports idmapped mounts): %w", dir, err)
		}
		paths = append(paths, "/proc/self/fd/"+strconv.Itoa(fd))
	}
	return paths, close, nil
}
