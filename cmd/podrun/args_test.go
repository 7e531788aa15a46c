package main

import (
	"slices"
	"testing"
)

func TestInterspersedFlags(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"podrun", "logs", "myapp", "-c", "init-mydb"}, []string{"podrun", "logs", "-c", "init-mydb", "myapp"}},
		{[]string{"podrun", "--root", "/r", "logs", "myapp", "-f", "-c", "x"}, []string{"podrun", "--root", "/r", "logs", "-f", "-c", "x", "myapp"}},
		{[]string{"podrun", "exec", "p", "-c", "app", "--", "sh", "-c", "id"}, []string{"podrun", "exec", "-c", "app", "p", "--", "sh", "-c", "id"}},
		{[]string{"podrun", "get", "pods", "-o", "wide"}, []string{"podrun", "get", "-o", "wide", "pods"}},
		{[]string{"podrun", "apply", "pod.yaml", "--wait", "--timeout=1m"}, []string{"podrun", "apply", "--wait", "--timeout=1m", "pod.yaml"}},
		{[]string{"podrun", "image", "prune"}, []string{"podrun", "image", "prune"}},
		{[]string{"podrun"}, []string{"podrun"}},
		// Global flags after the verb move in front of it.
		{[]string{"podrun", "get", "pods", "-n", "ci", "--root=/r"}, []string{"podrun", "-n", "ci", "--root=/r", "get", "pods"}},
		{[]string{"podrun", "apply", "-f", "a.yaml", "-f", "b.yaml", "--dry-run", "-o", "yaml"}, []string{"podrun", "apply", "-f", "a.yaml", "-f", "b.yaml", "--dry-run=client", "-o", "yaml"}},
		{[]string{"podrun", "apply", "-f", "-", "-n", "x"}, []string{"podrun", "-n", "x", "apply", "-f", "-"}},
	} {
		if got := interspersed(app, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		typed string
		names []string
		want  []string
	}{
		{"wiat", []string{"wait", "get", "logs"}, []string{"wait"}},
		{"desc", []string{"describe", "delete"}, []string{"describe"}},
		{"xyzzy", []string{"wait", "get"}, nil},
		{"x", []string{"n", "o"}, nil},
	} {
		if got := suggest(tc.typed, tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("suggest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestSplitJSONPathFor(t *testing.T) {
	for _, tc := range []struct{ in, expr, value string }{
		{"{.status.phase}=Running", "{.status.phase}", "Running"},
		{"{.metadata.labels.a=b}", "{.metadata.labels.a=b}", ""},
		{".status.phase=Succeeded", "{.status.phase}", "Succeeded"},
		{"{.status.conditions[?(@.type==\"Ready\")].status}=True", "{.status.conditions[?(@.type==\"Ready\")].status}", "True"},
	} {
		e, v, _, err := splitJSONPathFor(tc.in)
		if err != nil || e != tc.expr || v != tc.value {
			t.Errorf("splitJSONPathFor(%q) = %q, %q, %v", tc.in, e, v, err)
		}
	}
}
