package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The kubelet's atomic writer (pkg/volume/util/atomic_writer.go) reserves names
// starting with "..":
//
//	<dir>/..2026_01_02_15_04_05.123456789/   the real files (mode 0755 dir)
//	<dir>/..data -> ..2026_01_02_15_04_05.123456789
//	<dir>/<first path element> -> ..data/<first path element>
//
// An update writes a new timestamped directory and renames a new ..data symlink
// over the old one, so readers see either the old or the new set of files.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"

	maxFileNameLength = 255
	maxPathLength     = 4096
)

type fileProjection struct {
	data []byte
	mode int32
}

type atomicWriter struct {
	targetDir string
}

// write projects payload into the target directory. setPerms, when not nil,
// runs after the new files are written and before they are published.
func (w *atomicWriter) write(payload map[string]fileProjection, setPerms func() error) error {
	clean, err := validatePayload(payload)
	if err != nil {
		return err
	}

	dataDirPath := filepath.Join(w.targetDir, dataDirName)
	oldTsDir, err := os.Readlink(dataDirPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", dataDirPath, err)
		}
		oldTsDir = ""
	}
	oldTsPath := filepath.Join(w.targetDir, oldTsDir)

	var toRemove []string
	shouldWrite := true
	if oldTsDir != "" {
		if toRemove, err = pathsToRemove(clean, oldTsPath); err != nil {
			return err
		}
		changed, err := payloadChanged(clean, oldTsPath)
		if err != nil {
			return err
		}
		if !changed && len(toRemove) == 0 {
			// Up to date; still make sure the user-visible links exist
			// (kubernetes#121472) and keep the data directory.
			shouldWrite = false
			oldTsDir = ""
		}
	}

	if shouldWrite {
		tsDir, err := os.MkdirTemp(w.targetDir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
		if err != nil {
			return fmt.Errorf("creating data directory in %s: %w", w.targetDir, err)
		}
		// 0755 lets group and other traverse the tree whatever the umask.
		if err := os.Chmod(tsDir, 0o755); err != nil {
			return err
		}
		if err := writePayloadToDir(clean, tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return err
		}
		if setPerms != nil {
			if err := setPerms(); err != nil {
				_ = os.RemoveAll(tsDir)
				return err
			}
		}
		newDataDirPath := filepath.Join(w.targetDir, newDataDirName)
		// A crash between symlink and rename leaves ..data_tmp behind.
		if err := os.Remove(newDataDirPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Symlink(filepath.Base(tsDir), newDataDirPath); err != nil {
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("creating symbolic link for atomic update: %w", err)
		}
		if err := os.Rename(newDataDirPath, dataDirPath); err != nil {
			_ = os.Remove(newDataDirPath)
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("renaming symbolic link for data directory: %w", err)
		}
	}

	if err := w.createUserVisibleFiles(clean); err != nil {
		return err
	}
	if err := w.removeUserVisiblePaths(toRemove); err != nil {
		return err
	}
	if oldTsDir != "" {
		if err := os.RemoveAll(oldTsPath); err != nil {
			return fmt.Errorf("removing old data directory %s: %w", oldTsPath, err)
		}
	}
	return nil
}

func validatePayload(payload map[string]fileProjection) (map[string]fileProjection, error) {
	clean := make(map[string]fileProjection, len(payload))
	for p, content := range payload {
		if err := validateProjectionPath(p); err != nil {
			return nil, err
		}
		clean[filepath.Clean(p)] = content
	}
	return clean, nil
}

// validateProjectionPath is the atomic writer's validatePath: relative, no ".."
// element, not starting with "..", bounded lengths.
func validateProjectionPath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(p, string(os.PathSeparator))
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

func payloadChanged(payload map[string]fileProjection, oldTsDir string) (bool, error) {
	for p, fp := range payload {
		old, err := os.ReadFile(filepath.Join(oldTsDir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !bytes.Equal(old, fp.data) {
			return true, nil
		}
	}
	return false, nil
}

// pathsToRemove lists what the old data directory holds that the new payload
// does not (directories of new files are kept).
func pathsToRemove(payload map[string]fileProjection, oldTsDir string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for sub := p; sub != "." && sub != string(os.PathSeparator); sub = filepath.Dir(sub) {
			keep[sub] = true
		}
	}
	var out []string
	err := filepath.WalkDir(oldTsDir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oldTsDir, path)
		if rel != "." && !keep[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

func writePayloadToDir(payload map[string]fileProjection, dir string) error {
	for _, p := range sortedKeys(payload) {
		fp := payload[p]
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), os.ModePerm); err != nil {
			return fmt.Errorf("creating directory for %s: %w", p, err)
		}
		mode := os.FileMode(fp.mode) & os.ModePerm
		if err := os.WriteFile(full, fp.data, mode); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		// WriteFile's mode is filtered by the umask; the item's mode is not.
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("setting mode of %s: %w", p, err)
		}
	}
	return nil
}

// createUserVisibleFiles links the first element of every path into ..data.
func (w *atomicWriter) createUserVisibleFiles(payload map[string]fileProjection) error {
	for p := range payload {
		link := strings.SplitN(p, string(os.PathSeparator), 2)[0]
		visible := filepath.Join(w.targetDir, link)
		if _, err := os.Readlink(visible); err != nil && errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDirName, link), visible); err != nil {
				return fmt.Errorf("creating visible symlink %s: %w", link, err)
			}
		}
	}
	return nil
}

// removeUserVisiblePaths removes stale top-level links; deeper paths went with
// the old data directory.
func (w *atomicWriter) removeUserVisiblePaths(paths []string) error {
	var lastErr error
	for _, p := range paths {
		if strings.Contains(p, string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(filepath.Join(w.targetDir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			lastErr = fmt.Errorf("pruning old visible path %s: %w", p, err)
		}
	}
	return lastErr
}
