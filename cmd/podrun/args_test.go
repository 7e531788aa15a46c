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
	} {
		if got := interspersed(app, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
