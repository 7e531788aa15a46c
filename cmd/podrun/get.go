package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "list pods (NAME READY STATUS RESTARTS AGE) or print one",
		ArgsUsage: "[pods|pod|po|configmaps|cm|secrets] [NAME...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "wide, json, yaml or name"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "pods of every namespace"},
		},
		Action: runGet,
	}
}

// podArgs drops kubectl's resource-type word (pods, pod, po, pod/NAME).
func podArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if i == 0 && (a == "pods" || a == "pod" || a == "po") {
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
	ensureOwner(c)
	if args := c.Args().Slice(); len(args) > 0 {
		if isEndpoints(args[0]) {
			return getEndpoints(c, args[1:])
		}
		if k, ok := store.KindFor(args[0]); ok {
			return getObjects(c, k, args[1:])
		}
	}
	l := layout(c)
	names := podArgs(c.Args().Slice())
	allNS := c.Bool("all-namespaces")
	var pods []*corev1.Pod
	if len(names) == 0 {
		ns := namespace(c)
		if allNS {
			ns = ""
		}
		recs, err := store.ListPods(l, ns)
		if err != nil {
			return err
		}
		for _, r := range recs {
			pods = append(pods, r.View())
		}
	} else {
		for _, n := range names {
			r, err := store.FindPod(l, namespace(c), n)
			if err != nil {
				return failed("%v", err)
			}
			pods = append(pods, r.View())
		}
	}
	out := c.String("output")
	switch out {
	case "", "wide":
		if len(pods) == 0 {
			if allNS {
				fmt.Fprintln(os.Stderr, "No resources found")
			} else {
				fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", namespace(c))
			}
			return nil
		}
		return printers.PrintTable(os.Stdout, pods, out == "wide", allNS, time.Now())
	case "name":
		for _, p := range pods {
			fmt.Printf("pod/%s\n", p.Name)
		}
		return nil
	case "json", "yaml":
		var obj any
		if len(names) == 1 {
			obj = apiPod(pods[0])
		} else {
			list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
			for _, p := range pods {
				data, _ := json.Marshal(apiPod(p))
				list.Items = append(list.Items, runtimeRaw(data))
			}
			obj = list
		}
		if out == "json" {
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
	return usageError("--output %q: want wide, json, yaml or name", out)
}
