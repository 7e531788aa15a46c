package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// diffCommand is kubectl diff (pkg/cmd/diff): each object of the manifests
// as the store has it (LIVE) against what applying it would make of it
// (MERGED: the live object with the manifest's object merged in, as a
// strategic merge patch merges it, or the manifest's object, defaulted, for
// one that does not exist), written to two directories as
// GROUP.VERSION.KIND.NAMESPACE.NAME and compared by `diff -u -N` (or
// $KUBECTL_EXTERNAL_DIFF). Exit 0: no differences, 1: differences, >1: an error.
func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "show what applying the manifests would change",
		ArgsUsage: "-f FILE|DIR|- [-f ...] [-R] | -k DIR",
		Description: `Examples:
  # What apply would change (exit 1 when something would)
  podrun diff -f deployment.yaml

  # From stdin
  cat pod.yaml | podrun diff -f -`,
		Flags:  filenameFlags("the manifest"),
		Action: runDiff,
	}
}

func runDiff(c *cli.Context) error {
	if !hasInput(c) {
		return usageError("must specify --filename to diff")
	}
	files, err := inputFiles(c)
	if err != nil {
		return err
	}
	l := layout(c)
	live, err := os.MkdirTemp("", "LIVE-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(live)
	merged, err := os.MkdirTemp("", "MERGED-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(merged)
	err = walkManifests(c, files, loadInput, func(m *podspec.Manifest, ref podspec.ObjectRef, obj fileObject, pod *corev1.Pod) error {
		var desired any
		if pod != nil {
			desired = apiPod(pod)
		} else if desired = manifestObject(m, ref); desired == nil {
			return nil
		}
		if k, ok := store.KindFor(obj.kind); ok && k.ClusterScoped {
			obj.namespace = ""
		}
		if mo, ok := desired.(metav1.Object); ok && mo.GetNamespace() == "" && obj.namespace != "" {
			mo.SetNamespace(obj.namespace)
		}
		want, err := json.Marshal(desired)
		if err != nil {
			return err
		}
		name := diffFileName(obj)
		found, _ := fetchFileObjects(l, []fileObject{obj})
		if len(found) == 0 {
			return writeYAML(filepath.Join(merged, name), want)
		}
		current, err := json.Marshal(apiObjectOf(found[0]))
		if err != nil {
			return err
		}
		after, err := strategicpatch.StrategicMergePatch(current, want, reflect.New(reflect.TypeOf(desired).Elem()).Interface())
		if err != nil {
			return fmt.Errorf("merging %s into the live object: %w", name, err)
		}
		if err := writeYAML(filepath.Join(live, name), current); err != nil {
			return err
		}
		return writeYAML(filepath.Join(merged, name), after)
	})
	if err != nil {
		return err
	}
	// kubectl's DiffProgram: $KUBECTL_EXTERNAL_DIFF split on spaces, else diff -u -N.
	args := []string{"diff", "-u", "-N"}
	if ext := strings.Fields(os.Getenv("KUBECTL_EXTERNAL_DIFF")); len(ext) > 0 {
		args = ext
	}
	cmd := exec.Command(args[0], append(args[1:], live, merged)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return cli.Exit("", 1)
	case errors.As(err, &exit):
		return cli.Exit(fmt.Sprintf("error: %s exited with %d", args[0], exit.ExitCode()), exit.ExitCode())
	default:
		return failed("running %s: %v", args[0], err)
	}
}

// manifestObject is the decoded object of a manifest that ref names, with
// its kind and apiVersion set.
func manifestObject(m *podspec.Manifest, ref podspec.ObjectRef) any {
	match := func(o metav1.Object) bool {
		return o.GetName() == ref.Name && (ref.Namespace == "" || o.GetNamespace() == ref.Namespace || o.GetNamespace() == "")
	}
	k, _ := store.KindFor(ref.Kind)
	typed := func(o metav1.Object) any { return apiObject(k, o) }
	switch ref.Kind {
	case "ConfigMap":
		for _, o := range m.ConfigMaps {
			if match(o) {
				return typed(o)
			}
		}
	case "Secret":
		for _, o := range m.Secrets {
			if match(o) {
				return typed(o)
			}
		}
	case "Service":
		for _, o := range m.Services {
			if match(o) {
				s := o.DeepCopy()
				s.APIVersion, s.Kind = "v1", "Service"
				return s
			}
		}
	case "PersistentVolumeClaim":
		for _, o := range m.Claims {
			if match(o) {
				return typed(o)
			}
		}
	case "Namespace":
		for _, o := range m.Namespaces {
			if match(o) {
				return typed(o)
			}
		}
	case "PriorityClass":
		for _, o := range m.PriorityClasses {
			if match(o) {
				return typed(o)
			}
		}
	default:
		for _, w := range m.Workloads {
			if w.Kind == ref.Kind && match(w.Object) {
				return typed(w.Object)
			}
		}
	}
	return nil
}

// diffFileName is kubectl's: GROUP.VERSION.KIND.NAMESPACE.NAME (no group
// and no namespace for core and cluster-scoped objects).
func diffFileName(fo fileObject) string {
	var parts []string
	apiVersion, kind := "v1", fo.kind
	if k, ok := store.KindFor(fo.kind); ok {
		apiVersion, kind = k.APIVersion(), k.Name
	}
	parts = append(parts, strings.ReplaceAll(apiVersion, "/", "."), kind)
	if fo.namespace != "" {
		parts = append(parts, fo.namespace)
	}
	return strings.Join(append(parts, fo.name), ".")
}

// writeYAML writes an object's JSON as YAML.
func writeYAML(path string, data []byte) error {
	out, err := yaml.JSONToYAML(data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
