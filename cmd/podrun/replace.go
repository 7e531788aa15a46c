package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
)

// replaceCommand is kubectl replace (pkg/cmd/replace): every object of the
// manifests must exist; each is applied as `apply -f` applies a changed
// object (one transaction, the same update rules: a running pod's images
// change in place, another change of its spec is refused), and reported
// "replaced". --force deletes and creates again what cannot be updated.
func replaceCommand() *cli.Command {
	return &cli.Command{
		Name:      "replace",
		Usage:     "replace objects by the manifests' (they must exist)",
		ArgsUsage: "-f FILE|DIR|- [-f ...] [-R]",
		Description: `Examples:
  # A pod's image, from its own manifest
  podrun get pod web -o yaml | sed 's/busybox:1.28/busybox:1.36/' | podrun replace -f -

  # A pod whose spec changed otherwise: deleted and created again
  podrun replace --force -f pod.yaml`,
		Flags: append(filenameFlags("the manifest"),
			&cli.BoolFlag{Name: "force", Usage: "delete and create again a pod that cannot be updated in place"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "name: print KIND/NAME only"},
		),
		Action: runReplace,
	}
}

func runReplace(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("replace takes its manifests with -f: podrun replace -f FILE")
	}
	if !hasInput(c) {
		return usageError("must specify --filename to replace")
	}
	if o := c.String("output"); o != "" && o != "name" {
		return usageError("--output %q: replace prints name", o)
	}
	files, err := inputFiles(c)
	if err != nil {
		return err
	}
	// Each input is read once (stdin cannot be read twice).
	read := map[string]*podspec.Manifest{}
	load := func(f string) (*podspec.Manifest, error) {
		if m, ok := read[f]; ok {
			return m, nil
		}
		m, err := loadInput(f)
		if err == nil {
			read[f] = m
		}
		return m, err
	}
	objs, err := objectsIn(c, files, load)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return failed("no objects passed to replace")
	}
	_, missing := fetchFileObjects(layout(c), objs)
	if len(missing) > 0 {
		var msgs []string
		for _, m := range missing {
			msgs = append(msgs, fmt.Sprintf("Error from server (NotFound): error when replacing: %v", m))
		}
		return failed("%s", strings.Join(msgs, "\n"))
	}
	name := c.String("output") == "name"
	report := func(resource, n, _ string) {
		if name {
			fmt.Printf("%s/%s\n", resource, n)
		} else {
			fmt.Printf("%s/%s replaced\n", resource, n)
		}
	}
	return applyManifests(c, files, applyHow{load: load, report: report, keepApplied: true})
}
