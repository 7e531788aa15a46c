package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/store"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a container's logs",
		ArgsUsage: "[pod/]POD [CONTAINER] | -l SELECTOR | -c CONTAINER",
		Description: `Examples:
  # The logs of the pod's default container (kubectl.kubernetes.io/default-container, else the first)
  podrun logs web

  # Follow every container of the pod, each line prefixed with its pod and container
  podrun logs web -f --all-containers --prefix

  # The last 10 lines of every pod labelled app=web, followed
  podrun logs -l app=web -f

  # The init container that failed, in the one pod that has it
  podrun logs -c init-mydb --previous`,
		Flags: append(selectorFlags()[:1],
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "the container (a pod name is not needed when one pod has it)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until the containers stop (Ctrl-C ends quietly)"},
			&cli.BoolFlag{Name: "previous", Aliases: []string{"p"}, Usage: "the previous run of the container"},
			&cli.BoolFlag{Name: "timestamps", Usage: "prefix each line with its RFC3339 timestamp"},
			&cli.Int64Flag{Name: "tail", Value: -1, Usage: "only the last N lines (default all; 10 with -l)"},
			&cli.DurationFlag{Name: "since", Usage: "only lines newer than this (e.g. 5s, 2m)"},
			&cli.StringFlag{Name: "since-time", Usage: "only lines from this RFC3339 time on"},
			&cli.Int64Flag{Name: "limit-bytes", Usage: "stop after this many bytes"},
			&cli.BoolFlag{Name: "all-containers", Usage: "every container of the pod, init containers first"},
			&cli.BoolFlag{Name: "prefix", Usage: "prefix each line with [pod/NAME/CONTAINER]"},
			&cli.BoolFlag{Name: "ignore-errors", Usage: "with several containers: go on when one cannot be read"},
			&cli.BoolFlag{Name: "all-pods", Usage: "with TYPE/NAME: every pod of the object, not one (sets --prefix)"},
			&cli.IntFlag{Name: "max-log-requests", Value: 5, Usage: "most log streams -f follows at once"},
		),
		Action: runLogs,
	}
}

// defaultContainerAnnotation names the container kubectl logs and exec use
// when none is given.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// logSource is one container run to read.
type logSource struct {
	rec       *store.Record
	container string
}

