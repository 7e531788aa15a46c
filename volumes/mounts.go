package volumes

import (
	"errors"
	"fmt"
	"github.com/podrun/podrun/podspec"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/cyphar/filepath-securejoin/pathrs-lite"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// Mount propagation values for the OCI runtime (rootfs "rprivate"-style names).
const (
	PropagationPrivate = "rprivate"
	PropagationSlave   = "rslave"
	PropagationShared  = "rshared"
)

// Mount is one bind mount for a container. The runtime turns it into a
// libcontainer bind mount with these flags.
type Mount struct {
	// Name is the volume's name, for messages.
	Name string
	// Source is the host path to bind: the volume, or the subPath's bind mount
	// under <podDir>/volume-subpaths.
	Source string
	// Destination is the absolute path in the container.
	Destination string
	ReadOnly    bool
	// RecursiveReadOnly asks for "rro" (submounts read-only too).
	RecursiveReadOnly bool
	// Propagation is "rprivate", "rslave" or "rshared".
	Propagation string
	// Options are extra bind flags from bindMountOptions: "noexec", "nodev",
	// "nosuid".
	Options []string
}

// Mounts returns the bind mounts for c's volumeMounts, as the kubelet's
// makeMounts: subPathExpr is expanded with env (the container's resolved
// environment; a missing or empty variable is an error), a subPath is created in
// the volume if missing (refusing paths that lead outside it) and bind-mounted
// under <podDir>/volume-subpaths so that the container gets exactly the checked
// directory even if someone swaps it for a symlink later. configMap, secret,
// downwardAPI and projected volumes are always read-only. Mounts may be called
// concurrently for different containers and again on every restart (subPath
// binds are reused); the binds are released by Teardown, as the kubelet releases
// them when it tears the pod's volumes down.
//
// images holds, by volume name, where the runtime mounted the image of each
// image volume c mounts; an image volume's subPath must be a directory of the
// image (ImageSubPathError).
func (s *Set) Mounts(c *corev1.Container, env map[string]string, images map[string]string) ([]Mount, error) {
	mounts := make([]Mount, 0, len(c.VolumeMounts))
	// The runtime checks an image volume's subPath when it creates the
	// container, after the kubelet's makeMounts has succeeded: its error
	// comes last.
	var imageErr error
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		vol, ok := s.volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		if vol.Kind == KindImage {
			p, ok := images[vm.Name]
			if !ok {
				return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
			}
			vol = &Volume{Name: vol.Name, Kind: KindImage, Path: p, ReadOnly: true}
		}
		if vol.Kind == KindHostPath && vol.hostPathType == corev1.HostPathUnset && !pathExists(vol.Path) {
			// The kubelet leaves this to the runtime; containerd and CRI-O
			// create a missing bind source as a directory.
			if err := os.MkdirAll(vol.Path, 0o755); err != nil {
				return nil, fmt.Errorf("creating hostPath %s for volumeMount %q of container %q: %w", vol.Path, vm.Name, c.Name, err)
			}
		}

		source := vol.Path
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			// The kubelet's message as it is (makeMounts returns
			// ExpandContainerVolumeMounts' error unwrapped).
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, err
			}
		}
		if subPath != "" {
			if filepath.IsAbs(subPath) {
				return nil, fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
			}
			if err := validatePathNoBacksteps(subPath); err != nil {
				return nil, fmt.Errorf("unable to provision SubPath `%s`: %w", subPath, err)
			}
			if vol.Kind == KindImage {
				// The kubelet hands an image volume's subPath to the runtime
				// (ImageSubPath), which neither creates it nor binds it apart.
				dir, err := imageSubPath(vol, subPath)
				if err != nil {
					if imageErr == nil {
						imageErr = err
					}
					continue
				}
				source = dir
			} else {
				bound, err := s.bindSubPath(vol, subPath, vm.Name, c.Name, i)
				if err != nil {
					return nil, err
				}
				source = bound
			}
		}

		propagation, err := translatePropagation(vm.MountPropagation)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
		}
		rro, err := resolveRecursiveReadOnly(vm)
		if err != nil {
			return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
		opts, err := bindMountOptions(vm)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
		}
		dest := vm.MountPath
		if !filepath.IsAbs(dest) {
			dest = "/" + dest
		}
		mounts = append(mounts, Mount{
			Name:              vm.Name,
			Source:            source,
			Destination:       filepath.Clean(dest),
			ReadOnly:          vm.ReadOnly || vol.ReadOnly,
			RecursiveReadOnly: rro,
			Propagation:       propagation,
			Options:           opts,
		})
	}
	if imageErr != nil {
		return nil, imageErr
	}
	return append(mounts, s.serviceAccountMounts(c)...), nil
}

