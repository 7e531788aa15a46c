package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func deleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "stop pods gracefully and release everything they hold",
		ArgsUsage: "[pod] NAME... | -f FILE | --all [-A]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: "delete the pods of this manifest"},
			&cli.BoolFlag{Name: "all", Usage: "every pod in the namespace"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all: every pod of every namespace"},
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
	opts := supervisor.DeleteOptions{Force: c.Bool("force")}
	if g := c.Int64("grace-period"); g >= 0 {
		if g == 0 && !opts.Force {
			return usageError("--grace-period=0 needs --force (immediate deletion); use --grace-period=1 for the shortest graceful stop")
		}
		opts.GracePeriod = &g
	}
	var recs []*store.Record
	var errs []error
	find := func(names []string) {
		for _, n := range names {
			rec, err := store.FindPod(l, ns, n)
			if errors.Is(err, store.ErrNotFound) && c.Bool("ignore-not-found") {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			recs = append(recs, rec)
		}
	}
	switch {
	case c.Bool("all"):
		scope := ns
		if c.Bool("all-namespaces") {
			scope = ""
		}
		all, err := store.ListPods(l, scope)
		if err != nil {
			return err
		}
		recs = all
	case c.String("filename") != "":
		m, err := podspec.LoadFile(c.String("filename"))
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		var names []string
		for _, p := range m.Pods {
			names = append(names, p.Name)
		}
		find(names)
	default:
		names := podArgs(c.Args().Slice())
		if len(names) == 0 {
			return usageError("delete needs pod names, -f FILE or --all")
		}
		find(names)
	}
	// Pods stop concurrently, each within its own grace period.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := supervisor.Delete(l, rec, opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			fmt.Printf("pod %q deleted\n", rec.Pod.Name)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}
