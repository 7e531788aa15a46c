package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// manifestExtensions are the files `-f DIR` reads, as kubectl's
// FileExtensions (k8s.io/cli-runtime/pkg/resource: .json, .yaml, .yml).
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// filenameFlags are -f (repeatable: files, directories, - for stdin) and -R.
func filenameFlags(usage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "filename", Aliases: []string{"f"}, Usage: usage + " (repeatable; a directory reads its .yaml, .yml and .json files; - is stdin)"},
		&cli.BoolFlag{Name: "recursive", Aliases: []string{"R"}, Usage: "with -f DIR, read the directories below it too"},
		&cli.StringFlag{Name: "kustomize", Aliases: []string{"k"}, Usage: "a kustomization directory, built as kubectl -k builds it (not with -f)"},
	}
}

// kustomizeInput marks a kustomization directory among the inputs (a path
// never holds a NUL byte).
const kustomizeInput = "\x00kustomize:"

// inputFiles are the manifests of -f (expanded) or the kustomization of -k;
// kubectl takes one or the other.
func inputFiles(c *cli.Context) ([]string, error) {
	files := c.StringSlice("filename")
	if k := c.String("kustomize"); k != "" {
		if len(files) > 0 {
			return nil, usageError("only one of -f or -k can be specified")
		}
		if st, err := os.Stat(k); err != nil || !st.IsDir() {
			return nil, usageError("must build at directory: not a valid directory: %s", k)
		}
		return []string{kustomizeInput + k}, nil
	}
	return expandFilenames(files, c.Bool("recursive"))
}

// hasInput reports whether -f or -k was given.
func hasInput(c *cli.Context) bool {
	return len(c.StringSlice("filename")) > 0 || c.String("kustomize") != ""
}

