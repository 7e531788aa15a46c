package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a pod in detail, with its containers, resources and events",
		ArgsUsage: "[pod] NAME...",
		Action: func(c *cli.Context) error {
			if args := c.Args().Slice(); len(args) > 0 {
				if k, ok := store.KindFor(args[0]); ok && k == store.ServiceKind {
					return describeServices(c, args[1:])
				}
			}
			names := podArgs(c.Args().Slice())
			if len(names) == 0 {
				return usageError("describe needs a pod name")
			}
			l := layout(c)
			for i, n := range names {
				rec, err := store.FindPod(l, namespace(c), n)
				if err != nil {
					return failed("%v", err)
				}
				info, err := store.Describe(l, rec)
				if err != nil {
					return err
				}
				extra := printers.Extra{Requests: info.Requests, Limits: info.Limits, CgroupPath: info.CgroupPath}
				for _, e := range info.Events {
					extra.Events = append(extra.Events, printers.Event{Time: e.Time.Time, Type: e.Type, Reason: e.Reason, Object: e.Object, Message: e.Message})
				}
				if i > 0 {
					os.Stdout.WriteString("\n\n")
				}
				printers.Describe(os.Stdout, rec.View(), extra, time.Now())
			}
			return nil
		},
	}
}
