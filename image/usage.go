package image

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// diskUsage sums the allocated blocks under path, counting hard-linked files once.
func diskUsage(path string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, syscall.ENOENT) {
				return nil
			}
			return &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring disk usage of %s: %w", path, err)
	}
	return total, nil
}
