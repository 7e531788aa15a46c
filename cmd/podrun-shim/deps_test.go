package main

import (
	"testing"

	"github.com/podrun/podrun/internal/depcheck"
)

// The shim is the binary libcontainer re-executes as every container's init:
// it must stay small. These must never be linked into it.
func TestShimLinksNoHeavyDependencies(t *testing.T) {
	depcheck.Banned(t, depcheck.Tags+" podrun_lean", "github.com/podrun/podrun/cmd/podrun-shim", []string{
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
	})
}
