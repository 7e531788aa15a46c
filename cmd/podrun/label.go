package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// labelCommand and annotateCommand are kubectl label and kubectl annotate
// (pkg/cmd/label, pkg/cmd/annotate) for pods and the store's kinds.
func labelCommand() *cli.Command {
	return metaCommand("label", "update the labels of pods or other objects", `Examples:
  # Add a label (an existing one is changed only with --overwrite)
  podrun label pods web tier=frontend

  # Remove a label
  podrun label pod/web tier-

  # Label every pod of the namespace
  podrun label pods --all status=ok`)
}

func annotateCommand() *cli.Command {
	return metaCommand("annotate", "update the annotations of pods or other objects", `Examples:
  # Add an annotation (an existing one is changed only with --overwrite)
  podrun annotate pods web description='my frontend'

  # Remove an annotation
  podrun annotate deployment/web description-`)
}

func metaCommand(name, usage, examples string) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		ArgsUsage:   "TYPE NAME... | TYPE/NAME... | TYPE -l SEL | TYPE --all  KEY=VALUE... KEY-...",
		Description: examples,
		Flags: append(selectorFlags()[:1],
			&cli.BoolFlag{Name: "overwrite", Usage: "change keys that already have a value"},
			&cli.BoolFlag{Name: "all", Usage: "every object of the type in the namespace"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "with --all or -l: in every namespace"},
		),
		Action: func(c *cli.Context) error { return runMeta(c, name == "label") },
	}
}

// metaChange is the parsed KEY=VALUE and KEY- arguments.
type metaChange struct {
	set    map[string]string
	remove []string
}

// parseMetaArgs splits kubectl's arguments into resources and pairs
// (cmdutil.GetResourcesAndPairs) and parses the pairs (label.go parseLabels,
// annotate.go parseAnnotations).
func parseMetaArgs(args []string, label bool) ([]string, metaChange, error) {
	what := "annotation"
	if label {
		what = "label"
	}
	var resources []string
	ch := metaChange{set: map[string]string{}}
	pairs := false
	for _, a := range args {
		isPair := strings.Contains(a, "=") || strings.HasSuffix(a, "-")
		switch {
		case isPair:
			pairs = true
		case pairs:
			return nil, ch, usageError("all resources must be specified before %s changes: %s", what, a)
		default:
			resources = append(resources, a)
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			if label {
				if strings.Contains(v, "=") {
					return nil, ch, usageError("invalid label spec: %v", a)
				}
				if errs := validation.IsValidLabelValue(v); len(errs) != 0 {
					return nil, ch, usageError("invalid label value: %q: %s", a, strings.Join(errs, ";"))
				}
			}
			if errs := validation.IsQualifiedName(k); len(errs) != 0 {
				return nil, ch, usageError("invalid %s key %q: %s", what, k, strings.Join(errs, ";"))
			}
			ch.set[k] = v
		} else {
			ch.remove = append(ch.remove, strings.TrimSuffix(a, "-"))
		}
	}
	for _, r := range ch.remove {
		if _, ok := ch.set[r]; ok {
			if label {
				return nil, ch, usageError("can not both modify and remove a label in the same command")
			}
			return nil, ch, usageError("can not both modify and remove the following annotation(s) in the same command: %s", r)
		}
	}
	if len(ch.set) == 0 && len(ch.remove) == 0 {
		return nil, ch, usageError("at least one %s update is required", what)
	}
	return resources, ch, nil
}

