package main

import (
	"testing"

	"github.com/podrun/podrun/internal/depcheck"
)

// Every podrun command pays for what the CLI links at start (page faults and
// package initialisers before main): the registry client, the archive readers
// and what they bring live in podrun-image, which `pull` and `load` run, and
// so does the kustomize library, which -k runs (`podrun-image kustomize`).
func TestCLILinksNoImageWriter(t *testing.T) {
	depcheck.Banned(t, depcheck.Tags, "github.com/podrun/podrun/cmd/podrun", []string{
		"go.podman.io/", "github.com/containers/", "google.golang.org/grpc", "github.com/docker/distribution", "github.com/sigstore/",
		"sigs.k8s.io/kustomize/",
	})
}
