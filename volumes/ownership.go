package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's SetVolumeOwnership masks (pkg/volume/volume_linux.go).
const (
	rwMask   os.FileMode = 0o660
	roMask   os.FileMode = 0o440
	execMask os.FileMode = 0o110
)

// setOwnership applies the pod's fsGroup to a managed volume as the kubelet's
// SetVolumeOwnership does: every entry gets group fsGroup and group read (and
// write unless the volume is read-only) permission, directories also setgid and
// group execute. Symlinks are chowned but never chmod'ed (that would change
// their target). With fsGroupChangePolicy OnRootMismatch the walk is skipped
// when the root already looks right.
func (b *builder) setOwnership(dir string, readOnly bool) error {
	sc := b.pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup + b.opts.UserNSBase) // fsGroup as the host sees it (getHostIDsForPod)
	if sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch &&
		!requiresPermissionChange(dir, gid, readOnly) {
		return nil
	}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("applying fsGroup %d to %s: %w", gid, path, err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		mask := rwMask
		if readOnly {
			mask = roMask
		}
		if info.IsDir() {
			mask |= os.ModeSetgid | execMask
		}
		if err := os.Chmod(path, info.Mode()|mask); err != nil {
			return fmt.Errorf("applying fsGroup permissions to %s: %w", path, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// setUserNSOwner gives every entry of a pod's atomic-writer volume to the
// host ID of the pod's root (UserNSBase) when the pod has its own user
// namespace: the kubelet's FsUser and FsGroup for such a pod
// (getHostIDsForPod); setOwnership then applies fsGroup's host ID.
func (b *builder) setUserNSOwner(dir string) error {
	if b.opts.UserNSBase == 0 {
		return nil
	}
	id := int(b.opts.UserNSBase)
	err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, id, id); err != nil {
			return fmt.Errorf("giving %s to the pod's user namespace: %w", path, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func requiresPermissionChange(dir string, gid int, readOnly bool) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Gid) != gid || !fi.IsDir() {
		return true
	}
	want := rwMask
	if readOnly {
		want = roMask
	}
	want |= execMask
	return fi.Mode().Perm()&want != want || fi.Mode()&os.ModeSetgid == 0
}

// makeNestedMountpoints is the kubelet's MakeNestedMountpoints: when a container
// mounts another volume beneath this (read-only) one, the mount point must exist
// in this volume beforehand. Only the first level of nesting is created.
func makeNestedMountpoints(name, baseDir string, pod *corev1.Pod) error {
	var dirs []string
	check := func(mounts []corev1.VolumeMount) error {
		var all, mine []string
		for _, m := range mounts {
			p := filepath.Clean(m.MountPath)
			all = append(all, p)
			if m.Name == name {
				mine = append(mine, p)
			}
		}
		sort.Strings(all)
		for _, mp := range mine {
			if strings.HasPrefix(mp, "../") {
				return fmt.Errorf("invalid container mount point %v", mp)
			}
			prefix := mp + "/"
			prev := ""
			for _, other := range all {
				if !strings.HasPrefix(other, prefix) {
					continue
				}
				if prev != "" && strings.HasPrefix(other, prev) {
					continue
				}
				prev = other + "/"
				dirs = append(dirs, other[len(prefix):])
			}
		}
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if err := check(pod.Spec.InitContainers[i].VolumeMounts); err != nil {
			return err
		}
	}
	for i := range pod.Spec.Containers {
		if err := check(pod.Spec.Containers[i].VolumeMounts); err != nil {
			return err
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if err := check(pod.Spec.EphemeralContainers[i].VolumeMounts); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(baseDir, d), 0o755); err != nil {
			return fmt.Errorf("unable to create nested volume mountpoints: %w", err)
		}
	}
	return nil
}
