package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
)

func deleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "stop pods gracefully and release everything they hold",
		ArgsUsage: "[pod] NAME... | -f FILE | --all",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: "delete the pods of this manifest"},
			&cli.BoolFlag{Name: "all", Usage: "every pod in the namespace"},
			&cli.Int64Flag{Name: "grace-period", Value: -1, Usage: "seconds to wait before SIGKILL (default: the pod's terminationGracePeriodSeconds; 0 only with --force)"},
			&cli.BoolFlag{Name: "force", Usage: "kill immediately (with no --grace-period)"},
			&cli.BoolFlag{Name: "ignore-not-found", Usage: "no error when a pod does not exist"},
		},
		Action: runDelete,
	}
}

func runDelete(c *cli.Context) error {
	l := layout(c)
	ns := namespace(c)
	var names []string
	switch {
	case c.Bool("all"):
		recs, err := runtime.ListPods(l, ns)
		if err != nil {
			return err
		}
		for _, r := range recs {
			names = append(names, r.Pod.Name)
		}
	case c.String("filename") != "":
		m, err := podspec.LoadFile(c.String("filename"))
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		for _, p := range m.Pods {
			names = append(names, p.Name)
		}
	default:
		names = podArgs(c.Args().Slice())
		if len(names) == 0 {
			return usageError("delete needs pod names, -f FILE or --all")
		}
	}
	opts := runtime.DeleteOptions{Force: c.Bool("force")}
	if g := c.Int64("grace-period"); g >= 0 {
		if g == 0 && !opts.Force {
			return usageError("--grace-period=0 needs --force (immediate deletion); use --grace-period=1 for the shortest graceful stop")
		}
		opts.GracePeriod = &g
	}
	var errs []error
	for _, n := range names {
		rec, err := runtime.FindPod(l, ns, n)
		if errors.Is(err, runtime.ErrNotFound) {
			if !c.Bool("ignore-not-found") {
				errs = append(errs, err)
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := runtime.Delete(l, rec, opts); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("pod %q deleted\n", n)
	}
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}
