package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
)

// serviceApply is the Services of one apply, allocated and not yet stored:
// the allocation lock is held from the transaction's pre-check until they are
// stored (or the apply fails), so what was checked is what is stored.
type serviceApply struct {
	l      store.Layout
	set    store.ServiceSettings
	svcs   []*corev1.Service // with their ClusterIPs and node ports
	unlock func()
}

// allocateServices records the host's Service settings (on first use) and
// allocates the manifest's Services, as the API server allocates a ClusterIP
// and node ports on create and keeps them on update: part of apply's
// pre-check, so a Service that cannot get its address (range full, an
// explicit clusterIP taken or outside the range) fails the apply before
// anything is stored. Release the result with done.
func allocateServices(c *cli.Context, l store.Layout, svcs []*corev1.Service) (*serviceApply, error) {
	if p := resolvConfFlag(c); p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, usageError("--resolv-conf: %v", err)
		}
	}
	set, err := serviceowner.Settings(l, c.String("service-cidr"), resolvConfFlag(c))
	if err != nil {
		return nil, usageError("%v", err)
	}
	sa := &serviceApply{l: l, set: set, unlock: func() {}}
	if len(svcs) == 0 {
		return sa, nil
	}
	alloc, err := serviceowner.Allocator(set)
	if err != nil {
		return nil, err
	}
	if sa.unlock, err = serviceowner.AllocationLock(l); err != nil {
		return nil, err
	}
	// Each Service is allocated against the stored ones and those before it
	// in this apply, as if they were stored one by one.
	seen := l.Services("")
	for _, svc := range svcs {
		s := svc.DeepCopy()
		warnings, errs := alloc.Allocate(s, seen)
		for _, w := range warnings {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", w)
		}
		if len(errs) > 0 {
			sa.done()
			return nil, usageError("The Service %q is invalid: %v", s.Name, errs.ToAggregate())
		}
		replaced := false
		for i, o := range seen {
			if o.Namespace == s.Namespace && o.Name == s.Name {
				seen[i], replaced = s, true
			}
		}
		if !replaced {
			seen = append(seen, s)
		}
		sa.svcs = append(sa.svcs, s)
	}
	return sa, nil
}

// store stores the allocated Services, under the allocation lock.
func (sa *serviceApply) store(report func(resource, name, action string)) error {
	for _, s := range sa.svcs {
		action, err := sa.l.Put(store.ServiceKind, s)
		if err != nil {
			return err
		}
		report("service", s.Name, action)
	}
	return nil
}

// done releases the allocation lock.
func (sa *serviceApply) done() {
	sa.unlock()
	sa.unlock = func() {}
}

// isEndpoints says whether a get argument names Endpoints (kubectl's
// endpoints, ep).
func isEndpoints(word string) bool {
	return word == "endpoints" || word == "ep" || strings.EqualFold(word, "Endpoints")
}

// allObjects names every stored object of a kind (delete svc --all).
func allObjects(l store.Layout, k *store.Kind, ns string, allNS bool, sel labels.Selector) []objectName {
	if allNS || k.ClusterScoped {
		ns = ""
	}
	list, _ := l.List(k, ns)
	var out []objectName
	for _, o := range list {
		if sel == nil || sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, objectName{k, o.GetNamespace(), o.GetName()})
		}
	}
	return out
}

// podsOf returns the pods of the store as the EndpointSlice controller sees them.
func podsOf(l store.Layout) []*corev1.Pod {
	recs, _ := store.ListPods(l, "")
	var pods []*corev1.Pod
	for _, r := range recs {
		if r.Broken == nil {
			pods = append(pods, r.View())
		}
	}
	return pods
}

// listServices returns the named Services, or every Service of the scope.
func listServices(c *cli.Context, l store.Layout, names []string) ([]*corev1.Service, error) {
	if len(names) == 0 {
		ns := namespace(c)
		if c.Bool("all-namespaces") {
			ns = ""
		}
		return l.Services(ns), nil
	}
	var out []*corev1.Service
	for _, n := range names {
		o, err := l.Get(store.ServiceKind, namespace(c), n)
		if err != nil {
			return nil, failed("%v", err)
		}
		out = append(out, o.(*corev1.Service))
	}
	return out, nil
}

func noResources(c *cli.Context) {
	if c.Bool("all-namespaces") {
		fmt.Fprintln(os.Stderr, "No resources found")
	} else {
		fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", namespace(c))
	}
}

// getServices is `get svc|services|service [NAME...]` with kubectl's columns.
func getServices(c *cli.Context, names []string) error {
	l := layout(c)
	svcs, err := listServices(c, l, names)
	if err != nil {
		return err
	}
	switch out := c.String("output"); out {
	case "", "wide":
		if len(svcs) == 0 {
			noResources(c)
			return nil
		}
		return printServiceTable(svcs, out == "wide", c.Bool("all-namespaces"), "", time.Now())
	default:
		objs := make([]metav1.Object, len(svcs))
		for i, s := range svcs {
			objs[i] = s
		}
		return printItems(c, out, "service", objs, withKind("v1", "Service"), len(names))
	}
}

