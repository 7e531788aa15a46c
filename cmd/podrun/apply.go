package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/runtime"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "create the pods of manifests and start them",
		ArgsUsage: "-f FILE|DIR|- [-f ...] | FILE",
		Description: `Examples:
  # Create the pods of a manifest and wait until they are Ready (or have finished)
  podrun apply -f pod.yaml --wait

  # Every manifest of a directory, and its subdirectories, in one step
  podrun apply -f manifests/ -R

  # From stdin; print what would be created, with the defaults, and change nothing
  cat pod.yaml | podrun apply -f - --dry-run=client -o yaml`,
		Flags: append(filenameFlags("the manifest"),
			&cli.BoolFlag{Name: "wait", Usage: "wait until every pod is Ready (restartPolicy Always) or has finished (Never, OnFailure); a container that fails first fails the wait (exit 1)"},
			&cli.BoolFlag{Name: "allow-restarts", Usage: "with --wait: wait through container restarts instead of failing at the first"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "how long --wait waits (0 = forever); then exit 124"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "with --wait: no progress lines"},
			&cli.BoolFlag{Name: "force", Usage: "replace a pod of the same name whose spec differs"},
			&cli.StringFlag{Name: "dry-run", Value: "none", Usage: "client or server: validate (server: also check images) and print, change nothing; none: apply"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "name, yaml or json: print the objects instead of \"pod/NAME created\""},
		),
		Action: runApply,
	}
}

// manifestArgs are the manifests named with -f, or the one positional FILE
// podrun has always taken.
func manifestArgs(c *cli.Context, verb string) ([]string, error) {
	files := c.StringSlice("filename")
	if len(files) == 0 && c.NArg() == 1 && verb == "apply" {
		files = []string{c.Args().First()}
	} else if c.NArg() > 0 && len(files) > 0 {
		return nil, usageError("%s takes manifests with -f, or names, not both", verb)
	}
	if len(files) == 0 {
		return nil, usageError("%s needs a manifest: podrun %s -f FILE", verb, verb)
	}
	return expandFilenames(files, c.Bool("recursive"))
}

func runApply(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageError("apply takes its manifests with -f: podrun apply -f FILE [-f FILE...]")
	}
	files, err := manifestArgs(c, "apply")
	if err != nil {
		return err
	}
	dryRun := c.String("dry-run")
	switch dryRun {
	case "none", "client", "server":
	case "true":
		dryRun = "client"
	case "false":
		dryRun = "none"
	default:
		return usageError("--dry-run=%q: want none, client or server", dryRun)
	}
	output := c.String("output")
	if output != "" && output != "name" && output != "yaml" && output != "json" {
		return usageError("--output %q: apply prints name, yaml or json", output)
	}
	plans, err := loadPlans(files, c.String("namespace"))
	if err != nil {
		return err
	}
	for _, p := range plans {
		for _, w := range append(append([]string(nil), p.Warnings...), runtime.Unhonoured(p.Pod)...) {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", w)
		}
	}
	l := layout(c)
	// Images that cannot be had (imagePullPolicy Never and not in the store)
	// are bad input: found before any pod is created.
	if dryRun != "client" {
		for _, p := range plans {
			if err := runtime.CheckImages(l, p); err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
		}
	}
	if dryRun != "none" {
		var pods []*corev1.Pod
		for _, p := range plans {
			pods = append(pods, p.Pod)
			if output == "" {
				fmt.Printf("pod/%s created (%s)\n", p.Pod.Name, map[string]string{"client": "dry run", "server": "server dry run"}[dryRun])
			}
		}
		return printApplied(output, pods)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	opts := runtime.ApplyOptions{Force: c.Bool("force"), Exe: exe, GlobalArgs: globalArgs(c)}
	var records []*runtime.Record
	var pods []*corev1.Pod
	for _, p := range plans {
		res, err := runtime.Apply(l, p, opts)
		if err != nil {
			if runtime.IsInputError(err) {
				return cli.Exit(err.Error(), exitUsage)
			}
			return err
		}
		if output == "" {
			fmt.Printf("pod/%s %s\n", res.Record.Pod.Name, res.Action)
		}
		records = append(records, res.Record)
		pods = append(pods, res.Record.Pod)
	}
	if err := printApplied(output, pods); err != nil {
		return err
	}
	if !c.Bool("wait") {
		return nil
	}
	o := waitOptions{timeout: c.Duration("timeout"), allowRestarts: c.Bool("allow-restarts"), progress: os.Stderr}
	if c.Bool("quiet") {
		o.progress = nil
	}
	return waitForPods(l, records, o)
}

// printApplied prints applied (or dry-run) objects as kubectl apply -o does.
func printApplied(output string, pods []*corev1.Pod) error {
	for i, p := range pods {
		switch output {
		case "name":
			fmt.Printf("pod/%s\n", p.Name)
		case "json":
			data, err := json.MarshalIndent(apiPod(p), "", "    ")
			if err != nil {
				return err
			}
			fmt.Printf("%s\n", data)
		case "yaml":
			data, err := yaml.Marshal(apiPod(p))
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Println("---")
			}
			os.Stdout.Write(data)
		}
	}
	return nil
}
