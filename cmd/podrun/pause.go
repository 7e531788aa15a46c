package main

import (
	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
)

// pauseCommand is PID 1 of a pod's shared process namespace.
func pauseCommand() *cli.Command {
	return &cli.Command{
		Name:   "pause",
		Hidden: true,
		Action: func(c *cli.Context) error { return runtime.Pause() },
	}
}
