package main

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podrun/podrun/store"
)

// selectorFlags are kubectl's -l and --field-selector.
func selectorFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "label selector (e.g. -l 'app=web,tier!=cache', 'env in (ci,dev)')"},
		&cli.StringFlag{Name: "field-selector", Usage: "field selector (e.g. status.phase=Running, metadata.name=web, spec.restartPolicy!=Always)"},
	}
}

// findPod looks a pod up by name. A name is a name: anything that is not a
// valid pod name (a DNS subdomain) matches no pod, so `podrun delete '*'`
// deletes nothing.
func findPod(l store.Layout, ns, name string) (*store.Record, error) {
	if len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, fmt.Errorf("pods %q %w in namespace %q", name, store.ErrNotFound, ns)
	}
	return store.FindPod(l, ns, name)
}

// podSelector is the parsed -l and --field-selector of a command.
type podSelector struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(c *cli.Context) (*podSelector, error) {
	s := &podSelector{labels: labels.Everything(), fields: fields.Everything()}
	if v := c.String("selector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, usageError("-l %q: %v", v, err)
		}
		s.labels = sel
	}
	if v := c.String("field-selector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			return nil, usageError("--field-selector %q: %v", v, err)
		}
		for _, r := range sel.Requirements() {
			if _, ok := podFieldValue(&corev1.Pod{}, r.Field); !ok {
				return nil, usageError("--field-selector: field label not supported for pods: %s", r.Field)
			}
		}
		s.fields = sel
	}
	return s, nil
}

// empty reports whether no selector was given.
func (s *podSelector) empty() bool { return s.labels.Empty() && s.fields.Empty() }

func (s *podSelector) matches(pod *corev1.Pod) bool {
	if !s.labels.Matches(labels.Set(pod.Labels)) {
		return false
	}
	return s.fields.Matches(podFields{pod})
}

// podFields are the fields the API server lets a pod be selected by
// (pkg/registry/core/pod.ToSelectableFields).
type podFields struct{ pod *corev1.Pod }

func (f podFields) Has(field string) bool {
	_, ok := podFieldValue(f.pod, field)
	return ok
}

func (f podFields) Get(field string) string {
	v, _ := podFieldValue(f.pod, field)
	return v
}

func podFieldValue(p *corev1.Pod, field string) (string, bool) {
	switch field {
	case "metadata.name":
		return p.Name, true
	case "metadata.namespace":
		return p.Namespace, true
	case "spec.nodeName":
		return p.Spec.NodeName, true
	case "spec.restartPolicy":
		return string(p.Spec.RestartPolicy), true
	case "spec.schedulerName":
		return p.Spec.SchedulerName, true
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, true
	case "spec.hostNetwork":
		return strconv.FormatBool(p.Spec.HostNetwork), true
	case "status.phase":
		return string(p.Status.Phase), true
	case "status.podIP":
		return p.Status.PodIP, true
	case "status.nominatedNodeName":
		return p.Status.NominatedNodeName, true
	}
	return "", false
}

// selectPods finds the pods a command names: NAMEs, or every pod of the
// namespace (of all namespaces with -A) that the selectors match. With names,
// selectors filter them too, as kubectl does.
func selectPods(c *cli.Context, names []string, allNamespaces bool) ([]*store.Record, []error, error) {
	sel, err := parseSelectors(c)
	if err != nil {
		return nil, nil, err
	}
	l := layout(c)
	var out []*store.Record
	var notFound []error
	if len(names) > 0 {
		for _, n := range names {
			rec, err := findPod(l, namespace(c), n)
			if err != nil {
				notFound = append(notFound, err)
				continue
			}
			if sel.matches(rec.View()) {
				out = append(out, rec)
			}
		}
		return out, notFound, nil
	}
	ns := namespace(c)
	if allNamespaces {
		ns = ""
	}
	recs, err := store.ListPods(l, ns)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range recs {
		if sel.matches(r.View()) {
			out = append(out, r)
		}
	}
	return out, nil, nil
}
