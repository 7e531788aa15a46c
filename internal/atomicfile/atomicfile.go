// Package atomicfile replaces files atomically without fsync: a leaf that the
// store and network share for what need not survive a host crash.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Replace replaces path with data (a temporary file in the same directory,
// then rename), mode perm, without fsync: a reader sees the old file or the
// new one, never part of one, and a process crash loses nothing of the page
// cache; a host crash may leave the file empty or short.
func Replace(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
