package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// patchCommand is kubectl patch (pkg/cmd/patch): the object as `get -o
// json` shows it is patched as the API server patches it (getPatchedJSON: a
// strategic merge patch over the kind's Go type, an RFC 7386 merge patch or
// an RFC 6902 JSON patch), then applied as `apply -f` applies a changed
// object, under the same update rules: a running pod's labels, annotations,
// images and activeDeadlineSeconds change in place, any other change of its
// spec is refused with the API server's message.
func patchCommand() *cli.Command {
	return &cli.Command{
		Name:      "patch",
		Usage:     "update fields of a pod or another object with a strategic merge, JSON merge or JSON patch",
		ArgsUsage: "TYPE NAME | TYPE/NAME  -p PATCH | --patch-file FILE",
		Description: `Examples:
  # Change a label of a pod (strategic merge patch, the default; JSON or YAML)
  podrun patch pod web -p '{"metadata":{"labels":{"tier":"backend"}}}'

  # Change a container's image: the container is restarted with it
  podrun patch pod web -p '{"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}'

  # Scale a Deployment with a JSON merge patch
  podrun patch deployment web --type merge -p 'spec: {replicas: 3}'

  # Give a running container more CPU and memory in place (the resize subresource)
  podrun patch pod web --subresource resize -p '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"400m","memory":"256Mi"}}}]}}'

  # Add an ephemeral container to a running pod (the ephemeralcontainers subresource, as podrun debug)
  podrun patch pod web --subresource ephemeralcontainers -p '{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox:1.28","command":["sleep","3600"],"targetContainerName":"app"}]}}'

  # A JSON patch (RFC 6902)
  podrun patch configmap cfg --type json -p '[{"op":"replace","path":"/data/level","value":"debug"}]'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "patch", Aliases: []string{"p"}, Usage: "the patch, JSON or YAML"},
			&cli.StringFlag{Name: "patch-file", Usage: "a file holding the patch"},
			&cli.StringFlag{Name: "type", Value: "strategic", Usage: "json, merge or strategic"},
			&cli.StringFlag{Name: "dry-run", Value: "none", Usage: "client or server: validate and print the patched object, change nothing"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "name, yaml or json: print the patched object"},
			&cli.StringFlag{Name: "subresource", Usage: "resize: change a pod's containers' cpu and memory in place (the pods/resize subresource); ephemeralcontainers: add ephemeral containers to a pod (as podrun debug); status and scale are not supported (podrun keeps the status; see scale)"},
		},
		Action: runPatch,
	}
}

// patchTypes are kubectl's --type values.
var patchTypes = []string{"json", "merge", "strategic"}

func runPatch(c *cli.Context) error {
	// PatchOptions.Validate's checks and messages.
	patch, file := c.String("patch"), c.String("patch-file")
	if patch != "" && file != "" {
		return usageError("cannot specify --patch and --patch-file together")
	}
	if patch == "" && file == "" {
		return usageError("must specify --patch or --patch-file containing the contents of the patch")
	}
	typ := strings.ToLower(c.String("type"))
	if !slices.Contains(patchTypes, typ) {
		return usageError("--type must be one of %v, not %q", patchTypes, c.String("type"))
	}
	resize, ephemeral, status := false, false, false
	switch sub := c.String("subresource"); sub {
	case "":
	case "status":
		status = true
	case "scale":
		return failed("--subresource scale is not supported: use podrun scale, or patch spec.replicas")
	case "resize":
		resize = true
	case "ephemeralcontainers":
		ephemeral = true
	default:
		return usageError("invalid subresource value: %q. Must be one of [status scale resize ephemeralcontainers]", sub)
	}
	dryRun := c.String("dry-run")
	switch dryRun {
	case "none", "client", "server":
	default:
		return usageError("--dry-run=%q: want none, client or server", dryRun)
	}
	output := c.String("output")
	if output != "" && output != "name" && output != "yaml" && output != "json" {
		return usageError("--output %q: patch prints name, yaml or json", output)
	}
	if c.NArg() == 0 {
		return failed("you must provide one or more resources by argument or filename.")
	}
	obj, err := oneTarget(c, "patch")
	if err != nil {
		return err
	}
	resource := resourceName(obj.kind)
	if resize && obj.kind != "Pod" {
		return failed("the server could not find the requested resource: %s has no resize subresource", resource)
	}
	if status && obj.kind != "Pod" {
		return failed("--subresource status: podrun writes a %s's status itself, as its controller does; it cannot be patched", obj.kind)
	}
	if ephemeral && obj.kind != "Pod" {
		return failed("the server could not find the requested resource: %s has no ephemeralcontainers subresource", resource)
	}
	var patchBytes []byte
	if file != "" {
		if patchBytes, err = os.ReadFile(file); err != nil {
			return failed("unable to read patch file: %v", err)
		}
	} else {
		patchBytes = []byte(patch)
	}
	if patchBytes, err = yaml.YAMLToJSON(patchBytes); err != nil {
		return usageError("unable to parse %q: %v", patch, err)
	}
	l := layout(c)
	found, missing := fetchFileObjects(l, []fileObject{obj})
	if len(missing) > 0 {
		return failed("%v", missing[0])
	}
	current := apiObjectOf(found[0])
	original, err := json.Marshal(current)
	if err != nil {
		return err
	}
	patched, err := patchedJSON(typ, original, patchBytes, current)
	if err != nil {
		return usageError("the patch does not apply to %s/%s: %v", resource, obj.name, err)
	}
	changed, err := jsonDiffers(original, patched)
	if err != nil {
		return err
	}
	word := "patched"
	if !changed {
		word = "patched (no change)"
	}
	if status {
		return patchPodStatus(l, obj, patched, dryRun, output, resource, word)
	}
	if ephemeral {
		// Only the ephemeral containers are taken (dropNonEphemeralContainerUpdates).
		stored, err := patchEphemeralContainers(l, found[0].pod.Pod, patched, dryRun != "none")
		if err != nil {
			return err
		}
		if !stored {
			word = "patched (no change)"
		}
		if dryRun != "none" {
			word += map[string]string{"client": " (dry run)", "server": " (server dry run)"}[dryRun]
		}
		if output == "" || dryRun != "none" {
			fmt.Printf("%s/%s %s\n", resource, obj.name, word)
			return nil
		}
		return printStored(l, output, resource, obj)
	}
	source := fmt.Sprintf("the patched %s/%s", resource, obj.name)
	load := func(string) (*podspec.Manifest, error) { return podspec.Load(patched, source) }
	if dryRun != "none" {
		// Validated as apply validates it; nothing is stored.
		if _, err := loadPlans(l, []string{source}, load, obj.namespace); err != nil {
			return err
		}
		if output == "" {
			fmt.Printf("%s/%s %s (%s)\n", resource, obj.name, word, map[string]string{"client": "dry run", "server": "server dry run"}[dryRun])
			return nil
		}
		return printPatched(output, resource, obj.name, patched, current)
	}
	if changed {
		stored, err := applyEdited(c, source, patched, resize)
		if err != nil {
			return err
		}
		if !stored {
			word = "patched (no change)" // what the store does not keep (a status field)
		}
	}
	if output == "" {
		fmt.Printf("%s/%s %s\n", resource, obj.name, word)
		return nil
	}
	return printStored(l, output, resource, obj)
}

// applyEdited applies an object's edited JSON (source names it in errors)
// in one transaction, as `apply -f` applies it: the same checks, the same
// update rules and messages; a pod keeps the record of its last apply, as
// kubectl's patches leave last-applied-configuration. It reports whether
// the store changed.
func applyEdited(c *cli.Context, source string, edited []byte, resize bool) (bool, error) {
	stored := true
	load := func(string) (*podspec.Manifest, error) { return podspec.Load(edited, source) }
	report := func(_, _, action string) {
		if action == "unchanged" {
			stored = false
		}
	}
	err := applyManifests(c, []string{source}, applyHow{load: load, report: report, keepApplied: true, resize: resize})
	return stored, err
}

// printStored prints the stored object as -o asks, as get prints it.
func printStored(l store.Layout, output, resource string, obj fileObject) error {
	if output == "name" {
		fmt.Printf("%s/%s\n", resource, obj.name)
		return nil
	}
	found, missing := fetchFileObjects(l, []fileObject{obj})
	if len(missing) > 0 {
		return failed("%v", missing[0])
	}
	return printObject(output, []any{apiObjectOf(found[0])}, true)
}

// oneTarget is the one object the arguments of verb (patch, expose) name:
// TYPE NAME or TYPE/NAME, in -n's namespace (none for a cluster-scoped kind).
func oneTarget(c *cli.Context, verb string) (fileObject, error) {
	args := c.Args().Slice()
	var kind, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		kind, name = args[0], args[1]
	case len(args) == 1:
		return fileObject{}, failed("resource(s) were provided, but no name was specified")
	default:
		return fileObject{}, usageError("%s takes one object: TYPE NAME or TYPE/NAME", verb)
	}
	if name == "" {
		return fileObject{}, failed("resource(s) were provided, but no name was specified")
	}
	if isPodWord(kind) {
		return fileObject{kind: "Pod", namespace: namespace(c), name: name}, nil
	}
	k, ok := store.KindFor(kind)
	if !ok {
		return fileObject{}, failed("the server doesn't have a resource type %q", kind)
	}
	ns := namespace(c)
	if k.ClusterScoped {
		ns = ""
	}
	return fileObject{kind: k.Name, namespace: ns, name: name}, nil
}

// patchedJSON is kubectl's getPatchedJSON: the patch applied to the
// object's JSON; a strategic merge patch follows the patch strategies of
// typed's Go type (containers merged by name, say).
func patchedJSON(typ string, original, patch []byte, typed any) ([]byte, error) {
	switch typ {
	case "json":
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, err
		}
		out, err := p.Apply(original)
		if err != nil && strings.Contains(err.Error(), "doc is missing key") {
			msg := err.Error()
			return nil, fmt.Errorf("Object to be patched is missing field (%s)", msg[strings.Index(msg, "key:")+5:])
		}
		return out, err
	case "merge":
		return jsonpatch.MergePatch(original, patch)
	default:
		return strategicpatch.StrategicMergePatch(original, patch, reflect.New(reflect.TypeOf(typed).Elem()).Interface())
	}
}

// jsonDiffers reports whether two JSON documents hold different values.
func jsonDiffers(a, b []byte) (bool, error) {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	return !reflect.DeepEqual(x, y), nil
}

// printPatched prints an object's JSON, not stored, as -o asks.
func printPatched(output, resource, name string, obj []byte, typed any) error {
	if output == "name" {
		fmt.Printf("%s/%s\n", resource, name)
		return nil
	}
	v := reflect.New(reflect.TypeOf(typed).Elem()).Interface()
	if err := json.Unmarshal(obj, v); err != nil {
		return err
	}
	return printObject(output, []any{v}, true)
}
