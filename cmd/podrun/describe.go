package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a pod in detail, with its containers, resources and events",
		ArgsUsage: "[pod] NAME... | -l SELECTOR | -f FILE",
		Description: `Examples:
  # A pod's containers, states, resources, volumes and events
  podrun describe web

  # Every pod labelled app=web
  podrun describe pods -l app=web`,
		Flags: append(filenameFlags("the objects of this manifest"), selectorFlags()...),
		Action: func(c *cli.Context) error {
			if args := c.Args().Slice(); len(args) > 0 {
				if strings.Contains(args[0], ",") && !strings.Contains(args[0], "/") {
					objs, err := kindsObjects(c, strings.Split(args[0], ","), args[1:])
					if err != nil || len(objs) == 0 {
						return err
					}
					return describeFiles(c, objs)
				}
				if k, ok := store.KindFor(args[0]); ok && k == store.ServiceKind {
					return describeServices(c, args[1:])
				}
				if k, names, ok := kindSlashNames(args); ok && controllers.KindOf(k) != nil {
					ensureControllers(c)
					return describeWorkloads(c, k, names)
				}
				if k, names, ok := kindSlashNames(args); ok {
					return describeObjects(c, k, names)
				}
			}
			if err := checkResourceType(c.Args().Slice(), podExists(c)); err != nil {
				return err
			}
			names := podArgs(c.Args().Slice())
			if hasInput(c) {
				if len(names) > 0 {
					return usageError("describe takes -f or names, not both")
				}
				objs, err := fileObjects(c)
				if err != nil {
					return err
				}
				return describeFiles(c, objs)
			}
			sel, err := parseSelectors(c)
			if err != nil {
				return err
			}
			if len(names) == 0 && sel.empty() && c.NArg() == 0 {
				return usageError("describe needs a pod name, -l SELECTOR or -f FILE")
			}
			recs, notFound, err := selectPods(c, names, false)
			if err != nil {
				return err
			}
			if len(notFound) > 0 {
				return failed("%v", errors.Join(notFound...))
			}
			l := layout(c)
			for i, rec := range recs {
				if i > 0 {
					os.Stdout.WriteString("\n\n")
				}
				if err := describePod(l, rec); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// describePod prints one pod as kubectl describe does, with what podrun
// knows besides the object (effective resources, cgroup, events).
func describePod(l store.Layout, rec *store.Record) error {
	info, err := store.Describe(l, rec)
	if err != nil {
		return err
	}
	extra := printers.Extra{Requests: info.Requests, Limits: info.Limits, CgroupPath: info.CgroupPath}
	for _, e := range info.Events {
		extra.Events = append(extra.Events, printers.Event{Time: e.Time.Time, Type: e.Type, Reason: e.Reason, Object: e.Object, Message: e.Message})
	}
	printers.Describe(os.Stdout, rec.View(), extra, time.Now())
	return nil
}

// describeObjects is `describe KIND [NAME...]` for the store's other kinds
// (ConfigMap, Secret, PersistentVolumeClaim, Namespace): each named object,
// or every one of the namespace, as kubectl describes them.
func describeObjects(c *cli.Context, k *store.Kind, names []string) error {
	l := layout(c)
	ns := namespace(c)
	var objs []metav1.Object
	if k == store.PriorityClassKind {
		// The system classes every cluster has, and the stored ones.
		classes := l.PriorityClasses()
		var missing []error
		for _, n := range names {
			if !slices.ContainsFunc(classes, func(pc *schedulingv1.PriorityClass) bool { return pc.Name == n }) {
				missing = append(missing, fmt.Errorf("%s %q not found", k.GroupResource(), n))
			}
		}
		for _, pc := range classes {
			if len(names) == 0 || slices.Contains(names, pc.Name) {
				objs = append(objs, pc)
			}
		}
		return describeAll(l, objs, missing)
	}
	if len(names) == 0 {
		if k == store.NamespaceKind {
			for _, n := range namespaces(l) {
				objs = append(objs, n)
			}
		} else {
			list, err := l.List(k, ns)
			if err != nil {
				return err
			}
			for _, o := range list {
				objs = append(objs, o)
			}
		}
	}
	var missing []error
	for _, n := range names {
		var o metav1.Object
		var err error
		if k == store.NamespaceKind {
			o, err = getNamespace(l, n)
		} else {
			o, err = l.Get(k, ns, n)
		}
		if err != nil {
			missing = append(missing, err)
			continue
		}
		objs = append(objs, o)
	}
	return describeAll(l, objs, missing)
}

// describeAll describes objs one after another, as kubectl separates them,
// then fails with the names that were not found.
func describeAll(l store.Layout, objs []metav1.Object, missing []error) error {
	for i, o := range objs {
		if i > 0 {
			os.Stdout.WriteString("\n\n")
		}
		describeObject(l, o)
	}
	if len(missing) > 0 {
		return failed("%v", errors.Join(missing...))
	}
	return nil
}

// describeObject is kubectl's describe of one object of the store's kinds
// other than pods and Services.
func describeObject(l store.Layout, o metav1.Object) {
	switch v := o.(type) {
	case *corev1.ConfigMap:
		printers.DescribeConfigMap(os.Stdout, v)
	case *corev1.Secret:
		printers.DescribeSecret(os.Stdout, v)
	case *corev1.Namespace:
		printers.DescribeNamespace(os.Stdout, v)
	case *schedulingv1.PriorityClass:
		printers.DescribePriorityClass(os.Stdout, v)
	case *corev1.PersistentVolumeClaim:
		var usedBy []string
		for _, p := range podsOf(l) {
			if p.Namespace == v.Namespace && slices.Contains(store.PodClaims(p), v.Name) {
				usedBy = append(usedBy, p.Name)
			}
		}
		printers.DescribeClaim(os.Stdout, v, usedBy)
	default:
		describeWorkload(l, o)
	}
}
