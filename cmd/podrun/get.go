package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "list pods (NAME READY STATUS RESTARTS AGE) or print them",
		ArgsUsage: "[pods|pod|po|configmaps|cm|secrets|events] [NAME...] | -f FILE | -l SELECTOR",
		Description: `Examples:
  # The pods of the namespace, with their labels
  podrun get pods --show-labels

  # The names of the running pods labelled app=web
  podrun get pods -l app=web --field-selector status.phase=Running -o name

  # One field, as kubectl prints it
  podrun get pod web -o jsonpath='{.status.podIP}'

  # Chosen columns, sorted
  podrun get pods -o custom-columns=NAME:.metadata.name,IP:.status.podIP --sort-by=.metadata.name

  # Watch STATUS changes (Ctrl-C to stop)
  podrun get pods -w`,
		Flags: append(append(filenameFlags("the objects of this manifest (pods, Services, ConfigMaps, Secrets)"), selectorFlags()...),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "wide, name, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE, go-template=TEMPLATE, go-template-file=FILE"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "pods of every namespace"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "after the list, print a pod again each time it changes"},
			&cli.BoolFlag{Name: "watch-only", Usage: "print only the changes"},
			&cli.BoolFlag{Name: "show-labels", Usage: "a LABELS column"},
			&cli.StringSliceFlag{Name: "label-columns", Aliases: []string{"L"}, Usage: "a column for each of these label keys (repeatable, or comma separated)"},
			&cli.BoolFlag{Name: "no-headers", Usage: "no header line in tables and custom columns"},
			&cli.StringFlag{Name: "sort-by", Usage: "sort by a jsonpath field (e.g. .metadata.name, {.status.startTime})"},
			&cli.BoolFlag{Name: "ignore-not-found", Usage: "no error for a named pod that does not exist"},
			&cli.StringFlag{Name: "for", Usage: "get events: only those of this pod", Hidden: true},
			&cli.StringSliceFlag{Name: "types", Usage: "get events: only these types", Hidden: true},
		),
		Action: runGet,
	}
}

// isPodWord reports whether w is kubectl's word for the pod type.
func isPodWord(w string) bool { return w == "pods" || w == "pod" || w == "po" }

// podArgs drops kubectl's resource-type word (pods, pod, po, pod/NAME).
func podArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if i == 0 && isPodWord(a) {
			continue
		}
		if len(a) > 4 && a[:4] == "pod/" {
			a = a[4:]
		}
		out = append(out, a)
	}
	return out
}

func statusWord(pod *corev1.Pod) string { return printers.PodRow(pod, time.Now()).Status }

func apiPod(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.APIVersion, out.Kind = "v1", "Pod"
	return out
}

func runGet(c *cli.Context) error {
	setTableOptions(c)
	ensureOwner(c)
	ensureControllers(c)
	if args := c.Args().Slice(); len(args) > 0 {
		if strings.Contains(args[0], ",") && !strings.Contains(args[0], "/") {
			return getKinds(c, strings.Split(args[0], ","), args[1:])
		}
		if k, names, ok := kindSlashNames(args); ok {
			return getObjects(c, k, names)
		}
		if isEndpoints(args[0]) {
			return getEndpoints(c, args[1:])
		}
		if isEndpointSlices(args[0]) {
			return getEndpointSlices(c, args[1:])
		}
		if k, ok := store.KindFor(args[0]); ok {
			return getObjects(c, k, args[1:])
		}
	}
	switch c.Args().First() {
	case "events", "event", "ev":
		return runEvents(c) // get events: the same table as podrun events
	case "all":
		if c.NArg() > 1 {
			return usageError("get all takes no names")
		}
		return getAll(c)
	}
	if err := checkResourceType(c.Args().Slice(), podExists(c)); err != nil {
		return err
	}
	l := layout(c)
	names := podArgs(c.Args().Slice())
	if hasInput(c) {
		if len(names) > 0 {
			return usageError("get takes -f or names, not both")
		}
		objs, err := fileObjects(c)
		if err != nil {
			return err
		}
		if !podsIn(objs, namespace(c)) {
			if c.Bool("watch") || c.Bool("watch-only") {
				return usageError("get -w -f: podrun watches the pods of one namespace; this file has other kinds or namespaces")
			}
			return getFiles(c, objs)
		}
		if len(objs) == 0 {
			return usageError("no objects passed to get")
		}
		for _, o := range objs {
			names = append(names, o.name)
		}
	}
	allNS := c.Bool("all-namespaces")
	pr, err := newPodPrinter(c, len(names) == 1)
	if err != nil {
		return err
	}
	var live []*store.Record // the listed pods' running supervisors, for get -w
	list := func() ([]*corev1.Pod, error) {
		recs, notFound, err := selectPods(c, names, allNS)
		if err != nil {
			return nil, err
		}
		if len(notFound) > 0 && !c.Bool("ignore-not-found") {
			return nil, failed("%v", errors.Join(notFound...))
		}
		var pods []*corev1.Pod
		live = live[:0]
		for _, r := range recs {
			pods = append(pods, r.View())
			if store.SupervisorPid(r.Paths) > 0 {
				live = append(live, r)
			}
		}
		return pods, pr.sort(pods)
	}
	pods, err := list()
	if err != nil {
		return err
	}
	if !c.Bool("watch") && !c.Bool("watch-only") {
		if len(pods) == 0 && pr.table() && len(names) == 0 {
			if allNS {
				fmt.Fprintln(os.Stderr, "No resources found")
			} else {
				fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", namespace(c))
			}
			return nil
		}
		return pr.print(os.Stdout, pods, true)
	}
	return watchPods(c, l, pr, pods, list, func() []*store.Record { return live })
}

