package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/cgroups"
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
			rec, err := runtime.FindPod(l, c.Args().Get(0), c.Args().Get(1))
			if err != nil {
				return err
			}
			if string(rec.Pod.UID) != c.String("uid") {
				return failed("pod %s has uid %s, not %s", rec.Key(), rec.Pod.UID, c.String("uid"))
			}
			// The pod keeps the cgroup driver it was first started with, whatever
			// the flags of a later apply or restart say.
			driverFile := filepath.Join(rec.Paths.Dir, "cgroup-driver")
			if data, err := os.ReadFile(driverFile); err == nil && strings.TrimSpace(string(data)) != "" {
				l.CgroupDriver = strings.TrimSpace(string(data))
			} else if err := os.WriteFile(driverFile, []byte(l.CgroupDriver+"\n"), 0o644); err != nil {
				return err
			}
			if l.CgroupDriver == cgroups.DriverSystemd {
				if _, err := cgroups.LeaveCallerUnit(string(rec.Pod.UID)); err != nil {
					slog.Warn("the supervisor stays in the caller's cgroup", "err", err)
				}
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
