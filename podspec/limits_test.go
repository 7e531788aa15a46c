//go:build !podrun_lean

package podspec

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hugePod is a Pod with n containers, about 64 bytes of YAML each.
func hugePod(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\nspec:\n  containers:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    image: busybox:1.28\n    command: [\"true\"]\n", i)
	}
	return []byte(b.String())
}

// TestLoadRefusesOversizedObject: a 38 MB manifest of 600 000 containers is
// refused as the API server refuses a body over 3 MiB, before it is parsed:
// quickly and in little memory.
func TestLoadRefusesOversizedObject(t *testing.T) {
	data := hugePod(600000)
	if len(data) < 30<<20 {
		t.Fatalf("test manifest is only %d bytes", len(data))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Load(data, "huge.yaml")
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 38 MB Pod was accepted")
	}
	want := fmt.Sprintf("huge.yaml:1: object is too large: %d bytes; the API server accepts at most 3145728 bytes (3 MiB) per object", len(data))
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(data)) {
		t.Errorf("refusing it allocated %d MB", alloc>>20)
	}
	if took > 5*time.Second {
		t.Errorf("refusing it took %s", took)
	}
	t.Logf("%d bytes refused in %s, %d MB allocated", len(data), took, (after.TotalAlloc-before.TotalAlloc)>>20)

	// The same in a JSON stream, and as the second document of a YAML file.
	js := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"a","image":"x","args":["` + strings.Repeat("a", MaxObjectBytes) + `"]}]}}`)
	if _, err := Load(js, "j.json"); err == nil || !strings.Contains(err.Error(), "object is too large") {
		t.Errorf("JSON: %v", err)
	}
	two := append([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\n---\n"), data...)
	if _, err := Load(two, "two.yaml"); err == nil || !strings.Contains(err.Error(), "two.yaml:6: object is too large") || !strings.Contains(err.Error(), "(document 2)") {
		t.Errorf("second document: %v", err)
	}
}

// TestLoadAcceptsObjectUnderLimit: a Pod just under 3 MiB is accepted.
func TestLoadAcceptsObjectUnderLimit(t *testing.T) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n  - name: a\n    image: busybox:1.28\n    args: [\"" +
		strings.Repeat("a", MaxObjectBytes-200) + "\"]\n"
	if _, err := Load([]byte(pod), "big.yaml"); err != nil {
		t.Errorf("a Pod of %d bytes: %v", len(pod), err)
	}
}

// TestRelativeHostPathRefused: a relative hostPath can never be mounted; it
// is refused at apply with its field path.
func TestRelativeHostPathRefused(t *testing.T) {
	m, err := Load([]byte(`apiVersion: v1
kind: Pod
metadata:
  name: rel
spec:
  containers:
  - name: a
    image: busybox:1.28
  volumes:
  - name: data
    hostPath:
      path: data/dir
`), "rel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Plans()
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[0].hostPath.path: Forbidden: not supported by podrun: a host path must be absolute") {
		t.Errorf("Plans: %v", err)
	}
}
