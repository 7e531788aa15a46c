// Package sibling finds podrun's binaries, which are installed side by side:
// the CLI runs podrun-shim and podrun-image, and podrun-shim runs podrun-image,
// each from the directory of the running binary (never from $PATH, so that
// the binaries of one release run together).
package sibling

import (
	"fmt"
	"os"
	"path/filepath"
)

// Installed names the three binaries, for the error that says one is missing.
const Installed = "podrun, podrun-shim and podrun-image"

// Dir is the directory of the running binary.
func Dir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Dir(exe), nil
}

// Path is the binary name next to the running one; the error says where it
// must be installed.
func Path(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", name, err)
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s must be installed next to %s (make build and make release build %s): %w", name, exe, Installed, err)
	}
	return p, nil
}
