package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// shimName is the binary that creates containers (cmd/podrun-shim): the pod
// supervisor, the container init and the in-container side of exec. It is
// installed next to this one.
const shimName = "podrun-shim"

// shimPath is podrun-shim in this binary's own directory.
func shimPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(exe), shimName)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s must be installed next to %s (make build and make release make both): %w", shimName, exe, err)
	}
	return p, nil
}

// ShimInfo is the podrun-shim this CLI runs, as `podrun version` and
// `podrun info` report it.
type ShimInfo struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Problem says why pods will not work with it: missing, not runnable,
	// or a version other than this CLI's (a half-installed upgrade).
	Problem string `json:"problem,omitempty"`
}

// shimInfo finds podrun-shim next to this binary and asks its version.
func shimInfo() ShimInfo {
	exe, err := os.Executable()
	if err != nil {
		return ShimInfo{Path: shimName, Problem: err.Error()}
	}
	return shimInfoIn(filepath.Dir(exe), version)
}

// shimInfoIn is shimInfo for podrun-shim in dir and a CLI of cliVersion.
func shimInfoIn(dir, cliVersion string) ShimInfo {
	info := ShimInfo{Path: filepath.Join(dir, shimName)}
	if _, err := os.Stat(info.Path); err != nil {
		info.Problem = fmt.Sprintf("missing: pods cannot start (install %s next to podrun: make build and make release make both)", shimName)
		return info
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, info.Path, "version").Output()
	name, v, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || !ok || name != shimName {
		if err == nil {
			err = fmt.Errorf("unexpected output %q", strings.TrimSpace(string(out)))
		}
		info.Problem = fmt.Sprintf("cannot be run (%v): pods cannot start", err)
		return info
	}
	info.Version = v
	if v != cliVersion {
		info.Problem = fmt.Sprintf("version %s is not podrun's %s: install both binaries of one release", v, cliVersion)
	}
	return info
}

// withShimProblem adds to a supervisor that did not start what is wrong with
// podrun-shim, when something is (a half-installed upgrade, say): the
// supervisor's log may say nothing.
func withShimProblem(err error) error {
	var se *supervisor.SpawnError
	if !errors.As(err, &se) {
		return err
	}
	if info := shimInfo(); info.Problem != "" {
		return fmt.Errorf("%w\n%s: %s", err, info.Path, info.Problem)
	}
	return err
}

// String is the one line `podrun version` and `podrun info` print.
func (s ShimInfo) String() string {
	out := s.Path
	if s.Version != "" {
		out += " " + s.Version
	}
	if s.Problem != "" {
		out += " (" + s.Problem + ")"
	}
	return out
}

// execInPod runs args in a running container of rec through podrun-shim, as
// runtime.Exec would in this process, and returns the command's exit code.
func execInPod(l store.Layout, rec *store.Record, container string, args []string, opts runtime.ExecOptions) (int, error) {
	shim, err := shimPath()
	if err != nil {
		return 0, err
	}
	argv := []string{"--root", l.Root, "--run-root", l.RunRoot, "exec"}
	if opts.Stdin != nil {
		argv = append(argv, "-i")
	}
	if opts.TTY {
		argv = append(argv, "-t")
	}
	argv = append(append(argv, string(rec.Pod.UID), container, "--"), args...)
	cmd := exec.Command(shim, argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, err
	}
	w.Close()
	report, _ := io.ReadAll(r)
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		if len(report) > 0 {
			class, msg, _ := strings.Cut(string(report), "\n")
			if class == "invalid" {
				return 0, errdefs.Invalid(errors.New(msg))
			}
			return 0, errors.New(msg)
		}
		return exit.ExitCode(), nil
	default:
		return 0, err
	}
}
