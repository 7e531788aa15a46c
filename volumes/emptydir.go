package volumes

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// emptyDirPerm is the mode the kubelet gives emptyDir directories
// (pkg/volume/emptydir: "const perm os.FileMode = 0777").
const emptyDirPerm os.FileMode = 0o777

func (b *builder) setupEmptyDir(vol *Volume, src *corev1.EmptyDirVolumeSource) ([]string, error) {
	var notes []string
	switch {
	case src.Medium == corev1.StorageMediumDefault:
		if err := makeEmptyDir(vol.Path); err != nil {
			return nil, err
		}
		// Its sizeLimit is the eviction manager's (the supervisor's
		// monitorLocalStorage): the pod is evicted once its use exceeds it.
	case src.Medium == corev1.StorageMediumMemory:
		vol.SizeBytes = b.memorySize(src.SizeLimit)
		if err := setupTmpfs(vol.Path, vol.SizeBytes); err != nil {
			return nil, err
		}
	case strings.HasPrefix(string(src.Medium), string(corev1.StorageMediumHugePages)):
		return nil, fmt.Errorf("emptyDir medium %q is not supported by podrun", src.Medium)
	default:
		return nil, fmt.Errorf("unknown storage medium %q", src.Medium)
	}
	return notes, b.setOwnership(vol.Path, false)
}

// memorySize is the kubelet's calculateEmptyDirMemorySize: node allocatable
// memory, lowered to the pod's memory limit, lowered to the volume's sizeLimit;
// each only when positive and smaller.
func (b *builder) memorySize(sizeLimit *resource.Quantity) int64 {
	size := b.opts.NodeAllocatableMemory
	if size <= 0 {
		size = hostMemTotal()
	}
	if l := b.opts.PodMemoryLimit; l > 0 && (size <= 0 || l <= size) {
		size = l
	}
	if sizeLimit != nil {
		if l := sizeLimit.Value(); l > 0 && (size <= 0 || l <= size) {
			size = l
		}
	}
	return size
}

func hostMemTotal() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// makeEmptyDir creates dir with mode 0777 whatever the umask, as the kubelet's
// emptyDir setupDir does.
func makeEmptyDir(dir string) error {
	if err := os.MkdirAll(dir, emptyDirPerm); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	if fi.Mode().Perm() != emptyDirPerm {
		return os.Chmod(dir, emptyDirPerm)
	}
	return nil
}

// setupTmpfs mounts a tmpfs of size bytes (0: the kernel's default, half of
// RAM) on dir, unless one is mounted there already. Like the kubelet it asks for
// noswap where the kernel has it (6.4+) and sets no mode, so the root is 1777.
func setupTmpfs(dir string, size int64) error {
	if err := makeEmptyDir(dir); err != nil {
		return err
	}
	isTmpfs, err := isTmpfsMount(dir)
	if err != nil {
		return err
	}
	if isTmpfs {
		return nil
	}
	var opts []string
	if size > 0 {
		opts = append(opts, fmt.Sprintf("size=%d", size))
	}
	err = unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(append(opts, "noswap"), ","))
	if errors.Is(err, unix.EINVAL) {
		// Kernels before 6.4, or a user namespace, do not know noswap.
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(opts, ","))
	}
	if err != nil {
		return fmt.Errorf("mounting tmpfs on %s: %w", dir, err)
	}
	return nil
}

// isTmpfsMount reports whether dir is the root of a tmpfs mount.
func isTmpfsMount(dir string) (bool, error) {
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return false, fmt.Errorf("checking whether %s is a mount point: %w", dir, err)
	}
	if !mounted {
		return false, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Type == unix.TMPFS_MAGIC, nil
}
