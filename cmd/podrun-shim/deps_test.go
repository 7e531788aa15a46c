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
	banned := []string{
		"go.podman.io/", "github.com/containers/", "github.com/urfave/cli", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/podrun/podrun/cmd/podrun",
		// The manifest loader and the API server's validation (podspec's
		// files built without podrun_lean): apply validated the pod
		// before it wrote the record the shim reads.
		"github.com/google/go-cmp/", "github.com/robfig/cron", "sigs.k8s.io/yaml", "go.yaml.in/yaml/v3",
		"k8s.io/apimachinery/pkg/api/validation", "k8s.io/apimachinery/pkg/api/meta",
		"k8s.io/apimachinery/pkg/runtime/serializer/json", "k8s.io/apimachinery/pkg/util/yaml",
		// The workload kinds' types (store/workloads.go) and what they pull.
		"k8s.io/api/apps/", "k8s.io/api/batch/", "k8s.io/api/scheduling/", "k8s.io/apimachinery/pkg/api/equality",
		"k8s.io/apimachinery/pkg/apis/meta/v1/validation", "k8s.io/apimachinery/pkg/api/validate$",
		// The image store's read side parses digests itself (image/digest.go).
		"github.com/opencontainers/go-digest", "github.com/opencontainers/image-spec",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range banned {
			// A trailing $ bans that package alone, else the prefix.
			exact, ok := strings.CutSuffix(banned, "$")
			if (ok && pkg == exact || !ok && strings.HasPrefix(pkg, banned)) && pkg != "github.com/podrun/podrun/cmd/podrun-shim" {
				t.Errorf("podrun-shim links %s", pkg)
			}
		}
	}
}
