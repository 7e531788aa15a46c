//go:build !podrun_lean

package podspec

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader and to what runs on its
// result: nothing may panic, and every error must be an input error.
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob("testdata/*")
	if err != nil {
		f.Fatal(err)
	}
	examples, _ := filepath.Glob("../examples/*.yaml")
	if len(examples) == 0 {
		f.Fatal("no examples to seed from")
	}
	files = append(files, examples...)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "---", "null", "[]", "{}", "- a\n- b", "a: &x [*x]", "kind: Pod\napiVersion: v1\nmetadata: {name: x}\nspec: {containers: [{name: a, image: b}]}",
		"{\"kind\": \"Pod\"", "apiVersion: v1\nkind: List\nitems: [1, {kind: Job}]", "a: b: c", "\t- x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Load(data, "fuzz.yaml")
		if err != nil {
			if !IsInvalid(err) || err.Error() == "" {
				t.Fatalf("Load error %q is not an input error", err)
			}
			return
		}
		plans, err := m.Plans()
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("Plans error %q is not an input error", err)
			}
			return
		}
		for _, p := range plans {
			for i := range p.Pod.Spec.Containers {
				c := &p.Pod.Spec.Containers[i]
				env, err := p.PodEnv(c, testRuntime)
				if err != nil {
					continue
				}
				_, _ = p.ContainerEnv(c, []string{"PATH=/bin", "X"}, testRuntime)
				_, _ = CommandLine(c, []string{"/entry"}, []string{"cmd"}, env)
			}
		}
	})
}
