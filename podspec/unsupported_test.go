//go:build !podrun_lean

package podspec

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var update = flag.Bool("update", false, "rewrite the Unsupported table in the project README.md")

// expandPattern turns a pattern into its concrete paths, with index 0 for [*].
func expandPattern(pattern string) []string {
	paths := []string{""}
	for _, seg := range splitPattern(pattern) {
		suffix := ""
		if s, ok := strings.CutSuffix(seg, "[*]"); ok {
			seg, suffix = s, "[0]"
		}
		names := []string{seg}
		if strings.HasPrefix(seg, "{") {
			names = strings.Split(strings.Trim(seg, "{}"), ",")
		}
		var next []string
		for _, p := range paths {
			for _, n := range names {
				if p != "" {
					n = "." + n
				}
				next = append(next, p+n+suffix)
			}
		}
		paths = next
	}
	return paths
}

// setPath allocates what lies on path in obj and sets the field at its end.
func setPath(t *testing.T, v reflect.Value, path string, set func(reflect.Value)) {
	t.Helper()
	for _, seg := range parseFieldPath(path) {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if seg.isIndex {
			if v.Len() == 0 {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			}
			v = v.Index(0)
			continue
		}
		f, ok := fieldByJSONName(v, seg.key)
		if !ok {
			t.Fatalf("no field %q in %s", seg.key, v.Type())
		}
		v = f
	}
	set(v)
}

// trigger sets a value that Unsupported rejects: the When value, or anything.
func trigger(when string) func(reflect.Value) {
	return func(v reflect.Value) {
		if v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
			if when == "" {
				return
			}
			v = v.Elem()
		}
		switch {
		case when == "hugepages-*":
			v.Set(reflect.ValueOf(corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}))
		case when == "true" || when == "false":
			v.SetBool(when == "true")
		case when == "> 1":
			v.SetInt(2)
		case when == "relative":
			v.SetString("data")
		case when != "":
			v.SetString(when)
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case v.Kind() == reflect.Map:
			v.Set(reflect.MakeMap(v.Type()))
			v.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		case v.Kind() == reflect.String:
			v.SetString("x")
		default:
			panic(fmt.Sprintf("no trigger for %s", v.Type()))
		}
	}
}

// allowed sets the value next to the rejected one, which podrun accepts.
func allowed(when string) func(reflect.Value) {
	return func(v reflect.Value) {
		if v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
			v = v.Elem()
		}
		switch when {
		case "hugepages-*":
			v.Set(reflect.ValueOf(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
		case "true", "false":
			v.SetBool(when != "true")
		case "> 1":
			v.SetInt(1)
		case "relative":
			v.SetString("/data")
		default:
			v.SetString("linux-or-NonIndexed")
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, u := range Unsupported {
		for _, path := range expandPattern(u.Path) {
			t.Run(u.Kind+" "+path, func(t *testing.T) {
				check := func(set func(reflect.Value)) field.ErrorList {
					if u.Kind == "Job" {
						job := &batchv1.Job{}
						setPath(t, reflect.ValueOf(job).Elem(), path, set)
						return checkUnsupportedJob(job)
					}
					if u.Kind == "PersistentVolumeClaim" {
						c := &corev1.PersistentVolumeClaim{}
						setPath(t, reflect.ValueOf(c).Elem(), path, set)
						return checkUnsupported(u.Kind, reflect.ValueOf(c).Elem())
					}
					pod := basePod()
					setPath(t, reflect.ValueOf(pod).Elem(), path, set)
					return CheckUnsupported(pod)
				}
				errs := check(trigger(u.When))
				want := fmt.Sprintf("%s: Forbidden: not supported by podrun: %s", path, u.Reason)
				if len(errs) != 1 || errs[0].Error() != want {
					t.Errorf("errors = %v, want [%s]", errs, want)
				}
				if u.When != "" {
					if errs := check(allowed(u.When)); len(errs) != 0 {
						t.Errorf("the allowed value was rejected: %v", errs)
					}
				}
			})
		}
	}
}

func TestUnsupportedIgnoresEmptyLists(t *testing.T) {
	pod := basePod()
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{}
	pod.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
	if errs := CheckUnsupported(pod); len(errs) != 0 {
		t.Errorf("CheckUnsupported = %v, want none", errs)
	}
}

func TestReadmeUnsupportedTable(t *testing.T) {
	const begin, end = "<!-- BEGIN UNSUPPORTED (generated from podspec.Unsupported; go test ./podspec -run TestReadme -update) -->\n", "<!-- END UNSUPPORTED -->"
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q and %q", begin, end)
	}
	table := UnsupportedMarkdown()
	if readme[i+len(begin):j] == table {
		return
	}
	if !*update {
		t.Fatal("README.md's table differs from Unsupported; run go test ./podspec -run TestReadme -update")
	}
	readme = readme[:i+len(begin)] + table + readme[j:]
	if err := os.WriteFile("../README.md", []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
}
