package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/podrun/podrun/podspec"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
func (s *Set) Mounts(c *corev1.Container, env map[string]string) ([]Mount, error) {
	mounts := make([]Mount, 0, len(c.VolumeMounts))
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		vol, ok := s.volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
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
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, env); err != nil {
				return nil, fmt.Errorf("expanding subPathExpr %q of volumeMount %q of container %q: %w", vm.SubPathExpr, vm.Name, c.Name, err)
			}
		}
		if subPath != "" {
			if filepath.IsAbs(subPath) {
				return nil, fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
			}
			if err := validatePathNoBacksteps(subPath); err != nil {
				return nil, fmt.Errorf("unable to provision SubPath `%s`: %w", subPath, err)
			}
			bound, err := s.bindSubPath(vol, subPath, c.Name, i)
			if err != nil {
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
			source = bound
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
	return append(mounts, s.serviceAccountMounts(c)...), nil
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

// resolveRecursiveReadOnly is the kubelet's: Enabled and IfPossible need
// readOnly and no propagation. runc does rro with mount_setattr (Linux 5.12+).
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
	supported := kernelAtLeast(5, 12)
	switch *vm.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requires recursiveReadOnly to be Disabled when the kernel does not support recursive read-only mounts (Linux 5.12+)", vm.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown RecursiveReadOnly mode %q", *vm.RecursiveReadOnly)
	}
}

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

func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	rel := string(bytes.TrimRight(u.Release[:], "\x00"))
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, _ := strconv.Atoi(parts[0])
	mnr, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return maj > major || (maj == major && mnr >= minor)
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

// bindSubPath makes subPath available as a stable mount source, as the
// kubelet's subpath.PrepareSafeSubpath: refuse a path whose symlinks lead out of
// the volume, create it (with the volume root's mode) if missing, open it without
// leaving the volume, and bind-mount that open file to
// <podDir>/volume-subpaths/<volume>/<container>/<index>.
func (s *Set) bindSubPath(vol *Volume, subPath, container string, index int) (string, error) {
	realRoot, err := filepath.EvalSymlinks(vol.Path)
	if err != nil {
		return "", fmt.Errorf("resolving volume path %s: %w", vol.Path, err)
	}
	if err := checkWithinVolume(realRoot, subPath); err != nil {
		return "", err
	}
	root, err := os.OpenFile(realRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening volume %s: %w", realRoot, err)
	}
	defer root.Close()

	handle, err := pathrs.OpenatInRoot(root, subPath)
	if errors.Is(err, fs.ErrNotExist) {
		var fi os.FileInfo
		if fi, err = root.Stat(); err != nil {
			return "", err
		}
		// Created now so that it gets the volume's mode rather than whatever
		// the runtime would pick (kubelet: "Make extra care not to escape").
		handle, err = pathrs.MkdirAllHandle(root, subPath, fi.Mode().Perm())
	}
	if err != nil {
		return "", fmt.Errorf("opening subPath %s in volume %s: %w", subPath, realRoot, err)
	}
	defer handle.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(handle.Fd()), &st); err != nil {
		return "", fmt.Errorf("stat subPath %s: %w", subPath, err)
	}

	target := filepath.Join(s.podDir, subPathsDirName, vol.Name, container, strconv.Itoa(index))
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