// ImageSubPathError is an image volume's subPath that is not a directory of
// the image. The runtime refuses it as it creates the container
// (containerd's ensureImageSubPath: "only directory subpath is supported"),
// so it fails the creation (CreateContainerError), not the kubelet's
// container config. Its message names no host path.
type ImageSubPathError struct {
	Volume, SubPath string
	Err             error
}

func (e *ImageSubPathError) Error() string {
	return fmt.Sprintf("failed to ensure image subpath %q of volume %q: %v", e.SubPath, e.Volume, e.Err)
}

func (e *ImageSubPathError) Unwrap() error { return e.Err }

// imageSubPath is subPath in the image volume's mount, its symlinks resolved
// inside the image (the mount is read-only: what is checked stays so).
func imageSubPath(vol *Volume, subPath string) (string, error) {
	p, err := securejoin.SecureJoin(vol.Path, subPath)
	if err != nil {
		return "", &ImageSubPathError{Volume: vol.Name, SubPath: subPath, Err: err}
	}
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &ImageSubPathError{Volume: vol.Name, SubPath: subPath, Err: errors.New("no such file or directory")}
	case err != nil:
		return "", &ImageSubPathError{Volume: vol.Name, SubPath: subPath, Err: errors.Unwrap(err)}
	case !st.IsDir():
		return "", &ImageSubPathError{Volume: vol.Name, SubPath: subPath, Err: errors.New("only directory subpath is supported")}
	}
	return p, nil
}

func translatePropagation(m *corev1.MountPropagationMode) (string, error) {
	switch {
	case m == nil, *m == corev1.MountPropagationNone:
		return PropagationPrivate, nil
	case *m == corev1.MountPropagationHostToContainer:
		return PropagationSlave, nil
	case *m == corev1.MountPropagationBidirectional:
		return PropagationShared, nil
	default:
		return "", fmt.Errorf("invalid MountPropagation mode: %q", *m)
	}
}

// MountStatuses are c's volume mounts as its status reports them
// (convertToAPIContainerStatuses with RecursiveReadOnlyMounts): each
// mount's name, path and readOnly, and for a read-only one whether it is
// recursively read-only (Enabled) or not (Disabled).
func MountStatuses(c *corev1.Container) []corev1.VolumeMountStatus {
	var out []corev1.VolumeMountStatus
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		st := corev1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := corev1.RecursiveReadOnlyDisabled
			if rro, err := resolveRecursiveReadOnly(vm); err == nil && rro {
				mode = corev1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}

// resolveRecursiveReadOnly is the kubelet's (kubelet_pods.go
// resolveRecursiveReadOnly): Enabled and IfPossible need readOnly and no
// propagation; without kernel support IfPossible falls back to a plain
// read-only mount and Enabled fails. runc does "rro" with mount_setattr
// (MOUNT_ATTR_RDONLY, AT_RECURSIVE).
func resolveRecursiveReadOnly(vm *corev1.VolumeMount) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requires recursiveReadOnly to be Disabled when readOnly is false", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requires recursiveReadOnly to be Disabled when mountPropagation is not None", vm.Name)
	}
	unsupported := recursiveReadOnlySupport()
	switch *vm.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyIfPossible:
		return unsupported == nil, nil
	case corev1.RecursiveReadOnlyEnabled:
		if unsupported != nil {
			return false, fmt.Errorf("volume %q requires recursive read-only mounts, but the kernel does not support them: %w", vm.Name, unsupported)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown RecursiveReadOnly mode %q", *vm.RecursiveReadOnly)
	}
}

