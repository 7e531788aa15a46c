package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:        "version",
		Description: "Examples:\n  # The version of this binary\n  podrun version",
		Usage:       "print podrun's version, podrun-shim's path and version, and what podrun is built with",
		Action: func(c *cli.Context) error {
			fmt.Printf("podrun %s\n", version)
			fmt.Printf("%s: %s\n", shimName, shimInfo())
			fmt.Printf("go: %s %s/%s\n", goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					switch d.Path {
					case "github.com/opencontainers/runc", "github.com/opencontainers/cgroups",
						"go.podman.io/image/v5", "go.podman.io/storage", "k8s.io/api":
						fmt.Printf("%s: %s\n", d.Path, d.Version)
					}
				}
			}
			return nil
		},
	}
}
