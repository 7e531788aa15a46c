package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// superviseCommand is the detached pod supervisor that `apply` starts. It is
// given the pod's UID alone: everything else is in the pod's record.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Hidden:    true,
		ArgsUsage: "UID",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("supervise UID")
			}
			l := layout(c)
			rec, err := store.FindPodByUID(l, c.Args().First())
			if err != nil {
				return err
			}
			runtime.ServiceEnv = serviceEnv
			// apply passes the write end of its readiness pipe as fd 3.
			ready := os.NewFile(3, "ready")
			return supervisor.Supervise(l, rec, supervisor.SuperviseOptions{Ready: ready})
		},
	}
}
