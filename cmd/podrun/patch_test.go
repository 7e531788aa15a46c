package main

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The three patch types over a pod's JSON, as the API server applies them.
func TestPatchedJSON(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Image: "busybox:1.28"}, {Name: "b", Image: "busybox:1.28"},
	}}}
	original, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ, patch string
		images     []string
	}{
		// Containers merge by name: b's image changes, a stays.
		{"strategic", `{"spec":{"containers":[{"name":"b","image":"busybox:ci"}]}}`, []string{"busybox:1.28", "busybox:ci"}},
		// A merge patch replaces the list.
		{"merge", `{"spec":{"containers":[{"name":"b","image":"busybox:ci"}]}}`, []string{"busybox:ci"}},
		{"json", `[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:ci"}]`, []string{"busybox:ci", "busybox:1.28"}},
	} {
		out, err := patchedJSON(c.typ, original, []byte(c.patch), pod)
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		var got corev1.Pod
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		var images []string
		for _, ct := range got.Spec.Containers {
			images = append(images, ct.Image)
		}
		if len(images) != len(c.images) || images[0] != c.images[0] || images[len(images)-1] != c.images[len(c.images)-1] {
			t.Errorf("%s patch: images %v, want %v", c.typ, images, c.images)
		}
	}
	if _, err := patchedJSON("json", original, []byte(`[{"op":"remove","path":"/metadata/labels/x"}]`), pod); err == nil {
		t.Error("a JSON patch removing a missing key applied")
	}
	if changed, err := jsonDiffers([]byte(`{"a":1,"b":[1,2]}`), []byte(`{"b":[1,2],"a":1}`)); err != nil || changed {
		t.Errorf("the same object in another key order differs: %v %v", changed, err)
	}
}
