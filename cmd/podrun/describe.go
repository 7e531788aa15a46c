package main

import (
	"errors"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a pod in detail, with its containers, resources and events",
		ArgsUsage: "[pod] NAME... | -l SELECTOR | -f FILE",
		Description: `Examples:
  # A pod's containers, states, resources, volumes and events
  podrun describe web

  # Every pod labelled app=web
  podrun describe pods -l app=web`,
		Flags: append(filenameFlags("the pods of this manifest"), selectorFlags()...),
		Action: func(c *cli.Context) error {
			if args := c.Args().Slice(); len(args) > 0 {
				if k, ok := store.KindFor(args[0]); ok && k == store.ServiceKind {
					return describeServices(c, args[1:])
				}
			}
			if err := checkResourceType(c.Args().Slice(), podExists(c)); err != nil {
				return err
			}
			names := podArgs(c.Args().Slice())
			for _, f := range c.StringSlice("filename") {
				m, err := podspec.LoadFile(f)
				if err != nil {
					return cli.Exit(err.Error(), exitUsage)
				}
				for _, p := range m.Pods {
					names = append(names, p.Name)
				}
			}
			sel, err := parseSelectors(c)
			if err != nil {
				return err
			}
			if len(names) == 0 && sel.empty() && c.NArg() == 0 {
				return usageError("describe needs a pod name, -l SELECTOR or -f FILE")
			}
			recs, notFound, err := selectPods(c, names, false)
			if err != nil {
				return err
			}
			if len(notFound) > 0 {
				return failed("%v", errors.Join(notFound...))
			}
			l := layout(c)
			for i, rec := range recs {
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
