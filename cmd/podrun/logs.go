package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/runtime/logs"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a container's logs",
		ArgsUsage: "[POD] [-c CONTAINER]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "the container (a pod name is not needed when one pod has it)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until the container stops"},
			&cli.BoolFlag{Name: "previous", Aliases: []string{"p"}, Usage: "the previous run of the container"},
			&cli.BoolFlag{Name: "timestamps", Usage: "prefix each line with its RFC3339 timestamp"},
			&cli.Int64Flag{Name: "tail", Value: -1, Usage: "only the last N lines"},
			&cli.DurationFlag{Name: "since", Usage: "only lines newer than this (e.g. 5s, 2m)"},
			&cli.Int64Flag{Name: "limit-bytes", Usage: "stop after this many bytes"},
			&cli.BoolFlag{Name: "all-containers", Usage: "every container of the pod, init containers first"},
			&cli.BoolFlag{Name: "prefix", Usage: "prefix each line with [pod/NAME/CONTAINER]"},
		},
		Action: runLogs,
	}
}

func runLogs(c *cli.Context) error {
	l := layout(c)
	args := podArgs(c.Args().Slice())
	container := c.String("container")
	if len(args) > 1 {
		if container != "" || len(args) > 2 {
			return usageError("logs takes one pod name (and optionally a container name)")
		}
		container = args[1]
	}
	var rec *runtime.Record
	var err error
	switch {
	case len(args) >= 1:
		rec, err = findPod(l, namespace(c), args[0])
		if err != nil {
			return failed("%v", err)
		}
	case container != "":
		rec, err = podWithContainer(l, c, container)
		if err != nil {
			return err
		}
	default:
		return usageError("logs needs a pod name or -c CONTAINER")
	}
	names, inits := runtime.ContainerNames(rec.Pod)
	var containers []string
	switch {
	case c.Bool("all-containers"):
		containers = names
	case container != "":
		found := false
		for _, n := range names {
			found = found || n == container
		}
		if !found {
			return failed("container %s is not valid for pod %s", container, rec.Pod.Name)
		}
		containers = []string{container}
	default:
		var apps []string
		for _, n := range names {
			if !inits[n] {
				apps = append(apps, n)
			}
		}
		if len(names) > 1 {
			var desc []string
			for _, n := range names {
				if inits[n] {
					desc = append(desc, n+" (init)")
				} else {
					desc = append(desc, n)
				}
			}
			fmt.Fprintf(os.Stderr, "Defaulted container %q out of: %s\n", apps[0], strings.Join(desc, ", "))
		}
		containers = apps[:1]
	}
	opts := logs.Options{Follow: c.Bool("follow"), Tail: c.Int64("tail"), Timestamps: c.Bool("timestamps"), LimitBytes: c.Int64("limit-bytes")}
	if d := c.Duration("since"); d > 0 {
		opts.Since = time.Now().Add(-d)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, name := range containers {
		run, err := runtime.LogRun(rec.Pod, name, c.Bool("previous"))
		if err != nil {
			if len(containers) > 1 {
				continue
			}
			return failed("%v", err)
		}
		o := opts
		if c.Bool("prefix") {
			o.Prefix = fmt.Sprintf("[pod/%s/%s] ", rec.Pod.Name, name)
		}
		done := func() bool { return runtime.RunEnded(l, rec, name, run) }
		// kubectl prints both streams to stdout, in the order they were written.
		if err := logs.Read(ctx, rec.LogPath(name, run), o, os.Stdout, os.Stdout, done); err != nil {
			return failed("reading the logs of %s/%s: %v", rec.Pod.Name, name, err)
		}
	}
	return nil
}

// podWithContainer finds the one pod in the namespace that has a container of that name.
func podWithContainer(l runtime.Layout, c *cli.Context, container string) (*runtime.Record, error) {
	recs, err := runtime.ListPods(l, namespace(c))
	if err != nil {
		return nil, err
	}
	var matches []*runtime.Record
	for _, r := range recs {
		names, _ := runtime.ContainerNames(r.Pod)
		for _, n := range names {
			if n == container {
				matches = append(matches, r)
				break
			}
		}
	}
	switch len(matches) {
	case 0:
		return nil, failed("no pod in namespace %q has a container named %q", namespace(c), container)
	case 1:
		return matches[0], nil
	}
	var list []string
	for _, m := range matches {
		list = append(list, m.Pod.Name)
	}
	return nil, usageError("several pods have a container named %q: %s; name the pod: podrun logs POD -c %s", container, strings.Join(list, ", "), container)
}
