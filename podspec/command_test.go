//go:build !podrun_lean

package podspec

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCommandLine(t *testing.T) {
	env := []string{"GREETING=hello", "NAME=world", "GREETING=hi"} // later entries win
	tests := []struct {
		name             string
		command, args    []string
		entrypoint, cmd  []string
		want             []string
		wantErrNoCommand bool
	}{
		{name: "image entrypoint and cmd", entrypoint: []string{"/entry"}, cmd: []string{"serve", "-v"}, want: []string{"/entry", "serve", "-v"}},
		{name: "image cmd only", cmd: []string{"sh"}, want: []string{"sh"}},
		{name: "args replace the image cmd", args: []string{"run"}, entrypoint: []string{"/entry"}, cmd: []string{"serve"}, want: []string{"/entry", "run"}},
		{name: "command drops entrypoint and cmd", command: []string{"/bin/sh", "-c"}, entrypoint: []string{"/entry"}, cmd: []string{"serve"}, want: []string{"/bin/sh", "-c"}},
		{name: "command and args", command: []string{"echo"}, args: []string{"a", "b"}, entrypoint: []string{"/entry"}, cmd: []string{"serve"}, want: []string{"echo", "a", "b"}},
		{name: "empty-string entrypoint counts as none", entrypoint: []string{""}, cmd: []string{"sh"}, want: []string{"sh"}},
		{name: "empty-string entrypoint with args", args: []string{"x"}, entrypoint: []string{""}, cmd: []string{"sh"}, want: []string{"x"}},
		{name: "command and args are expanded", command: []string{"echo", "$(GREETING)"}, args: []string{"$(NAME)", "$$(NAME)", "$(NOPE)"},
			want: []string{"echo", "hi", "world", "$(NAME)", "$(NOPE)"}},
		{name: "image cmd is not expanded", cmd: []string{"echo", "$(NAME)"}, want: []string{"echo", "$(NAME)"}},
		{name: "nothing to run", wantErrNoCommand: true},
		{name: "only an empty-string entrypoint", entrypoint: []string{""}, wantErrNoCommand: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", Command: tt.command, Args: tt.args}
			got, err := CommandLine(c, tt.entrypoint, tt.cmd, env)
			if tt.wantErrNoCommand {
				if !errors.Is(err, ErrNoCommand) {
					t.Fatalf("CommandLine = %q, %v; want ErrNoCommand", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CommandLine = %q, want %q", got, tt.want)
			}
		})
	}
}
