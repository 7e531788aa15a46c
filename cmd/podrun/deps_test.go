package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Every podrun command pays for what the CLI links at start (page faults and
// package initialisers before main): the registry client, the archive readers
// and what they bring live in podrun-image, which `pull` and `load` run.
func TestCLILinksNoImageWriter(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	tags := "containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper seccomp"
	out, err := exec.Command(goBin, "list", "-deps", "-tags", tags, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{"go.podman.io/", "github.com/containers/", "google.golang.org/grpc", "github.com/docker/distribution", "github.com/sigstore/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(pkg, b) {
				t.Errorf("podrun links %s (it belongs in podrun-image)", pkg)
			}
		}
	}
}
