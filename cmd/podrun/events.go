package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/printers"
	"github.com/podrun/podrun/store"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "list the events of pods (LAST SEEN TYPE REASON OBJECT MESSAGE), oldest first",
		ArgsUsage: "[--for pod/NAME]",
		Description: `Examples:
  # Every event of the namespace
  podrun events

  # The events of one pod, only warnings
  podrun events --for pod/web --types=Warning`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "for", Usage: "only the events of this pod (pod/NAME or NAME)"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "events of every namespace"},
			&cli.StringSliceFlag{Name: "types", Usage: "only these types (Normal, Warning)"},
			&cli.BoolFlag{Name: "no-headers", Usage: "no header line"},
		},
		Action: runEvents,
	}
}

type podEvent struct {
	ns, pod string
	ev      store.Event
}

func runEvents(c *cli.Context) error {
	l := layout(c)
	var recs []*store.Record
	if f := c.String("for"); f != "" {
		names := podArgs([]string{f})
		rec, err := findPod(l, namespace(c), names[0])
		if err != nil {
			return failed("%v", err)
		}
		recs = []*store.Record{rec}
	} else {
		ns := namespace(c)
		if c.Bool("all-namespaces") {
			ns = ""
		}
		var err error
		if recs, err = store.ListPods(l, ns); err != nil {
			return err
		}
	}
	types := map[string]bool{}
	for _, t := range c.StringSlice("types") {
		for _, v := range strings.Split(t, ",") {
			types[strings.ToLower(v)] = true
		}
	}
	var all []podEvent
	for _, r := range recs {
		evs, err := store.ReadEvents(r.Paths)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if len(types) == 0 || types[strings.ToLower(e.Type)] {
				all = append(all, podEvent{r.Pod.Namespace, r.Pod.Name, e})
			}
		}
	}
	if len(all) == 0 {
		if c.Bool("all-namespaces") {
			fmt.Fprintln(os.Stderr, "No events found.")
		} else {
			fmt.Fprintf(os.Stderr, "No events found in %s namespace.\n", namespace(c))
		}
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].ev.Time.Before(&all[j].ev.Time) })
	tw := printers.NewTabWriter(os.Stdout)
	if !c.Bool("no-headers") {
		if c.Bool("all-namespaces") {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	}
	now := time.Now()
	for _, e := range all {
		if c.Bool("all-namespaces") {
			fmt.Fprintf(tw, "%s\t", e.ns)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\tpod/%s\t%s\n", printers.Since(metav1.NewTime(e.ev.Time.Time), now), e.ev.Type, e.ev.Reason, e.pod, e.ev.Message)
	}
	return tw.Flush()
}