func runLogs(c *cli.Context) error {
	l := layout(c)
	args := podArgs(c.Args().Slice())
	container := c.String("container")
	if len(args) > 1 {
		if len(args) > 2 {
			return usageError("logs takes one pod name (and optionally a container name)")
		}
		if container != "" {
			return failed("only one of -c or an inline [CONTAINER] arg is allowed")
		}
		container = args[1]
	}
	// LogsOptions.Validate's checks, with kubectl's messages.
	switch {
	case c.Bool("all-containers") && container != "":
		return failed("--all-containers=true should not be specified with container name %s", container)
	case c.Int64("limit-bytes") < 0:
		return failed("--limit-bytes must be greater than 0")
	case c.Duration("since") < 0:
		return failed("--since must be greater than 0")
	case c.Int64("tail") < -1:
		return failed("--tail must be greater than or equal to -1")
	case c.IsSet("since") && c.IsSet("since-time"):
		return failed("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	var recs []*store.Record
	selector := c.String("selector") != ""
	// TYPE/NAME (deploy/web, job/x, svc/web): one pod of the object's
	// selector, or every one with --all-pods (polymorphichelpers
	// LogsForObject and AllPodLogsForObject).
	var objectPods bool
	if len(args) >= 1 && !selector {
		if word, name, ok := strings.Cut(args[0], "/"); ok {
			if k, isKind := store.KindFor(word); isKind {
				var err error
				if recs, err = podsForObject(l, namespace(c), k, name, c.Bool("all-pods")); err != nil {
					return err
				}
				objectPods = true
			}
		}
	}
	prefix := c.Bool("prefix") || c.Bool("all-pods") // LogsOptions.Complete: --all-pods sets --prefix
	switch {
	case objectPods:
	case selector:
		if len(args) > 0 {
			return usageError("only a selector (-l) or a POD name is allowed")
		}
		var err error
		recs, _, err = selectPods(c, nil, false)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", namespace(c))
			return nil
		}
	case len(args) >= 1:
		rec, err := findPod(l, namespace(c), args[0])
		if err != nil {
			return failed("%v", err)
		}
		recs = []*store.Record{rec}
	case container != "":
		rec, err := podWithContainer(l, c, container)
		if err != nil {
			return err
		}
		recs = []*store.Record{rec}
	default:
		return usageError("logs needs a pod name, -l SELECTOR or -c CONTAINER")
	}
	var sources []logSource
	for _, rec := range recs {
		names, inits := store.ContainerNames(rec.Pod)
		switch {
		case c.Bool("all-containers"):
			for _, n := range names {
				sources = append(sources, logSource{rec, n})
			}
		case container != "":
			found := false
			for _, n := range names {
				found = found || n == container
			}
			if !found {
				if selector {
					continue
				}
				return failed("container %s is not valid for pod %s", container, rec.Pod.Name)
			}
			sources = append(sources, logSource{rec, container})
		default:
			sources = append(sources, logSource{rec, defaultContainer(rec, names, inits)})
		}
	}
	opts := logs.Options{Follow: c.Bool("follow"), Tail: c.Int64("tail"), Timestamps: c.Bool("timestamps"), LimitBytes: c.Int64("limit-bytes")}
	if selector && !c.IsSet("tail") {
		opts.Tail = 10 // kubectl's default with a selector
	}
	if d := c.Duration("since"); d > 0 {
		opts.Since = time.Now().Add(-d)
	}
	if st := c.String("since-time"); st != "" {
		if c.IsSet("since") {
			return usageError("at most one of --since-time and --since may be used")
		}
		t, err := time.Parse(time.RFC3339Nano, st)
		if err != nil {
			return usageError("--since-time %q: want an RFC3339 time (e.g. 2026-11-26T08:00:00Z)", st)
		}
		opts.Since = t
	}
	if opts.Follow && len(sources) > c.Int("max-log-requests") {
		// RunLogsContext's bound on parallel follows.
		return failed("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit", len(sources), c.Int("max-log-requests"))
	}
	ctx, stop := interruptContext()
	defer stop()
	read := func(src logSource, w io.Writer) error {
		run, err := store.LogRun(src.rec.Pod, src.container, c.Bool("previous"))
		if err != nil {
			if len(sources) > 1 {
				return nil // a container with no run to show is left out, as before
			}
			return err
		}
		o := opts
		if prefix {
			o.Prefix = fmt.Sprintf("[pod/%s/%s] ", src.rec.Pod.Name, src.container)
		}
		done := func() bool { return store.RunEnded(l, src.rec, src.container, run) }
		// kubectl prints both streams to stdout, in the order they were written.
		if err := logs.Read(ctx, src.rec.LogPath(src.container, run), o, w, w, done); err != nil {
			return fmt.Errorf("reading the logs of %s/%s: %w", src.rec.Pod.Name, src.container, err)
		}
		return nil
	}
	quietly := func(err error) error {
		if err == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return nil // Ctrl-C ends a follow quietly
		}
		return failed("%v", err)
	}
	if len(sources) == 1 {
		return quietly(read(sources[0], os.Stdout))
	}
	if !opts.Follow {
		// One after the other, as kubectl does without -f.
		for _, src := range sources {
			if err := read(src, os.Stdout); err != nil && ctx.Err() == nil {
				if !c.Bool("ignore-errors") && !c.Bool("all-containers") {
					return failed("%v", err)
				}
				fmt.Fprintf(os.Stderr, "error: %v\n", err)
			}
		}
		return nil
	}
	// Following several containers: all at once, each line written whole as
	// it arrives, so lines of different containers interleave by arrival.
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(sources))
	for i, src := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lw := &lineWriter{mu: &mu, w: os.Stdout}
			errs[i] = read(src, lw)
			lw.flush()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err := quietly(err); err != nil && !c.Bool("ignore-errors") && !c.Bool("all-containers") {
			return err
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
		}
	}
	return nil
}