// loadInput reads one input of inputFiles: a manifest file, stdin, or the
// output of a kustomization built with the kustomize library, as kubectl's
// -k does (krusty with the on-disk file system and kubectl's defaults). The
// build runs in podrun-image (its `kustomize`), which links the library, so
// that no other command pays for it.
func loadInput(f string) (*podspec.Manifest, error) {
	dir, ok := strings.CutPrefix(f, kustomizeInput)
	if !ok {
		return podspec.LoadFile(f)
	}
	helper, err := helperPath(imageName)
	if err != nil {
		return nil, fmt.Errorf("%s: kustomize: %w", dir, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helper, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	// The library's warnings (a deprecated field, say) are passed on, as
	// kubectl prints them; the helper's own error becomes this one.
	var msg string
	for _, line := range strings.SplitAfter(stderr.String(), "\n") {
		if m, ok := strings.CutPrefix(line, "error: "); ok && runErr != nil {
			msg = strings.TrimSpace(m)
			continue
		}
		fmt.Fprint(os.Stderr, line)
	}
	if runErr != nil {
		if msg == "" {
			msg = fmt.Sprintf("running %s: %v", helper, runErr)
		}
		return nil, fmt.Errorf("%s: kustomize: %s", dir, msg)
	}
	return podspec.Load(stdout.Bytes(), dir+" (kustomize output)")
}

// expandFilenames turns -f arguments into manifest files, in kubectl's order:
// each argument in turn, a directory's files in lexical order (walked with -R).
func expandFilenames(args []string, recursive bool) ([]string, error) {
	var files []string
	stdin := false
	for _, a := range args {
		if a == "-" {
			if stdin {
				return nil, usageError("-f - (stdin) can be given only once")
			}
			stdin = true
			files = append(files, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, usageError("the path %q does not exist", a)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != a && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if slices.Contains(manifestExtensions, strings.ToLower(filepath.Ext(p))) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, usageError("reading directory %s: %v", a, err)
		}
		if len(found) == 0 {
			return nil, usageError("error reading %s: recognized file extensions are %s", a, strings.Join(manifestExtensions, ", "))
		}
		files = append(files, found...)
	}
	return files, nil
}

// loadPlans reads and validates every manifest before anything is created:
// one bad object in any file and the whole command fails with every problem
// of every file (exit 2). ConfigMaps and Secrets of one file serve the pods
// of the others too, as on a cluster.
func loadPlans(l store.Layout, files []string, load func(string) (*podspec.Manifest, error), ns string) (*loaded, error) {
	var manifests []*podspec.Manifest
	var errs []error
	in := &loaded{}
	for _, f := range files {
		m, err := load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ns != "" {
			// -n naming another namespace than the manifest is an error (kubectl).
			if err := checkNamespaces(m, ns); err != nil {
				return nil, err
			}
			for _, p := range m.Pods {
				p.Namespace = ns
			}
			for _, cm := range m.ConfigMaps {
				cm.Namespace = ns
			}
			for _, s := range m.Secrets {
				s.Namespace = ns
			}
			for _, s := range m.Services {
				s.Namespace = ns
			}
			for _, w := range m.Workloads {
				w.Object.SetNamespace(ns)
			}
			for _, c := range m.Claims {
				c.Namespace = ns
			}
		}
		// The manifests' own ConfigMaps and Secrets are stored; their pods
		// also find those the store already has.
		in.configMaps = append(in.configMaps, m.ConfigMaps...)
		in.secrets = append(in.secrets, m.Secrets...)
		in.services = append(in.services, m.Services...)
		in.workloads = append(in.workloads, m.Workloads...)
		in.claims = append(in.claims, m.Claims...)
		in.namespaces = append(in.namespaces, m.Namespaces...)
		in.priorityClasses = append(in.priorityClasses, m.PriorityClasses...)
		manifests = append(manifests, m)
	}
	// The Priority admission resolves the pods' classes among the cluster's
	// and the manifests' own PriorityClasses (stored before the pods).
	classes := map[string]*schedulingv1.PriorityClass{}
	for _, pc := range l.PriorityClasses() {
		classes[pc.Name] = pc
	}
	for _, pc := range in.priorityClasses {
		classes[pc.Name] = pc
	}
	var classList []*schedulingv1.PriorityClass
	for _, pc := range classes {
		classList = append(classList, pc)
	}
	var forbidden []error
	requested := map[string]*podspec.PriorityFields{} // by namespace/name: the manifests' own
	for _, m := range manifests {
		for _, p := range m.Pods {
			requested[p.Namespace+"/"+p.Name] = podspec.PriorityFieldsOf(p)
			if err := podspec.AdmitPriority(p, classList); err != nil {
				forbidden = append(forbidden, err)
			}
		}
	}
	var plans []*podspec.Plan
	seen := map[string]string{}
	for _, m := range manifests {
		withStored(l, m)
		ps, err := m.Plans()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range ps {
			k := p.Pod.Namespace + "/" + p.Pod.Name
			p.Requested = requested[k]
			if prev, ok := seen[k]; ok {
				errs = append(errs, fmt.Errorf("%s: pod %s is already defined in %s", m.Source, k, prev))
			}
			seen[k] = m.Source
		}
		plans = append(plans, ps...)
	}
	if len(errs) > 0 {
		return nil, cli.Exit(errors.Join(errs...).Error(), exitUsage)
	}
	if len(forbidden) > 0 {
		return nil, failed("%v", errors.Join(forbidden...))
	}
	// A pod finds the ConfigMaps and Secrets of every file applied with it.
	for _, p := range plans {
		for _, cm := range in.configMaps {
			if _, ok := p.ConfigMaps[cm.Name]; !ok && cm.Namespace == p.Pod.Namespace {
				p.ConfigMaps[cm.Name] = cm
			}
		}
		for _, s := range in.secrets {
			if _, ok := p.Secrets[s.Name]; !ok && s.Namespace == p.Pod.Namespace {
				p.Secrets[s.Name] = s
			}
		}
	}
	in.plans = plans
	return in, nil
}

// loaded is what apply read from its files: the pods' plans and the objects
// that are stored beside them.
type loaded struct {
	plans      []*podspec.Plan
	configMaps []*corev1.ConfigMap
	secrets    []*corev1.Secret
	services   []*corev1.Service
	workloads  []*podspec.Workload
	claims     []*corev1.PersistentVolumeClaim
	namespaces []*corev1.Namespace
	// priorityClasses are stored with the namespaces, before the pods.
	priorityClasses []*schedulingv1.PriorityClass
}