// watchPods is get -w: the list (not with --watch-only), then each pod again
// whenever what its line shows changes (its age aside), woken by fsnotify
// and the listed pods' supervisors' exits.
func watchPods(c *cli.Context, l store.Layout, pr *podPrinter, pods []*corev1.Pod, list func() ([]*corev1.Pod, error), live func() []*store.Record) error {
	ctx, stop := interruptContext()
	defer stop()
	pw, err := newPodWatch(l)
	if err != nil {
		return failed("watching the pod records: %v", err)
	}
	defer pw.close()
	last := map[string]string{}
	header := true
	show := func(pods []*corev1.Pod, print bool) error {
		seen := map[string]bool{}
		var changed []*corev1.Pod
		for _, p := range pods {
			k := p.Namespace + "/" + p.Name
			seen[k] = true
			if f := pr.fingerprint(p); last[k] != f {
				last[k] = f
				changed = append(changed, p)
			}
		}
		for k := range last {
			if !seen[k] {
				delete(last, k)
			}
		}
		if !print || len(changed) == 0 {
			return nil
		}
		err := pr.print(os.Stdout, changed, header)
		header = false
		return err
	}
	if err := show(pods, !c.Bool("watch-only")); err != nil {
		return err
	}
	for {
		// Woken by a record's change (fsnotify) or the exit of a listed
		// pod's supervisor (its pidfd: the pod turns Unknown without a
		// write), with no periodic relist.
		if err := pw.wait(ctx, -1, live()...); err != nil {
			return nil // Ctrl-C ends a watch quietly, as kubectl's
		}
		pods, err := list()
		if err != nil {
			return err
		}
		if err := show(pods, true); err != nil {
			return err
		}
	}
}

// podPrinter prints pods in one of kubectl get's output formats.
type podPrinter struct {
	format, arg string
	single      bool // one pod named: json/yaml/jsonpath print it, not a List
	opts        printers.TableOptions
	cols        []printers.Column
	sortBy      string
}

func newPodPrinter(c *cli.Context, single bool) (*podPrinter, error) {
	pr := &podPrinter{single: single, sortBy: c.String("sort-by")}
	out := c.String("output")
	pr.format, pr.arg, _ = strings.Cut(out, "=")
	var labelCols []string
	for _, v := range c.StringSlice("label-columns") {
		labelCols = append(labelCols, strings.Split(v, ",")...)
	}
	pr.opts = printers.TableOptions{
		Wide: pr.format == "wide", AllNamespaces: c.Bool("all-namespaces"),
		NoHeaders: c.Bool("no-headers"), ShowLabels: c.Bool("show-labels"), LabelColumns: labelCols,
	}
	if strings.HasSuffix(pr.format, "-file") {
		data, err := os.ReadFile(pr.arg)
		if err != nil {
			return nil, usageError("-o %s: %v", out, err)
		}
		pr.format, pr.arg = strings.TrimSuffix(pr.format, "-file"), strings.TrimSpace(string(data))
	}
	switch pr.format {
	case "", "wide", "name", "json", "yaml":
	case "jsonpath", "go-template", "template":
		if pr.arg == "" {
			return nil, usageError("-o %s needs a template: -o %s='{...}'", pr.format, pr.format)
		}
		if err := pr.print(io.Discard, nil, false); err != nil {
			return nil, usageError("%v", err)
		}
	case "custom-columns":
		cols, err := printers.ParseCustomColumns(pr.arg)
		if err != nil {
			return nil, usageError("%v", err)
		}
		pr.cols = cols
	default:
		return nil, usageError("unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-file,name,template,templatefile,wide,yaml", out)
	}
	if pr.sortBy != "" {
		expr, err := printers.RelaxedJSONPath(pr.sortBy)
		if err != nil {
			return nil, usageError("--sort-by %q: %v", pr.sortBy, err)
		}
		j := jsonpath.New("sort").AllowMissingKeys(true)
		if err := j.Parse(expr); err != nil {
			return nil, usageError("--sort-by %q: %v", pr.sortBy, err)
		}
	}
	return pr, nil
}

func (pr *podPrinter) table() bool { return pr.format == "" || pr.format == "wide" }