// apply makes the change on one object's map (labelFunc, annotateFunc):
// without overwrite a key that has another value is an error; it says what
// changed, as kubectl label's message (labeled, unlabeled, modified, not
// labeled).
func (ch metaChange) apply(m map[string]string, overwrite, label bool) (map[string]string, string, error) {
	if !overwrite {
		var bad []string
		keys := make([]string, 0, len(ch.set))
		for k := range ch.set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if cur, ok := m[k]; ok && cur != ch.set[k] {
				bad = append(bad, fmt.Sprintf("'%s' already has a value (%s)", k, cur))
			}
		}
		if len(bad) > 0 {
			if label {
				// validateNoOverwrites: one error a key, aggregated.
				for i := range bad {
					bad[i] += ", and --overwrite is false"
				}
				if len(bad) == 1 {
					return nil, "", errors.New(bad[0])
				}
				return nil, "", errors.New("[" + strings.Join(bad, ", ") + "]")
			}
			return nil, "", fmt.Errorf("--overwrite is false but found the following declared annotation(s): %s", strings.Join(bad, "; "))
		}
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	added, removed := 0, 0
	for k, v := range ch.set {
		if cur, ok := out[k]; !ok || cur != v {
			out[k] = v
			added++
		}
	}
	for _, k := range ch.remove {
		if _, ok := out[k]; ok {
			delete(out, k)
			removed++
		}
	}
	if len(out) == 0 {
		out = nil
	}
	if !label {
		return out, "annotated", nil
	}
	// updateDataChangeMsg.
	switch {
	case added > 0 && removed > 0:
		return out, "modified", nil
	case added > 0:
		return out, "labeled", nil
	case removed > 0:
		return out, "unlabeled", nil
	}
	return out, "not labeled", nil
}

func runMeta(c *cli.Context, label bool) error {
	resources, ch, err := parseMetaArgs(c.Args().Slice(), label)
	if err != nil {
		return err
	}
	if len(resources) == 0 {
		return failed("one or more resources must be specified as <resource> <name> or <resource>/<name>")
	}
	if c.Bool("all") && c.String("selector") != "" {
		return failed("cannot set --all and --selector at the same time")
	}
	l := layout(c)
	ns := namespace(c)
	overwrite := c.Bool("overwrite")
	get := func(o metav1.Object) map[string]string {
		if label {
			return o.GetLabels()
		}
		return o.GetAnnotations()
	}
	set := func(o metav1.Object, m map[string]string) {
		if label {
			o.SetLabels(m)
		} else {
			o.SetAnnotations(m)
		}
	}
	var errs []error
	if first, _, _ := strings.Cut(resources[0], "/"); isPodWord(first) {
		var names []string
		for _, r := range resources {
			if strings.Contains(r, "/") {
				w, n, _ := strings.Cut(r, "/")
				if !isPodWord(w) {
					return usageError("label and annotate take one type at a time")
				}
				names = append(names, n)
			} else if r != resources[0] {
				names = append(names, r)
			}
		}
		var recs []*store.Record
		if len(names) == 0 {
			if !c.Bool("all") && c.String("selector") == "" {
				return failed("resource(s) were provided, but no name was specified")
			}
			var err error
			if recs, _, err = selectPods(c, nil, c.Bool("all-namespaces")); err != nil {
				return err
			}
		} else {
			for _, n := range names {
				rec, err := findPod(l, ns, n)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				recs = append(recs, rec)
			}
		}
		for _, rec := range recs {
			var msg string
			_, err := supervisor.UpdateMeta(l, rec.Pod.Namespace, rec.Pod.Name, func(p *corev1.Pod) error {
				m, what, err := ch.apply(get(p), overwrite, label)
				if err != nil {
					return err
				}
				msg = what
				set(p, m)
				return nil
			})
			if err != nil && !errors.Is(err, supervisor.ErrUnchanged) {
				errs = append(errs, err)
				continue
			}
			fmt.Printf("pod/%s %s\n", rec.Pod.Name, msg)
		}
	} else {
		k, names, ok := kindSlashNames(resources)
		if !ok {
			return failed("the server doesn't have a resource type %q", resources[0])
		}
		var targets []objectTarget
		for _, n := range names {
			targets = append(targets, objectTarget{k, ns, n})
		}
		if len(names) == 0 {
			if !c.Bool("all") && c.String("selector") == "" {
				return failed("resource(s) were provided, but no name was specified")
			}
			sel, err := parseSelectors(c)
			if err != nil {
				return err
			}
			scope := ns
			if c.Bool("all-namespaces") || k.ClusterScoped {
				scope = ""
			}
			list, err := objectsFor(l, k, scope, sel.labels)
			if err != nil {
				return err
			}
			targets = list
		}
		for _, t := range targets {
			var msg string
			err := l.Update(k, t.namespace, t.name, func(o store.Object) error {
				m, what, err := ch.apply(get(o), overwrite, label)
				if err != nil {
					return err
				}
				msg = what
				set(o, m)
				return nil
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Printf("%s/%s %s\n", k.Resource(), t.name, msg)
		}
	}
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}
