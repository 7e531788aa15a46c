package main

import (
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/cgroups"
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
			// Under systemd the supervisor leaves the caller's unit (a login
			// scope or a CI step) for a scope of its own, as conmon does.
			if rec.PodLayout(l).CgroupDriver == cgroups.DriverSystemd {
				if _, err := cgroups.LeaveCallerUnit(string(rec.Pod.UID)); err != nil {
					slog.Warn("the supervisor stays in the caller's cgroup", "err", err)
				}
			}
			runtime.ServiceEnv = serviceEnv
			// apply passes the write end of its readiness pipe as fd 3.
			ready := os.NewFile(3, "ready")
			return supervisor.Supervise(l, rec, supervisor.SuperviseOptions{Ready: ready})
		},
	}
}
