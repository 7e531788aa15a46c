package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/internal/sibling"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// The binaries installed next to this one, which it runs from its own
// directory: podrun-shim creates containers (cmd/podrun-shim: the pod
// supervisor, the container init, the in-container side of exec), podrun-image
// writes images (cmd/podrun-image: pull and load, the only binary that links
// go.podman.io/image, so that every other command starts without it).
const (
	shimName  = "podrun-shim"
	imageName = image.HelperName
)

// helperPath is the binary name in this binary's own directory.
func helperPath(name string) (string, error) { return sibling.Path(name) }

// shimPath is podrun-shim in this binary's own directory.
func shimPath() (string, error) { return helperPath(shimName) }

// HelperInfo is a binary this CLI runs (podrun-shim, podrun-image), as
// `podrun version` and `podrun info` report it.
type HelperInfo struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Problem says what will not work with it: missing, not runnable, or a
	// version other than this CLI's (a half-installed upgrade).
	Problem string `json:"problem,omitempty"`
}

// helperInfo finds the binary name next to this one and asks its version.
func helperInfo(name string) HelperInfo {
	dir, err := sibling.Dir()
	if err != nil {
		return HelperInfo{Path: name, Problem: err.Error()}
	}
	return helperInfoIn(dir, name, version)
}

// helperConsequence is what does not work without each helper.
var helperConsequence = map[string]string{
	shimName:  "pods cannot start",
	imageName: "images cannot be pulled or loaded, nor -k kustomizations built",
}

// helperInfoIn is helperInfo for the binary name in dir and a CLI of cliVersion.
func helperInfoIn(dir, name, cliVersion string) HelperInfo {
	info := HelperInfo{Path: filepath.Join(dir, name)}
	if _, err := os.Stat(info.Path); err != nil {
		info.Problem = fmt.Sprintf("missing: %s (install %s next to podrun: make build and make release build %s)", helperConsequence[name], name, sibling.Installed)
		return info
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, info.Path, "version").Output()
	got, v, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || !ok || got != name {
		if err == nil {
			err = fmt.Errorf("unexpected output %q", strings.TrimSpace(string(out)))
		}
		info.Problem = fmt.Sprintf("cannot be run (%v): %s", err, helperConsequence[name])
		return info
	}
	info.Version = v
	if v != cliVersion {
		info.Problem = fmt.Sprintf("version %s is not podrun's %s: install the binaries of one release", v, cliVersion)
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
	if info := helperInfo(shimName); info.Problem != "" {
		return fmt.Errorf("%w\n%s: %s", err, info.Path, info.Problem)
	}
	return err
}

// String is the one line `podrun version` and `podrun info` print.
func (s HelperInfo) String() string {
	out := s.Path
	if s.Version != "" {
		out += " " + s.Version
	}
	if s.Problem != "" {
		out += " (" + s.Problem + ")"
	}
	return out
}

// runImageHelper runs podrun-image with args, on this command's own stdin,
// stdout and stderr (its progress bars see the terminal), and exits as it
// does: it printed its error itself. SIGINT and SIGTERM sent to this process
// are passed on and it waits, so podrun-image removes its work files first
// (a terminal's Ctrl-C reaches both; podrun-image stops at the first).
func runImageHelper(args []string) error {
	helper, err := helperPath(imageName)
	if err != nil {
		return failed("%v", err)
	}
	cmd := exec.Command(helper, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return failed("running %s: %v", helper, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &exit) && exit.ExitCode() > 0:
				return cli.Exit("", exit.ExitCode())
			default:
				return failed("%s: %v", helper, err)
			}
		}
	}
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
