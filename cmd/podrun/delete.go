package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func deleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "stop pods gracefully and release everything they hold",
		ArgsUsage: "[pod] NAME... | configmap|secret|svc NAME... | svc --all | -f FILE|DIR|- | -l SELECTOR | --all [-A]",
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

// objectName names a stored object that is not a pod.
type objectName struct {
	kind            *store.Kind
	namespace, name string
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
	var objects []objectName // ConfigMaps and Secrets to delete, after the pods
	find := func(ns string, names []string) {
		for _, n := range names {
			rec, err := findPod(l, ns, n)
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
	sel, err := parseSelectors(c)
	if err != nil {
		return err
	}
	args := c.Args().Slice()
	if err := checkResourceType(args, podExists(c)); err != nil {
		return err
	}
	kind, isObject := (*store.Kind)(nil), false
	if len(args) > 0 {
		if k, names, ok := kindSlashNames(args); ok && strings.Contains(args[0], "/") {
			kind, isObject, args = k, true, append([]string{k.Plural}, names...)
		} else {
			kind, isObject = store.KindFor(args[0])
		}
	}
	switch {
	case isObject && kind == store.NamespaceKind && c.Bool("all"):
		return usageError("delete namespaces takes names")
	case isObject && len(args) == 1 && c.Bool("all"):
		objects = allObjects(l, kind, ns, c.Bool("all-namespaces"))
	case isObject:
		if len(args) < 2 {
			return usageError("delete %s needs names", args[0])
		}
		for _, n := range args[1:] {
			objects = append(objects, objectName{kind, ns, n})
		}
	case hasInput(c):
		if c.NArg() > 0 {
			return usageError("delete takes -f or names, not both")
		}
		files, err := inputFiles(c)
		if err != nil {
			return err
		}
		for _, f := range files {
			m, err := loadInput(f)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			// Each object is deleted in the namespace its manifest gives it, else -n's;
			// -n naming another namespace than the manifest is an error (kubectl).
			if c.String("namespace") != "" {
				if err := checkNamespaces(m, ns); err != nil {
					return err
				}
			}
			pod := 0 // m.Pods holds one pod per Pod, in order
			for _, o := range m.Objects {
				ons := o.Namespace
				if ons == "" {
					ons = ns
				}
				switch o.Kind {
				case "Pod":
					if pod < len(m.Pods) {
						find(ons, []string{m.Pods[pod].Name})
					}
					pod++
				default:
					if k, ok := store.KindFor(o.Kind); ok {
						objects = append(objects, objectName{k, ons, o.Name})
					}
				}
			}
		}
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
		names := podArgs(args)
		if len(names) == 0 {
			return usageError("delete needs pod names, -f FILE, -l SELECTOR or --all")
		}
		find(ns, names)
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
	// Workload objects go with what they own.
	var workloads []objectName
	rest := objects[:0:0]
	for _, o := range objects {
		if controllers.KindOf(o.kind) != nil {
			workloads = append(workloads, o)
		} else {
			rest = append(rest, o)
		}
	}
	objects = rest
	errs = append(errs, deleteWorkloads(l, workloads, opts, c.Bool("ignore-not-found"))...)
	var namespaces []string
	for _, o := range objects {
		if o.kind == store.NamespaceKind {
			namespaces = append(namespaces, o.name)
			continue
		}
		err := l.Remove(o.kind, o.namespace, o.name)
		if errors.Is(err, store.ErrNotFound) && c.Bool("ignore-not-found") {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("%s %q deleted\n", strings.ToLower(o.kind.Name), o.name)
	}
	// Namespaces last: what the other arguments named in them is gone by then.
	errs = append(errs, deleteNamespaces(l, namespaces, opts, c.Bool("ignore-not-found"))...)
	// The last pod or Service gone, the services owner removes the Service
	// rules and exits; the delete returns once it has. The bound is for a
	// stuck owner, not a slow one: in an emulated VM (make test-vm) on a
	// loaded host its exit took over 15s.
	if err := serviceowner.WaitGone(l, time.Minute); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}
