package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shim is the binary libcontainer re-executes as every container's init:
// it must stay small. These must never be linked into it.
func TestShimLinksNoHeavyDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	tags := "containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper seccomp podrun_lean"
	out, err := exec.Command(goBin, "list", "-deps", "-tags", tags, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"go.podman.io/", "github.com/containers/", "github.com/urfave/cli", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/podrun/podrun/cmd/podrun"} {
			if strings.HasPrefix(pkg, banned) && pkg != "github.com/podrun/podrun/cmd/podrun-shim" {
				t.Errorf("podrun-shim links %s", pkg)
			}
		}
	}
}