// getEndpoints is `get endpoints|ep [NAME...]`: the Endpoints the endpoints
// controller keeps for the Services with a selector.
func getEndpoints(c *cli.Context, names []string) error {
	l := layout(c)
	svcs, err := listServices(c, l, names)
	if err != nil {
		return err
	}
	pods := podsOf(l)
	var eps []*corev1.Endpoints
	for _, s := range svcs {
		if s.Spec.Selector == nil {
			if len(names) > 0 {
				return failed("endpoints %q not found in namespace %q", s.Name, s.Namespace)
			}
			continue // nobody keeps Endpoints for a Service without a selector
		}
		ep := services.LegacyEndpoints(s, pods)
		ep.CreationTimestamp = s.CreationTimestamp
		eps = append(eps, ep)
	}
	switch out := c.String("output"); out {
	case "", "wide":
		if len(eps) == 0 {
			noResources(c)
			return nil
		}
		allNS := c.Bool("all-namespaces")
		var rows []tableRow
		for _, ep := range eps {
			rows = append(rows, tableRow{ep.Namespace, printers.EndpointsRow(ep, time.Now()), ep.Labels})
		}
		return getTable.print([]string{"NAME", "ENDPOINTS", "AGE"}, rows, allNS)
	default:
		objs := make([]metav1.Object, len(eps))
		for i, ep := range eps {
			objs[i] = ep
		}
		return printItems(c, out, "endpoints", objs, withKind("v1", "Endpoints"), len(names))
	}
}

// isEndpointSlices says whether a get argument names EndpointSlices
// (kubectl's endpointslices, endpointslice, endpointslices.discovery.k8s.io).
func isEndpointSlices(word string) bool {
	base, _ := strings.CutSuffix(strings.ToLower(word), ".discovery.k8s.io")
	return base == "endpointslices" || base == "endpointslice"
}

// getEndpointSlices is `get endpointslices [NAME...] [-l SEL]`: the slices
// the EndpointSlice controller keeps for the Services of the scope
// (services.EndpointSlices over the pod records), with kubectl's columns.
func getEndpointSlices(c *cli.Context, names []string) error {
	l := layout(c)
	sel := labels.Everything()
	if v := c.String("selector"); v != "" {
		s, err := labels.Parse(v)
		if err != nil {
			return usageError("-l %q: %v", v, err)
		}
		sel = s
	}
	svcs, err := listServices(c, l, nil)
	if err != nil {
		return err
	}
	pods := podsOf(l)
	var all []*discoveryv1.EndpointSlice
	for _, s := range svcs {
		for _, sl := range services.EndpointSlices(s, pods) {
			sl.CreationTimestamp = s.CreationTimestamp
			if sel.Matches(labels.Set(sl.Labels)) {
				all = append(all, sl)
			}
		}
	}
	slices := all
	if len(names) > 0 {
		slices = nil
		for _, n := range names {
			found := false
			for _, sl := range all {
				if sl.Name == n {
					slices, found = append(slices, sl), true
				}
			}
			if !found {
				return failed("endpointslices.discovery.k8s.io %q not found", n)
			}
		}
	}
	switch out := c.String("output"); out {
	case "", "wide":
		if len(slices) == 0 {
			noResources(c)
			return nil
		}
		allNS := c.Bool("all-namespaces")
		var rows []tableRow
		for _, sl := range slices {
			rows = append(rows, tableRow{sl.Namespace, printers.EndpointSliceRow(sl, time.Now()), sl.Labels})
		}
		return getTable.print([]string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}, rows, allNS)
	case "name", "json", "yaml":
		objs := make([]metav1.Object, len(slices))
		for i, sl := range slices {
			objs[i] = sl
		}
		return printItems(c, out, "endpointslice.discovery.k8s.io", objs, func(o metav1.Object) any { return o }, len(names))
	default:
		return usageError("--output %q: want wide, json, yaml or name", out)
	}
}

// printItems is get's -o name, json, yaml and template outputs, as kubectl
// prints them: resource is what -o name prints before the slash, api gives
// an object's API form (apiVersion and kind set), and the JSON forms are a
// List unless one object was named (named is how many names were given).
func printItems(c *cli.Context, out, resource string, objs []metav1.Object, api func(metav1.Object) any, named int) error {
	if out == "name" {
		for _, o := range objs {
			fmt.Printf("%s/%s\n", resource, o.GetName())
		}
		return nil
	}
	items := []any{}
	for _, o := range objs {
		items = append(items, api(o))
	}
	if out == "json" || out == "yaml" {
		return printObject(out, items, named == 1)
	}
	return printTemplate(c, out, items, named == 1 && len(items) == 1)
}

