package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
)

// fileObject is one object a -f manifest names: its kind as podrun stores it
// (a Job is the pod podrun runs for it) and where it lives.
type fileObject struct {
	kind            string // Pod or a kind of store.Kinds
	namespace, name string
}

// fileObjects reads the -f manifests of get and describe and returns the
// objects they name, in file order, each once (kubectl's resource builder
// with FilenameParam: the namespace the file gives, else -n's, and -n naming
// another namespace than the file is an error).
func fileObjects(c *cli.Context) ([]fileObject, error) {
	files, err := inputFiles(c)
	if err != nil {
		return nil, err
	}
	return objectsIn(c, files, loadInput)
}

// objectsIn lists the objects of the manifests files names, each read with
// load, each once.
func objectsIn(c *cli.Context, files []string, load func(string) (*podspec.Manifest, error)) ([]fileObject, error) {
	seen := map[fileObject]bool{}
	var out []fileObject
	err := walkManifests(c, files, load, func(_ *podspec.Manifest, _ podspec.ObjectRef, fo fileObject, _ *corev1.Pod) error {
		if !seen[fo] {
			seen[fo] = true
			out = append(out, fo)
		}
		return nil
	})
	return out, err
}

// walkManifests reads each manifest files names with load and calls visit
// for each of its objects of a kind podrun keeps, in file order, with where
// it lives (the namespace its manifest gives it, else -n's; -n naming
// another is kubectl's error) and, for a Pod, the decoded pod.
func walkManifests(c *cli.Context, files []string, load func(string) (*podspec.Manifest, error), visit func(m *podspec.Manifest, ref podspec.ObjectRef, fo fileObject, pod *corev1.Pod) error) error {
	ns := namespace(c)
	for _, f := range files {
		m, err := load(f)
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		if c.String("namespace") != "" {
			if err := checkNamespaces(m, ns); err != nil {
				return err
			}
		}
		pod := 0 // m.Pods holds one pod per Pod, in order
		for _, o := range m.Objects {
			fo := fileObject{namespace: o.Namespace}
			if fo.namespace == "" {
				fo.namespace = ns
			}
			var p *corev1.Pod
			switch o.Kind {
			case "Pod":
				if pod >= len(m.Pods) {
					continue
				}
				p = m.Pods[pod]
				fo.kind, fo.name = "Pod", p.Name
				pod++
			default:
				k, ok := store.KindFor(o.Kind)
				if !ok {
					continue
				}
				fo.kind, fo.name = k.Name, o.Name
			}
			if err := visit(m, o, fo, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetched is a file's object as the store has it.
type fetched struct {
	fileObject
	pod *store.Record // kind Pod
	obj metav1.Object // other kinds
}

// fetchFileObjects looks every object up; the ones missing are returned as
// errors in kubectl's words, after the ones found.
func fetchFileObjects(l store.Layout, objs []fileObject) ([]fetched, []error) {
	var out []fetched
	var missing []error
	for _, fo := range objs {
		f := fetched{fileObject: fo}
		var err error
		if fo.kind == "Pod" {
			f.pod, err = findPod(l, fo.namespace, fo.name)
		} else {
			k, _ := store.KindFor(fo.kind)
			f.obj, err = l.Get(k, fo.namespace, fo.name)
		}
		if err != nil {
			missing = append(missing, err)
			continue
		}
		out = append(out, f)
	}
	return out, missing
}

// resourceName is kubectl's lower-case kind in "kind/name" (pod/web, service/db).
func resourceName(kind string) string {
	if k, ok := store.KindFor(kind); ok {
		return k.Resource() // deployment.apps/web
	}
	return strings.ToLower(kind)
}

// getFiles is `get -f FILE...` for files of any kinds, as kubectl prints
// them: in the table formats one table per kind in the order the kinds first
// appear, each object once, the names prefixed with their kind when more
// than one kind is shown, a blank line between the tables; -o name prints
// kind/name; -o json|yaml one object or a List of all. Objects missing from
// the store are errors after what was found (exit 1).
func getFiles(c *cli.Context, objs []fileObject) error {
	l := layout(c)
	found, missing := fetchFileObjects(l, objs)
	var kinds []string
	byKind := map[string][]fetched{}
	for _, f := range found {
		if _, ok := byKind[f.kind]; !ok {
			kinds = append(kinds, f.kind)
		}
		byKind[f.kind] = append(byKind[f.kind], f)
	}
	out := c.String("output")
	format, _, _ := strings.Cut(out, "=")
	now := time.Now()
	withKind := len(kinds) > 1
	switch format {
	case "", "wide":
		wide, allNS := format == "wide", c.Bool("all-namespaces")
		for i, kind := range kinds {
			if i > 0 && !c.Bool("no-headers") {
				fmt.Println()
			}
			prefix := ""
			if withKind {
				prefix = resourceName(kind) + "/"
			}
			if err := printKindTable(os.Stdout, l, kind, byKind[kind], prefix, wide, allNS, c.Bool("no-headers"), now); err != nil {
				return err
			}
		}
	case "name":
		for _, kind := range kinds {
			for _, f := range byKind[kind] {
				fmt.Printf("%s/%s\n", resourceName(kind), f.name)
			}
		}
	default:
		var items []any
		for _, kind := range kinds {
			for _, f := range byKind[kind] {
				items = append(items, apiObjectOf(f))
			}
		}
		var obj any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
		if len(objs) == 1 && len(items) == 1 {
			obj = items[0]
		}
		tmpl := strings.TrimPrefix(out, format+"=")
		var err error
		switch format {
		case "json", "yaml":
			err = printObject(format, items, len(objs) == 1)
		case "jsonpath":
			err = printers.JSONPath(os.Stdout, tmpl, obj)
		case "go-template", "template":
			err = printers.GoTemplate(os.Stdout, tmpl, obj)
		default:
			return usageError("get -f: --output %q: want wide, name, json, yaml, jsonpath=… or go-template=…", out)
		}
		if err != nil {
			return failed("%v", err)
		}
	}
	if len(missing) > 0 {
		return failed("%v", errors.Join(missing...))
	}
	return nil
}

// apiObjectOf is a fetched object as the API would return it.
func apiObjectOf(f fetched) any {
	if f.pod != nil {
		return apiPod(f.pod.View())
	}
	if s, ok := f.obj.(*corev1.Service); ok {
		o := s.DeepCopy()
		o.APIVersion, o.Kind = "v1", "Service"
		return o
	}
	k, _ := store.KindFor(f.kind)
	return apiObject(k, f.obj)
}

// printKindTable prints kubectl's table of one kind.
func printKindTable(w io.Writer, l store.Layout, kind string, list []fetched, prefix string, wide, allNS, noHeaders bool, now time.Time) error {
	switch kind {
	case "Pod":
		var pods []*corev1.Pod
		for _, f := range list {
			p := f.pod.View().DeepCopy()
			p.Name = prefix + p.Name
			pods = append(pods, p)
		}
		return printers.PrintTableWith(w, pods, printers.TableOptions{Wide: wide, AllNamespaces: allNS, NoHeaders: noHeaders}, now)
	case "Service":
		var svcs []*corev1.Service
		for _, f := range list {
			svcs = append(svcs, f.obj.(*corev1.Service))
		}
		return writeServiceTable(w, svcs, wide, allNS, noHeaders, prefix, now)
	}
	k, _ := store.KindFor(kind)
	if controllers.KindOf(k) != nil {
		var objs []metav1.Object
		for _, f := range list {
			objs = append(objs, f.obj)
		}
		return printWorkloadTable(objs, wide, allNS, prefix, now)
	}
	tw := printers.NewTabWriter(w)
	header := objectHeader(k)
	if allNS {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, f := range list {
		row := objectRow(f.obj, now)
		row[0] = prefix + row[0]
		if allNS {
			row = append([]string{f.namespace}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// describeFiles is `describe -f FILE...`: each object of the files in file
// order, as kubectl describes it, a blank line between them; the missing
// ones are errors at the end (exit 1).
func describeFiles(c *cli.Context, objs []fileObject) error {
	l := layout(c)
	var missing []error
	var pods []*corev1.Pod
	first := true
	for _, fo := range objs {
		found, miss := fetchFileObjects(l, []fileObject{fo})
		if len(miss) > 0 {
			missing = append(missing, miss...)
			continue
		}
		f := found[0]
		if !first {
			os.Stdout.WriteString("\n\n")
		}
		first = false
		switch o := f.obj.(type) {
		case nil:
			if err := describePod(l, f.pod); err != nil {
				return err
			}
		case *corev1.Service:
			if pods == nil {
				pods = podsOf(l)
			}
			printers.DescribeService(os.Stdout, o, services.EndpointSlices(o, pods))
		default:
			describeObject(l, o)
		}
	}
	if len(missing) > 0 {
		return failed("%v", errors.Join(missing...))
	}
	return nil
}

// podsIn says whether every object of the files is a pod of namespace ns,
// which the pod printer's path (every -o format, -w) handles.
func podsIn(objs []fileObject, ns string) bool {
	for _, o := range objs {
		if o.kind != "Pod" || o.namespace != ns {
			return false
		}
	}
	return true
}
