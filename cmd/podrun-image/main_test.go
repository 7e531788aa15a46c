//go:build podrun_image

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad command line is a usage error (exit 2, as the CLI's), said once.
func TestUsageErrors(t *testing.T) {
	root := t.TempDir()
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"--root", root, "pull"},
		{"--root", root, "pull", "a", "b"},
		{"--root", root, "pull", "--nope", "busybox"},
		{"--root", root, "load", "extra"},
		{"kustomize"},
		{"kustomize", "a", "b"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, os.Stdin, &out, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, os.Stdin, &out, &out); err != nil || !strings.HasPrefix(out.String(), "podrun-image ") {
		t.Errorf("version: %v %q", err, out.String())
	}
}

// A load of something that is not an archive fails (exit 1) with the file's
// name, and leaves no copy of stdin behind.
func TestLoadNotAnArchive(t *testing.T) {
	root := t.TempDir()
	junk := filepath.Join(t.TempDir(), "junk.tar")
	if err := os.WriteFile(junk, []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"--root", root, "load", "-i", junk}, os.Stdin, &out, &errOut)
	if err == nil || errors.Is(err, errUsage) {
		t.Fatalf("load of junk: %v, want a failure", err)
	}
	f, err := os.Open(junk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = run(context.Background(), []string{"--root", root, "load"}, f, &out, &errOut)
	if err == nil || errors.Is(err, errUsage) {
		t.Fatalf("load of junk on stdin: %v, want a failure", err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".load-stdin-*")); len(left) > 0 {
		t.Errorf("stdin's copy left behind: %v", left)
	}
}

// kustomize prints the kustomization's build as kubectl -k builds it; a
// build that fails is an error (exit 1) that says why.
func TestKustomize(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "namePrefix: ci-\ncommonLabels: {team: blue}\nresources: [pod.yaml]\n",
		"pod.yaml":           "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"kustomize", dir}, os.Stdin, &out, &errOut); err != nil {
		t.Fatalf("kustomize: %v (%s)", err, errOut.String())
	}
	for _, want := range []string{"name: ci-web", "team: blue", "kind: Pod"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the build lacks %q:\n%s", want, out.String())
		}
	}
	if err := os.Remove(filepath.Join(dir, "pod.yaml")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := run(context.Background(), []string{"kustomize", dir}, os.Stdin, &out, &errOut)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "pod.yaml") {
		t.Errorf("a kustomization naming a missing file: %v, want an error naming it", err)
	}
}
