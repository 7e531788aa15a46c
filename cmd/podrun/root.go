package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

// noRootNeeded are the commands that work as any user.
var noRootNeeded = map[string]bool{"version": true, "help": true, "completion": true, "h": true}

// needRoot gives a plain user one clear message instead of "permission
// denied" from deep inside (or "not found" for a pod that exists, since the
// records are root's).
func needRoot(c *cli.Context) error {
	if os.Geteuid() == 0 || c.Command == nil || noRootNeeded[c.Command.Name] {
		return nil
	}
	if c.Command.Name == "apply" && c.String("dry-run") == "client" {
		return nil // validation only
	}
	return failed("podrun needs root: %s creates or reads pods, whose namespaces, cgroups, mounts and records (under %s) only root may touch; run it with sudo", c.Command.Name, c.String("root"))
}
