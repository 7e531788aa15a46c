package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/supervisor"
)

func restartCommand() *cli.Command {
	return &cli.Command{
		Name:        "restart",
		Description: "Examples:\n  # Run the pod again from its first init container\n  podrun restart web",
		Usage:       "restart pods: stop their containers, then run them again from the first init container",
		ArgsUsage:   "NAME...",
		Action: func(c *cli.Context) error {
			names := podArgs(c.Args().Slice())
			if len(names) == 0 {
				return usageError("restart needs a pod name")
			}
			l := layout(c)
			for _, n := range names {
				rec, err := findPod(l, namespace(c), n)
				if err != nil {
					return failed("%v", err)
				}
				if err := supervisor.Restart(rec); err != nil {
					return err // report maps its class to the exit code
				}
				fmt.Printf("pod/%s restarting\n", n)
			}
			return nil
		},
	}
}
