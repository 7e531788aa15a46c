package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/podspec"
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
  podrun delete -l app=web --force

  # Return once the deletion is requested; the pod stops in the background
  podrun delete web --wait=false`,
		Flags: append(append(filenameFlags("delete the pods of this manifest"), selectorFlags()...),
			&cli.BoolFlag{Name: "all", Usage: "every pod in the namespace"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all: every pod of every namespace"},
			&cli.Int64Flag{Name: "grace-period", Value: -1, Usage: "seconds to wait before SIGKILL (default: the pod's terminationGracePeriodSeconds; 0 means 1 unless --force)"},
			&cli.BoolFlag{Name: "now", Usage: "signal for immediate shutdown (same as --grace-period=1)"},
			&cli.BoolFlag{Name: "force", Usage: "kill immediately (with no --grace-period)"},
			&cli.BoolFlag{Name: "ignore-not-found", Usage: "no error when a pod does not exist"},
			&cli.BoolFlag{Name: "wait", Value: true, Usage: "wait until the pods are gone; --wait=false returns once their deletion is requested"},
			&cli.DurationFlag{Name: "timeout", Usage: "how long to wait for the pods to be gone before giving up (0: as long as it takes); the deletion goes on"},
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
	// What a delete killed mid-removal left (a record already marked gone)
	// goes now, as the next apply would take it.
	store.RemoveStaleCreations(l, 10*time.Minute)
	opts := supervisor.DeleteOptions{Force: c.Bool("force"), NoWait: !c.Bool("wait")}
	// kubectl delete's flag checks (delete.go Complete).
	g := c.Int64("grace-period")
	if c.Bool("now") {
		if g != -1 {
			return usageError("--now and --grace-period cannot be specified together")
		}
		g = 1
	}
	if g == 0 && !opts.Force {
		// "To preserve backwards compatibility, but prevent accidental data
		// loss, we convert --grace-period=0 into --grace-period=1."
		g = 1
	}
	if opts.Force && g < 0 {
		g = 0
	}
	// DeleteOptions.Validate: --force with a grace period is refused, and
	// an immediate deletion warned about.
	switch {
	case g > 0 && opts.Force:
		return failed("--force and --grace-period greater than 0 cannot be specified together")
	case g == 0 && opts.Force:
		fmt.Fprintln(os.Stderr, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.")
	}
	if g >= 0 {
		opts.GracePeriod = &g
	}
	// kubectl's PrintObj: "force deleted" for a deletion with grace period 0.
	deleted := "deleted"
	if g == 0 {
		deleted = "force deleted"
	}
	// --timeout (kubectl delete's): the deletions are requested, then waited
	// for until the timeout; 0 waits as long as it takes, as kubectl's week.
	timeout := c.Duration("timeout")
	if timeout < 0 {
		return usageError("--timeout must not be negative")
	}
	timed := timeout > 0 && !opts.NoWait
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
	case len(args) > 0 && !strings.Contains(args[0], "/") && (strings.Contains(args[0], ",") || args[0] == "all"):
		// Several types (deploy,svc), or kubectl's category all: the named
		// objects of each, or those -l or --all selects.
		words := strings.Split(args[0], ",")
		if args[0] == "all" {
			words = []string{"pods", "services", "daemonsets", "deployments", "replicasets", "statefulsets", "jobs", "cronjobs"}
		}
		names := args[1:]
		if len(names) == 0 && !c.Bool("all") && sel.empty() {
			return failed("resource(s) were provided, but no name was specified")
		}
		for _, w := range words {
			if isPodWord(w) {
				if len(names) > 0 {
					find(ns, names)
					continue
				}
				all, _, err := selectPods(c, nil, c.Bool("all-namespaces"))
				if err != nil {
					return err
				}
				recs = append(recs, all...)
				continue
			}
			k, ok := store.KindFor(w)
			if !ok {
				return failed("the server doesn't have a resource type %q", w)
			}
			if len(names) == 0 {
				objects = append(objects, allObjects(l, k, ns, c.Bool("all-namespaces"), sel.labels)...)
			}
			for _, n := range names {
				objects = append(objects, objectName{k, ns, n})
			}
		}
	case isObject && len(args) == 1 && !sel.empty():
		objects = allObjects(l, kind, ns, c.Bool("all-namespaces"), sel.labels)
	case isObject && kind == store.NamespaceKind && c.Bool("all"):
		return usageError("delete namespaces takes names")
	case isObject && len(args) == 1 && c.Bool("all"):
		objects = allObjects(l, kind, ns, c.Bool("all-namespaces"), nil)
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
		err = walkManifests(c, files, loadInput, func(_ *podspec.Manifest, _ podspec.ObjectRef, fo fileObject, pod *corev1.Pod) error {
			// Each object is deleted in the namespace its manifest gives it, else -n's.
			if pod != nil {
				find(fo.namespace, []string{fo.name})
			} else if k, ok := store.KindFor(fo.kind); ok {
				objects = append(objects, objectName{k, fo.namespace, fo.name})
			}
			return nil
		})
		if err != nil {
			return err
		}
	case c.Bool("all") || !sel.empty():
		// kubectl delete pods --all, pods -l SEL: the type word alone is no name.
		if len(podArgs(args)) > 0 {
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
	if len(recs) == 0 && len(objects) == 0 && len(errs) == 0 && (c.Bool("all") || !sel.empty()) {
		fmt.Println("No resources found")
	}
	// Pods stop concurrently, each within its own grace period.
	var mu sync.Mutex
	var wg sync.WaitGroup
	podOpts := opts
	if timed {
		// Requested as --wait=false does, then waited for below.
		podOpts.NoWait = true
	}
	var requested []*store.Record
	for _, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := deletePod(c, l, rec, podOpts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			requested = append(requested, rec)
			fmt.Printf("pod %q %s\n", rec.Pod.Name, deleted)
		}()
	}
	wg.Wait()
	if timed && len(requested) > 0 {
		if err := waitPodsGone(l, requested, timeout); err != nil {
			errs = append(errs, err)
		}
	} else if kept := keptPods(requested); !opts.NoWait && len(kept) > 0 {
		// Stopped, but kept for their finalizers: kubectl delete waits until
		// they are gone (its --timeout bounds that wait).
		if err := waitPodsGone(l, kept, 0); err != nil {
			errs = append(errs, err)
		}
	}
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
	errs = append(errs, deleteWorkloads(c, l, workloads, opts, c.Bool("ignore-not-found"))...)
	var namespaces []string
	warnClusterScope := c.String("namespace") != "" && !c.Bool("all-namespaces")
	for _, o := range objects {
		if o.kind.ClusterScoped && warnClusterScope {
			// DeleteOptions.DeleteResult, once, for -n with a cluster-scoped kind.
			fmt.Fprintln(os.Stderr, "Warning: deleting cluster-scoped resources, not scoped to the provided namespace")
			warnClusterScope = false
		}
		if o.kind == store.NamespaceKind {
			namespaces = append(namespaces, o.name)
			continue
		}
		if o.kind == store.PriorityClassKind && podspec.IsSystemPriorityClass(o.name) {
			// The priorityclass REST storage's Delete refuses the system classes.
			errs = append(errs, fmt.Errorf("%s %q is forbidden: this is a system priority class and cannot be deleted", o.kind.GroupResource(), o.name))
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
		fmt.Printf("%s %q %s\n", o.kind.Resource(), o.name, deleted)
	}
	// Namespaces last: what the other arguments named in them is gone by then.
	// (A namespace is deleted whole, --wait=false or not: it goes after its pods.)
	nsOpts := opts
	nsOpts.NoWait = false
	errs = append(errs, deleteNamespaces(l, namespaces, nsOpts, c.Bool("ignore-not-found"))...)
	// The last pod or Service gone, the services owner removes the Service
	// rules and exits; the delete returns once it has. The bound is for a
	// stuck owner, not a slow one: in an emulated VM (make test-vm) on a
	// loaded host its exit took over 15s.
	// With --wait=false the pods' finishers wait for it instead.
	if !opts.NoWait && !timed {
		if err := serviceowner.WaitGone(l, time.Minute); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}

// deletePod deletes a pod as kubectl delete does: it waits until the pod is
// gone, or with --wait=false returns once its deletion is requested (it reads
// as Terminating from then on) and leaves the rest to a detached
// `podrun finish-delete`, which holds the pod name's reservation until the
// supervisor has stopped the pod and removes its record. A pod that another
// delete is finishing is asked again (supervisor.Delete).
func deletePod(c *cli.Context, l store.Layout, rec *store.Record, opts supervisor.DeleteOptions) error {
	if !opts.NoWait || (rec.Request.Delete != nil && store.SupervisorPid(rec.Paths) > 0) {
		return supervisor.Delete(l, rec, opts)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"--root", l.Root, "--run-root", l.RunRoot}
	if lvl := c.String("log-level"); lvl != "" {
		args = append(args, "--log-level", lvl)
	}
	args = append(args, "finish-delete")
	if opts.GracePeriod != nil {
		args = append(args, "--grace-period", strconv.FormatInt(*opts.GracePeriod, 10))
	}
	if opts.Force {
		args = append(args, "--force")
	}
	args = append(args, rec.Pod.Namespace, rec.Pod.Name, string(rec.Pod.UID))
	logPath := os.DevNull
	if st, err := os.Stat(rec.Paths.RunDir); err == nil && st.IsDir() {
		logPath = filepath.Join(rec.Paths.RunDir, "finish-delete.log")
	}
	return ownerproc.Spawn(exe, args, logPath, "the deletion of pod "+rec.Key(), time.Minute)
}

// finishDeleteCommand is the detached end of `delete --wait=false`
// (deletePod): the delete of one pod, which says it has requested the
// deletion on the pipe its parent passes as fd 3, then waits until the pod
// is gone.
func finishDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:   "finish-delete",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "grace-period", Value: -1},
			&cli.BoolFlag{Name: "force"},
		},
		Action: func(c *cli.Context) error {
			ready := os.NewFile(3, "ready")
			var once sync.Once
			requested := func() { once.Do(func() { ownerproc.Ready(ready) }) }
			if c.NArg() != 3 {
				return usageError("finish-delete NAMESPACE NAME UID")
			}
			l := layout(c)
			rec, err := store.FindPod(l, c.Args().Get(0), c.Args().Get(1))
			if errors.Is(err, store.ErrNotFound) || (err == nil && string(rec.Pod.UID) != c.Args().Get(2)) {
				requested() // gone already
				return nil
			}
			if err != nil {
				return err
			}
			opts := supervisor.DeleteOptions{Force: c.Bool("force"), Requested: requested}
			if g := c.Int64("grace-period"); g >= 0 {
				opts.GracePeriod = &g
			}
			if err := supervisor.Delete(l, rec, opts); err != nil {
				return err
			}
			requested()
			if len(keptPods([]*store.Record{rec})) > 0 {
				return nil // kept for its finalizers: the services owner stays for it
			}
			return serviceowner.WaitGone(l, time.Minute)
		},
	}
}

// keptPods are those of recs whose record a delete kept for their
// finalizers (supervisor.Delete stopped them).
func keptPods(recs []*store.Record) []*store.Record {
	var kept []*store.Record
	for _, r := range recs {
		if _, err := os.Stat(r.Paths.Dir); err == nil && len(r.Pod.Finalizers) > 0 {
			kept = append(kept, r)
		}
	}
	return kept
}

// waitPodsGone is the wait of kubectl delete after its deletions
// (DeleteOptions.DeleteResult: cmdwait.IsDeleted with --timeout): until every
// pod's record is gone, else kubectl's timeout error for the first one left
// (wait.go extendErrWaitTimeout: "timed out waiting for the condition on
// pods/NAME"), exit 1; their deletion goes on.
func waitPodsGone(l store.Layout, recs []*store.Record, timeout time.Duration) error {
	ctx, cancel := deadlineContext(timeout)
	defer cancel()
	pw, err := newPodWatch(l)
	if err != nil {
		return err
	}
	defer pw.close()
	pending := recs
	for {
		var still []*store.Record
		for _, r := range pending {
			if _, err := os.Stat(r.Paths.Dir); err == nil {
				still = append(still, r)
			}
		}
		if pending = still; len(pending) == 0 {
			// The services owner goes with the last pod (as a delete without
			// --timeout waits for), within what is left of the timeout.
			if left := time.Until(deadlineOf(ctx)); left > 0 {
				_ = serviceowner.WaitGone(l, left)
			}
			return nil
		}
		if err := pw.wait(ctx, 100*time.Millisecond, pending...); err != nil {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errTimeout) {
				return cli.Exit("", exitFailed) // interrupted
			}
			return fmt.Errorf("timed out waiting for the condition on pods/%s", pending[0].Pod.Name)
		}
	}
}
