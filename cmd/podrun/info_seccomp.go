//go:build seccomp && cgo

package main

import (
	"fmt"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// libseccompVersion is the version of the C libseccomp podrun runs with
// (linked in statically by `make release`).
func libseccompVersion() string {
	major, minor, micro := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", major, minor, micro)
}
