package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
)

func deleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "stop pods gracefully and release everything they hold",
		ArgsUsage: "[pod] NAME... | -f FILE|DIR|- | -l SELECTOR | --all [-A]",
		Description: `Examples:
  # Delete a pod, waiting for its grace period
  podrun delete web

  # Delete the pods of every manifest in a directory
  podrun delete -f manifests/ -R

  # Delete the pods labelled app=web at once
  podrun delete -l app=web --force`,
		Flags: append(append(filenameFlags("delete the pods of this manifest"), selectorFlags()...),
			&cli.BoolFlag{Name: "all", Usage: "every pod in the namespace"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all: every pod of every namespace"},
			&cli.Int64Flag{Name: "grace-period", Value: -1, Usage: "seconds to wait before SIGKILL (default: the pod's terminationGracePeriodSeconds; 0 only with --force)"},
			&cli.BoolFlag{Name: "force", Usage: "kill immediately (with no --grace-period)"},
			&cli.BoolFlag{Name: "ignore-not-found", Usage: "no error when a pod does not exist"},
		),
		Action: runDelete,
	}
}

func runDelete(c *cli.Context) error {
	l := layout(c)
	ns := namespace(c)
	opts := runtime.DeleteOptions{Force: c.Bool("force")}
	if g := c.Int64("grace-period"); g >= 0 {
		if g == 0 && !opts.Force {
			return usageError("--grace-period=0 needs --force (immediate deletion); use --grace-period=1 for the shortest graceful stop")
		}
		opts.GracePeriod = &g
	}
	var recs []*runtime.Record
	var errs []error
	find := func(names []string) {
		for _, n := range names {
			rec, err := findPod(l, ns, n)
			if errors.Is(err, runtime.ErrNotFound) && c.Bool("ignore-not-found") {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			recs = append(recs, rec)
		}
	}
	sel, err := parseSelectors(c)
	if err != nil {
		return err
	}
	switch {
	case len(c.StringSlice("filename")) > 0:
		if c.NArg() > 0 {
			return usageError("delete takes -f or names, not both")
		}
		files, err := expandFilenames(c.StringSlice("filename"), c.Bool("recursive"))
		if err != nil {
			return err
		}
		var names []string
		for _, f := range files {
			m, err := podspec.LoadFile(f)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			for _, p := range m.Pods {
				names = append(names, p.Name)
			}
		}
		find(names)
	case c.Bool("all") || !sel.empty():
		if c.NArg() > 0 {
			return usageError("delete takes --all or -l, or names, not both")
		}
		all, _, err := selectPods(c, nil, c.Bool("all-namespaces"))
		if err != nil {
			return err
		}
		recs = all
	default:
		names := podArgs(c.Args().Slice())
		if len(names) == 0 {
			return usageError("delete needs pod names, -f FILE, -l SELECTOR or --all")
		}
		find(names)
	}
	if len(recs) == 0 && len(errs) == 0 && (c.Bool("all") || !sel.empty()) {
		fmt.Println("No resources found")
	}
	// Pods stop concurrently, each within its own grace period.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := runtime.Delete(l, rec, opts)
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