// recursiveReadOnlySupport says (nil) whether the kernel can make a mount
// tree read-only, probed once as containerd and moby do
// (kernelSupportsRecursivelyReadOnly): mount_setattr with
// MOUNT_ATTR_RDONLY and AT_RECURSIVE on a scratch tmpfs. Tests replace it.
var recursiveReadOnlySupport = sync.OnceValue(func() error {
	dir, err := os.MkdirTemp("", "podrun-rro-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		return fmt.Errorf("mounting a tmpfs to probe for recursive read-only mounts: %w", err)
	}
	defer func() { _ = unix.Unmount(dir, unix.MNT_DETACH) }()
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(-1, dir, unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
})

func bindMountOptions(vm *corev1.VolumeMount) ([]string, error) {
	var out []string
	for _, o := range vm.BindMountOptions {
		switch corev1.BindMountOption(o) {
		case corev1.BindMountOptionNoExec, corev1.BindMountOptionNoDev, corev1.BindMountOptionNoSUID:
			out = append(out, o)
		default:
			return nil, fmt.Errorf("unsupported bindMountOptions value %q: supported values: \"noexec\", \"nodev\", \"nosuid\"", o)
		}
	}
	return out, nil
}

// expandSubPathExpr is the kubelet's ExpandContainerVolumeMounts: $(VAR) is
// replaced by the variable's value, $$ is a literal $, and any referenced
// variable that is missing or empty makes the whole expansion fail.
func expandSubPathExpr(expr string, env map[string]string) (string, error) {
	missing := map[string]bool{}
	out := podspec.ExpandFunc(expr, func(name string) string {
		v, ok := env[name]
		if !ok || v == "" {
			missing[name] = true
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("missing value for %s", strings.Join(sortedKeys(missing), ", "))
	}
	return out, nil
}

// SubPathError is a subPath the kubelet could not prepare. Its message is
// the kubelet's, which names only the volumeMount and the container ("Don't
// pass detailed error back to the user because it could give information
// about host filesystem", kubelet_pods.go makeMounts); Err says why.
type SubPathError struct {
	Msg string
	Err error
}

func (e *SubPathError) Error() string { return e.Msg }
func (e *SubPathError) Unwrap() error { return e.Err }

// bindSubPath makes subPath available as a stable mount source, as the
// kubelet's makeMounts: a missing subPath is created first, with the volume
// root's mode (subpather.SafeMakeDir), then subpath.PrepareSafeSubpath
// refuses a path whose symlinks lead out of the volume, opens it without
// leaving the volume, and bind-mounts that open file to
// <podDir>/volume-subpaths/<volume>/<container>/<index>.
func (s *Set) bindSubPath(vol *Volume, subPath, mountName, container string, index int) (string, error) {
	realRoot, err := filepath.EvalSymlinks(vol.Path)
	if err != nil {
		return "", &SubPathError{Msg: fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", mountName, container),
			Err: fmt.Errorf("resolving volume path %s: %w", vol.Path, err)}
	}
	if !pathExists(filepath.Join(realRoot, subPath)) {
		if err := safeMakeDir(realRoot, subPath); err != nil {
			return "", &SubPathError{Msg: fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", mountName, container), Err: err}
		}
	}
	target, err := s.prepareSubPath(vol, realRoot, subPath, container, index)
	if err != nil {
		return "", &SubPathError{Msg: fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", mountName, container), Err: err}
	}
	return target, nil
}

// safeMakeDir is the kubelet's subpath doSafeMakeDir: subPath is created
// below the volume root without leaving it, and every directory it creates
// gets the root's whole mode, setgid and sticky bits included, whatever the
// umask ("the sub path directory must have at least g+rwx to allow the group
// to write to it. The group ID is set to FSGroup, as is the sticky bit").
func safeMakeDir(realRoot, subPath string) error {
	if err := checkWithinVolume(realRoot, subPath); err != nil {
		return err
	}
	root, err := os.OpenFile(realRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening volume %s: %w", realRoot, err)
	}
	defer root.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &st); err != nil {
		return err
	}
	// The parts of subPath that exist already keep their mode.
	parts := strings.Split(filepath.Clean(subPath), "/")
	first := 0
	for first < len(parts) {
		h, err := pathrs.OpenatInRoot(root, filepath.Join(parts[:first+1]...))
		if err != nil {
			break
		}
		h.Close()
		first++
	}
	handle, err := pathrs.MkdirAllHandle(root, subPath, os.FileMode(st.Mode&0o777))
	if err != nil {
		return fmt.Errorf("creating subPath %s in volume %s: %w", subPath, realRoot, err)
	}
	handle.Close()
	for i := first; i < len(parts); i++ {
		h, err := pathrs.OpenatInRoot(root, filepath.Join(parts[:i+1]...))
		if err != nil {
			return err
		}
		// An O_PATH handle cannot be fchmod'ed; its /proc/self/fd link can.
		err = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", h.Fd()), st.Mode&0o7777)
		h.Close()
		if err != nil {
			return fmt.Errorf("chmod of subPath %s: %w", filepath.Join(parts[:i+1]...), err)
		}
	}
	return nil
}

// prepareSubPath is the kubelet's PrepareSafeSubpath (see bindSubPath).
func (s *Set) prepareSubPath(vol *Volume, realRoot, subPath, container string, index int) (string, error) {
	if err := checkWithinVolume(realRoot, subPath); err != nil {
		return "", err
	}
	root, err := os.OpenFile(realRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening volume %s: %w", realRoot, err)
	}
	defer root.Close()

	handle, err := pathrs.OpenatInRoot(root, subPath)
	if err != nil {
		return "", fmt.Errorf("opening subPath %s in volume %s: %w", subPath, realRoot, err)
	}
	defer handle.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(handle.Fd()), &st); err != nil {
		return "", fmt.Errorf("stat subPath %s: %w", subPath, err)
	}

	target := filepath.Join(s.memDir, subPathsDirName, vol.Name, container, strconv.Itoa(index))
	mounted, err := mountinfo.Mounted(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checking %s for mount: %w", target, err)
	}
	if mounted {
		var tst unix.Stat_t
		if err := unix.Stat(target, &tst); err == nil && tst.Dev == st.Dev && tst.Ino == st.Ino {
			return target, nil // already bound to this very file (container restart)
		}
		if err := unmount(target); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(target, 0o750)
	} else {
		// A file is enough for any non-directory source: bind-mounting over it
		// changes the type seen at the target.
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("creating subPath mount point %s: %w", target, err)
	}
	src := fmt.Sprintf("/proc/self/fd/%d", handle.Fd())
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind-mounting subPath %s of volume %q to %s: %w", subPath, vol.Name, target, err)
	}
	return target, nil
}

// checkWithinVolume refuses a subPath whose existing part resolves (through
// symlinks) outside the volume; the kubelet refuses these rather than
// re-rooting them.
func checkWithinVolume(realRoot, subPath string) error {
	p := filepath.Join(realRoot, subPath)
	for p != realRoot {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return err
		}
		p = filepath.Dir(p)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("resolving symlinks in subPath %s: %w", subPath, err)
	}
	if !pathWithin(resolved, realRoot) {
		return fmt.Errorf("subpath %q not within volume path %q", filepath.Join(realRoot, subPath), realRoot)
	}
	return nil
}

func pathWithin(p, base string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