// withKind is the API form of a typed object: a copy with apiVersion and
// kind set (the store keeps objects without them).
func withKind(apiVersion, kind string) func(metav1.Object) any {
	return func(o metav1.Object) any {
		out := o.(runtime.Object).DeepCopyObject()
		out.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		return out
	}
}

func printObject(format string, items []any, single bool) error {
	var obj any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if single && len(items) == 1 {
		obj = items[0]
	}
	if format == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "    ")
		return enc.Encode(obj)
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(data)
	return err
}

// describeServices is `describe svc NAME...`.
func describeServices(c *cli.Context, names []string) error {
	l := layout(c)
	svcs, err := listServices(c, l, names)
	if err != nil {
		return err
	}
	pods := podsOf(l)
	for i, s := range svcs {
		if i > 0 {
			os.Stdout.WriteString("\n\n")
		}
		printers.DescribeService(os.Stdout, s, services.EndpointSlices(s, pods))
	}
	return nil
}

// ensureOwner restarts the services owner after a crash, as any verb that
// reads the store does; a failure is only a warning.
func ensureOwner(c *cli.Context) {
	shim, err := shimPath()
	if err != nil {
		return
	}
	if err := serviceowner.Ensure(layout(c), shim, c.String("log-level")); err != nil {
		fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
	}
}

// getAll is kubectl's `get all` for the kinds podrun has: the pods, then the
// Services, each table's names prefixed with the kind ("pod/web",
// "service/db") and a blank line between the tables, as kubectl prints them.
func getAll(c *cli.Context) error {
	if out := c.String("output"); out != "" && out != "wide" {
		return usageError("get all: --output %q: podrun prints get all as tables (wide or the default)", out)
	}
	l := layout(c)
	wide, allNS := c.String("output") == "wide", c.Bool("all-namespaces")
	scope := namespace(c)
	if allNS {
		scope = ""
	}
	recs, err := store.ListPods(l, scope)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	for _, r := range recs {
		p := r.View().DeepCopy()
		p.Name = "pod/" + p.Name
		pods = append(pods, p)
	}
	svcs := l.Services(scope)
	// The workload kinds after the Services, in kubectl's order (daemonsets,
	// deployments, replicasets, statefulsets, cronjobs, jobs).
	var workloads [][]metav1.Object
	for _, k := range []*store.Kind{store.DaemonSetKind, store.DeploymentKind, store.ReplicaSetKind, store.StatefulSetKind, store.CronJobKind, store.JobKind} {
		objs, _ := l.List(k, scope)
		if len(objs) > 0 {
			workloads = append(workloads, asMeta(objs))
		}
	}
	if len(pods) == 0 && len(svcs) == 0 && len(workloads) == 0 {
		noResources(c)
		return nil
	}
	now := time.Now()
	tables := 0
	sep := func() {
		if tables > 0 {
			fmt.Println()
		}
		tables++
	}
	if len(pods) > 0 {
		sep()
		if err := printers.PrintTableWith(os.Stdout, pods, printers.TableOptions{Wide: wide, AllNamespaces: allNS}, now); err != nil {
			return err
		}
	}
	if len(svcs) > 0 {
		sep()
		if err := printServiceTable(svcs, wide, allNS, "service/", now); err != nil {
			return err
		}
	}
	for _, objs := range workloads {
		sep()
		k, _ := store.KindFor(reflectKind(objs[0]))
		if err := printWorkloadTable(objs, wide, allNS, k.Resource()+"/", now); err != nil {
			return err
		}
	}
	return nil
}

// printServiceTable prints kubectl's Service table; prefix goes before each
// name ("service/" in get all).
func printServiceTable(svcs []*corev1.Service, wide, allNS bool, prefix string, now time.Time) error {
	return writeServiceTable(os.Stdout, svcs, wide, allNS, false, prefix, now)
}

func writeServiceTable(out io.Writer, svcs []*corev1.Service, wide, allNS, noHeaders bool, prefix string, now time.Time) error {
	header := []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}
	if wide {
		header = append(header, "SELECTOR")
	}
	if allNS {
		header = append([]string{"NAMESPACE"}, header...)
	}
	header = append(header[:len(header):len(header)], getTable.header(nil)...)
	w := printers.NewTabWriter(out)
	if !noHeaders && !getTable.noHeaders {
		fmt.Fprintln(w, strings.Join(header, "\t"))
	}
	for _, s := range svcs {
		row := getTable.row(printers.ServiceRow(s, wide, now), s.Labels)
		row[0] = prefix + row[0]
		if allNS {
			row = append([]string{s.Namespace}, row...)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}