// fingerprint is what a watch compares: the line (without AGE) or the object.
func (pr *podPrinter) fingerprint(p *corev1.Pod) string {
	if pr.table() {
		r := printers.PodRow(p, time.Now())
		f := r.Ready + "|" + r.Status + "|" + r.Restarts
		if pr.opts.Wide {
			f += "|" + r.IP
		}
		if pr.opts.ShowLabels || len(pr.opts.LabelColumns) > 0 {
			f += "|" + printers.FormatLabels(p.Labels)
		}
		return f
	}
	data, _ := json.Marshal(p.Status)
	return string(data) + printers.FormatLabels(p.Labels)
}

func (pr *podPrinter) print(w io.Writer, pods []*corev1.Pod, header bool) error {
	var obj any
	if pr.single && len(pods) == 1 {
		obj = apiPod(pods[0])
	} else {
		list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
		for _, p := range pods {
			data, _ := json.Marshal(apiPod(p))
			list.Items = append(list.Items, runtimeRaw(data))
		}
		obj = list
	}
	switch pr.format {
	case "", "wide":
		o := pr.opts
		o.NoHeaders = o.NoHeaders || !header
		return printers.PrintTableWith(w, pods, o, time.Now())
	case "name":
		for _, p := range pods {
			fmt.Fprintf(w, "pod/%s\n", p.Name)
		}
		return nil
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(obj)
	case "yaml":
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "jsonpath":
		return printers.JSONPath(w, pr.arg, obj)
	case "go-template", "template":
		return printers.GoTemplate(w, pr.arg, obj)
	case "custom-columns":
		var objs []any
		for _, p := range pods {
			objs = append(objs, apiPod(p))
		}
		return printers.CustomColumns(w, pr.cols, objs, pr.opts.NoHeaders || !header)
	}
	return nil
}

// sort orders pods by --sort-by, as kubectl's RuntimeSort: numbers as
// numbers, times as times, anything else as text; pods without the field first.
func (pr *podPrinter) sort(pods []*corev1.Pod) error {
	if pr.sortBy == "" {
		return nil
	}
	expr, _ := printers.RelaxedJSONPath(pr.sortBy)
	j := jsonpath.New("sort").AllowMissingKeys(true)
	if err := j.Parse(expr); err != nil {
		return err
	}
	keys := map[*corev1.Pod]any{}
	for _, p := range pods {
		data, _ := json.Marshal(apiPod(p))
		var obj any
		_ = json.Unmarshal(data, &obj)
		res, err := j.FindResults(obj)
		if err != nil {
			return usageError("--sort-by %q: %v", pr.sortBy, err)
		}
		if len(res) > 0 && len(res[0]) > 0 {
			keys[p] = res[0][0].Interface()
		}
	}
	less := func(a, b any) bool {
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		if fa, ok := a.(float64); ok {
			if fb, ok := b.(float64); ok {
				return fa < fb
			}
		}
		sa, sb := fmt.Sprint(a), fmt.Sprint(b)
		if ta, err := time.Parse(time.RFC3339, sa); err == nil {
			if tb, err := time.Parse(time.RFC3339, sb); err == nil {
				return ta.Before(tb)
			}
		}
		return sa < sb
	}
	sort.SliceStable(pods, func(i, k int) bool { return less(keys[pods[i]], keys[pods[k]]) })
	return nil
}

// getKinds is `get TYPE1,TYPE2... [NAME...]`: the objects of each type,
// as kubectl prints several types: one table per type, names prefixed with
// their type, or one List.
func getKinds(c *cli.Context, words, names []string) error {
	if c.Bool("watch") || c.Bool("watch-only") {
		return usageError("get -w watches one type at a time")
	}
	objs, err := kindsObjects(c, words, names)
	if err != nil || len(objs) == 0 {
		return err
	}
	return getFiles(c, objs)
}

// kindsObjects are the objects of each type words names: those named, else
// all that -l selects in the namespace (or every one with -A); none is
// kubectl's "No resources found".
func kindsObjects(c *cli.Context, words, names []string) ([]fileObject, error) {
	l := layout(c)
	ns := namespace(c)
	allNS := c.Bool("all-namespaces")
	sel, err := parseSelectors(c)
	if err != nil {
		return nil, err
	}
	var objs []fileObject
	for _, w := range words {
		if isPodWord(w) {
			if len(names) > 0 {
				for _, n := range names {
					objs = append(objs, fileObject{kind: "Pod", namespace: ns, name: n})
				}
				continue
			}
			recs, _, err := selectPods(c, nil, allNS)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				objs = append(objs, fileObject{kind: "Pod", namespace: r.Pod.Namespace, name: r.Pod.Name})
			}
			continue
		}
		k, ok := store.KindFor(w)
		if !ok {
			return nil, failed("the server doesn't have a resource type %q", w)
		}
		scope := ns
		if k.ClusterScoped {
			scope = ""
		}
		if len(names) > 0 {
			for _, n := range names {
				objs = append(objs, fileObject{kind: k.Name, namespace: scope, name: n})
			}
			continue
		}
		if allNS {
			scope = ""
		}
		list, err := objectsFor(l, k, scope, sel.labels)
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			objs = append(objs, fileObject{kind: k.Name, namespace: t.namespace, name: t.name})
		}
	}
	if len(objs) == 0 {
		noResources(c)
	}
	return objs, nil
}