// defaultContainer is the container kubectl logs picks: the one the
// kubectl.kubernetes.io/default-container annotation names, else the first
// app container (saying so when there are others).
func defaultContainer(rec *store.Record, names []string, inits map[string]bool) string {
	if want := rec.Pod.Annotations[defaultContainerAnnotation]; want != "" {
		for _, n := range names {
			if n == want {
				return n
			}
		}
		fmt.Fprintf(os.Stderr, "Default container name %q not found in pod %s\n", want, rec.Pod.Name)
	}
	var apps, desc []string
	for _, n := range names {
		if inits[n] {
			desc = append(desc, n+" (init)")
		} else {
			apps = append(apps, n)
			desc = append(desc, n)
		}
	}
	if len(names) > 1 {
		fmt.Fprintf(os.Stderr, "Defaulted container %q out of: %s\n", apps[0], strings.Join(desc, ", "))
	}
	return apps[0]
}

// lineWriter writes only whole lines to a shared writer, under a shared lock.
type lineWriter struct {
	mu  *sync.Mutex
	w   io.Writer
	buf []byte
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.buf = append(lw.buf, p...)
	if i := bytes.LastIndexByte(lw.buf, '\n'); i >= 0 {
		lw.mu.Lock()
		_, err := lw.w.Write(lw.buf[:i+1])
		lw.mu.Unlock()
		lw.buf = append(lw.buf[:0], lw.buf[i+1:]...)
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (lw *lineWriter) flush() {
	if len(lw.buf) > 0 {
		lw.mu.Lock()
		_, _ = lw.w.Write(lw.buf)
		lw.mu.Unlock()
		lw.buf = nil
	}
}

// podWithContainer finds the one pod in the namespace that has a container of that name.
func podWithContainer(l store.Layout, c *cli.Context, container string) (*store.Record, error) {
	recs, err := store.ListPods(l, namespace(c))
	if err != nil {
		return nil, err
	}
	var matches []*store.Record
	for _, r := range recs {
		names, _ := store.ContainerNames(r.Pod)
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

// podsForObject are the pods of an object kubectl logs takes as TYPE/NAME:
// those its selector matches in its namespace (polymorphichelpers
// SelectorsForObject), the one kubectl would pick first (GetFirstPod with
// podutils.ByLogging: running, ready, then the oldest) unless all. Like
// kubectl it says which one it took when there are several.
func podsForObject(l store.Layout, ns string, k *store.Kind, name string, all bool) ([]*store.Record, error) {
	obj, err := l.Get(k, ns, name)
	if err != nil {
		return nil, failed("%v", err)
	}
	var sel labels.Selector
	switch v := obj.(type) {
	case *appsv1.Deployment:
		sel, err = metav1.LabelSelectorAsSelector(v.Spec.Selector)
	case *appsv1.ReplicaSet:
		sel, err = metav1.LabelSelectorAsSelector(v.Spec.Selector)
	case *appsv1.DaemonSet:
		sel, err = metav1.LabelSelectorAsSelector(v.Spec.Selector)
	case *appsv1.StatefulSet:
		sel, err = metav1.LabelSelectorAsSelector(v.Spec.Selector)
	case *batchv1.Job:
		sel, err = metav1.LabelSelectorAsSelector(v.Spec.Selector)
	case *corev1.Service:
		if len(v.Spec.Selector) == 0 {
			return nil, failed("invalid service '%s': Service is defined without a selector", v.Name)
		}
		sel = labels.SelectorFromSet(v.Spec.Selector)
	default:
		return nil, failed("cannot get the logs from %s", k.GroupResource())
	}
	if err != nil {
		return nil, failed("invalid label selector: %v", err)
	}
	all_, err := store.ListPods(l, ns)
	if err != nil {
		return nil, err
	}
	var recs []*store.Record
	for _, r := range all_ {
		if r.Broken == nil && sel.Matches(labels.Set(r.Pod.Labels)) {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return nil, failed("no pods found for %s/%s (selector %s)", k.Resource(), name, sel)
	}
	rank := func(p *corev1.Pod) int {
		n := 0
		if p.Status.Phase == corev1.PodRunning {
			n += 2
		}
		if conditionStatus(p, corev1.PodReady) == corev1.ConditionTrue {
			n++
		}
		return n
	}
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i].View(), recs[j].View()
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra > rb
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	if all {
		return recs, nil
	}
	if len(recs) > 1 {
		fmt.Fprintf(os.Stderr, "Found %v pods, using pod/%v\n", len(recs), recs[0].Pod.Name)
	}
	return recs[:1], nil
}
