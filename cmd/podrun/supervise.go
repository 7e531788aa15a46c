package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
)

// superviseCommand is the detached pod supervisor that `apply` starts.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Hidden:    true,
		ArgsUsage: "--uid UID NAMESPACE NAME",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "uid", Required: true}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageError("supervise --uid UID NAMESPACE NAME")
			}
			l := layout(c)
			rec, err := findPod(l, c.Args().Get(0), c.Args().Get(1))
			if err != nil {
				return err
			}
			if string(rec.Pod.UID) != c.String("uid") {
				return failed("pod %s has uid %s, not %s", rec.Key(), rec.Pod.UID, c.String("uid"))
			}
			// apply passes the write end of its readiness pipe as fd 3.
			ready := os.NewFile(3, "ready")
			return runtime.Supervise(l, rec, runtime.SuperviseOptions{
				BackoffInitial: c.Duration("crashloop-backoff-initial"),
				BackoffMax:     c.Duration("crashloop-backoff-max"),
				PidsLimit:      c.Int64("pids-limit"),
				Ready:          ready,
			})
		},
	}
}
