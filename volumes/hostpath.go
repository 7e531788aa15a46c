package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The file types the kubelet's hostutil.GetFileType reports.
const (
	fileTypeDirectory = "Directory"
	fileTypeFile      = "File"
	fileTypeSocket    = "Socket"
	fileTypeCharDev   = "CharDevice"
	fileTypeBlockDev  = "BlockDevice"
)

func setupHostPath(vol *Volume, src *corev1.HostPathVolumeSource) error {
	if err := validatePathNoBacksteps(src.Path); err != nil {
		return fmt.Errorf("invalid HostPath `%s`: %w", src.Path, err)
	}
	if !filepath.IsAbs(src.Path) {
		// The kubelet hands a relative path to the runtime, which resolves it
		// against its own working directory; podrun refuses instead.
		return fmt.Errorf("invalid HostPath `%s`: must be an absolute path", src.Path)
	}
	vol.Path = filepath.Clean(src.Path)
	if src.Type != nil {
		vol.hostPathType = *src.Type
	}
	if vol.hostPathType == corev1.HostPathUnset {
		return nil
	}
	return checkHostPathType(vol.Path, vol.hostPathType)
}

// checkHostPathType is the kubelet's hostPath checkType: the *OrCreate types
// create a missing path (without parents for files), the others must exist with
// the right type (following symlinks).
func checkHostPathType(path string, t corev1.HostPathType) error {
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if !pathExists(path) {
			if err := os.MkdirAll(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			return nil
		}
		return typeMatchedOrError(path, fileTypeDirectory, "directory")
	case corev1.HostPathDirectory:
		return typeMatchedOrError(path, fileTypeDirectory, "directory")
	case corev1.HostPathFileOrCreate:
		if !pathExists(path) {
			f, err := os.OpenFile(path, os.O_CREATE, 0o644)
			if f != nil {
				_ = f.Close()
			}
			if err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			return nil
		}
		return typeMatchedOrError(path, fileTypeFile, "file")
	case corev1.HostPathFile:
		return typeMatchedOrError(path, fileTypeFile, "file")
	case corev1.HostPathSocket:
		return typeMatchedOrError(path, fileTypeSocket, "socket file")
	case corev1.HostPathCharDev:
		return typeMatchedOrError(path, fileTypeCharDev, "character device")
	case corev1.HostPathBlockDev:
		return typeMatchedOrError(path, fileTypeBlockDev, "block device")
	default:
		return fmt.Errorf("%s is an invalid volume type", t)
	}
}

// typeMatchedOrError is the kubelet's checkTypeInternal for one type: a
// path that is missing or of another type fails with the same message.
func typeMatchedOrError(path, expected, description string) error {
	if got, err := fileType(path); err != nil || got != expected {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", path, description)
	}
	return nil
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fileType(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	m := fi.Mode()
	switch {
	case m&os.ModeDir != 0:
		return fileTypeDirectory, nil
	case m&os.ModeSocket != 0:
		return fileTypeSocket, nil
	case m&os.ModeDevice != 0:
		if m&os.ModeCharDevice != 0 {
			return fileTypeCharDev, nil
		}
		return fileTypeBlockDev, nil
	}
	return fileTypeFile, nil
}

// validatePathNoBacksteps is the kubelet's volume validation of the same name.
func validatePathNoBacksteps(p string) error {
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return errors.New("must not contain '..'")
		}
	}
	return nil
}
