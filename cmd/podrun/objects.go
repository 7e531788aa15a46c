package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

// getObjects is `get configmaps|secrets [NAME...]`: kubectl's columns
// (NAME DATA AGE; NAME TYPE DATA AGE for secrets) and its -o formats.
func getObjects(c *cli.Context, k *store.Kind, names []string) error {
	if k == store.ServiceKind {
		return getServices(c, names)
	}
	l := layout(c)
	allNS := c.Bool("all-namespaces") && !k.ClusterScoped
	var objs []metav1.Object
	if k == store.ClaimKind {
		// Finish deleting claims a crash left Terminating with no pod.
		_ = store.ReleaseClaims(l, "")
	}
	if k == store.PriorityClassKind {
		// The system classes every cluster has, and the stored ones.
		classes := l.PriorityClasses()
		for _, pc := range classes {
			if len(names) == 0 || slices.Contains(names, pc.Name) {
				objs = append(objs, pc)
			}
		}
		for _, n := range names {
			if !slices.ContainsFunc(classes, func(pc *schedulingv1.PriorityClass) bool { return pc.Name == n }) {
				return failed("%s %q not found", k.GroupResource(), n)
			}
		}
	} else if k == store.NamespaceKind {
		for _, ns := range namespaces(l) {
			if len(names) == 0 || slices.Contains(names, ns.Name) {
				objs = append(objs, ns)
			}
		}
		for _, n := range names {
			if _, err := getNamespace(l, n); err != nil {
				return failed("%v", err)
			}
		}
	} else if len(names) == 0 {
		ns := namespace(c)
		if allNS {
			ns = ""
		}
		list, err := l.List(k, ns)
		if err != nil {
			return err
		}
		for _, o := range list {
			objs = append(objs, o)
		}
	} else {
		for _, n := range names {
			o, err := l.Get(k, namespace(c), n)
			if err != nil {
				return failed("%v", err)
			}
			objs = append(objs, o)
		}
	}
	kind := strings.ToLower(k.Name)
	switch out := c.String("output"); out {
	case "", "wide":
		if len(objs) == 0 {
			if allNS || k.ClusterScoped {
				fmt.Fprintln(os.Stderr, "No resources found")
			} else {
				fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", namespace(c))
			}
			return nil
		}
		if controllers.KindOf(k) != nil {
			return printWorkloadTable(objs, out == "wide", allNS, "", time.Now())
		}
		var rows []tableRow
		for _, o := range objs {
			rows = append(rows, tableRow{o.GetNamespace(), objectRow(o, time.Now()), o.GetLabels()})
		}
		return getTable.print(objectHeader(k), rows, allNS)
	default:
		if k.Group != "" {
			kind = k.Resource()
		}
		return printItems(c, out, kind, objs, func(o metav1.Object) any { return apiObject(k, o) }, len(names))
	}
}

// printTemplate prints items with kubectl's template printers (-o
// jsonpath, go-template, custom-columns and their -file forms) over their
// JSON form: a List, or the one object when one was named.
func printTemplate(c *cli.Context, out string, items []any, single bool) error {
	format, arg, _ := strings.Cut(out, "=")
	if strings.HasSuffix(format, "-file") {
		data, err := os.ReadFile(arg)
		if err != nil {
			return usageError("-o %s: %v", out, err)
		}
		format, arg = strings.TrimSuffix(format, "-file"), strings.TrimSpace(string(data))
	}
	var obj any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
	if single {
		obj = items[0]
	}
	var err error
	switch format {
	case "jsonpath":
		err = printers.JSONPath(os.Stdout, arg, obj)
	case "go-template", "template":
		err = printers.GoTemplate(os.Stdout, arg, obj)
	case "custom-columns":
		var cols []printers.Column
		if cols, err = printers.ParseCustomColumns(arg); err != nil {
			return usageError("%v", err)
		}
		err = printers.CustomColumns(os.Stdout, cols, items, c.Bool("no-headers"))
	default:
		return usageError("--output %q: want wide, json, yaml, name, jsonpath=…, go-template=… or custom-columns=…", out)
	}
	if err != nil {
		return failed("%v", err)
	}
	return nil
}

// objectRow is kubectl's row for a ConfigMap (NAME DATA AGE) or a Secret
// (NAME TYPE DATA AGE), as its printConfigMap and printSecret.
func objectRow(o metav1.Object, now time.Time) []string {
	age := printers.Since(o.GetCreationTimestamp(), now)
	switch v := o.(type) {
	case *corev1.PersistentVolumeClaim:
		return claimRow(v, now)
	case *corev1.Namespace:
		return namespaceRow(v, now)
	case *appsv1.ControllerRevision:
		// printControllerRevision: CONTROLLER is <resource>.<group>/<name>.
		controller := "<none>"
		if ref := metav1.GetControllerOf(v); ref != nil {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			controller = strings.ToLower(ref.Kind) + "." + gv.Group + "/" + ref.Name
		}
		return []string{v.Name, controller, fmt.Sprint(v.Revision), age}
	case *schedulingv1.PriorityClass:
		// kubectl's printPriorityClass.
		policy := ""
		if v.PreemptionPolicy != nil {
			policy = string(*v.PreemptionPolicy)
		}
		return []string{v.Name, fmt.Sprint(v.Value), fmt.Sprint(v.GlobalDefault), age, policy}
	case *corev1.ConfigMap:
		return []string{v.Name, fmt.Sprint(len(v.Data) + len(v.BinaryData)), age}
	case *corev1.Secret:
		keys := map[string]bool{}
		for k := range v.Data {
			keys[k] = true
		}
		for k := range v.StringData {
			keys[k] = true
		}
		typ := v.Type
		if typ == "" {
			typ = corev1.SecretTypeOpaque
		}
		return []string{v.Name, string(typ), fmt.Sprint(len(keys)), age}
	}
	return []string{o.GetName(), "", ""}
}

func apiObject(k *store.Kind, o metav1.Object) any {
	switch v := o.(type) {
	case *corev1.ConfigMap:
		out := v.DeepCopy()
		out.APIVersion, out.Kind = "v1", k.Name
		return out
	case *corev1.Secret:
		out := v.DeepCopy()
		out.APIVersion, out.Kind = "v1", k.Name
		return out
	case *corev1.PersistentVolumeClaim:
		out := v.DeepCopy()
		out.APIVersion, out.Kind = "v1", k.Name
		return out
	case *corev1.Namespace:
		out := v.DeepCopy()
		out.APIVersion, out.Kind = "v1", k.Name
		return out
	}
	if ro, ok := o.(runtime.Object); ok {
		out := ro.DeepCopyObject()
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Name})
		return out
	}
	return o
}
