package main

import (
	"fmt"
	goruntime "runtime"

	"github.com/urfave/cli/v2"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:        "version",
		Description: "Examples:\n  # The version of this binary\n  podrun version",
		Usage:       "print podrun's version, podrun-shim's and podrun-image's paths and versions, and what podrun is built with",
		Action: func(c *cli.Context) error {
			fmt.Printf("podrun %s\n", version)
			fmt.Printf("%s: %s\n", shimName, helperInfo(shimName))
			fmt.Printf("%s: %s\n", imageName, helperInfo(imageName))
			fmt.Printf("go: %s %s/%s\n", goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
			mods := []string{"github.com/opencontainers/runc", "github.com/opencontainers/cgroups",
				"go.podman.io/image/v5", "go.podman.io/storage", "k8s.io/api"}
			versions := moduleVersions(mods)
			for _, m := range mods {
				if v, ok := versions[m]; ok {
					fmt.Printf("%s: %s\n", m, v)
				}
			}
			return nil
		},
	}
}
