package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// execIn is the in-container side of `podrun exec` and `podrun cp`:
//
//	podrun-shim exec [-i] [-t] UID CONTAINER -- COMMAND...
//
// It runs COMMAND in the pod's running container on this process's stdio and
// exits with its exit code. An error of its own (no such container, not
// running) goes to fd 3 when the caller passed one, as "invalid" or "failed",
// a newline and the message, with exit code 125; else to stderr, as the CLI
// prints it.
func execIn(l store.Layout, args []string) int {
	fs := flag.NewFlagSet(shimName+" exec", flag.ContinueOnError)
	stdin := fs.Bool("i", false, "pass stdin to the command")
	tty := fs.Bool("t", false, "run the command on a terminal")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) > 2 && rest[2] == "--" {
		rest = append(rest[:2:2], rest[3:]...)
	}
	if len(rest) < 3 {
		fmt.Fprintf(os.Stderr, "usage: %s exec [-i] [-t] UID CONTAINER -- COMMAND...\n", shimName)
		return 2
	}
	// fd 3, when given, is for this process's own errors: the container's
	// processes must not inherit it.
	syscall.CloseOnExec(3)
	code, err := func() (int, error) {
		rec, err := store.FindPodByUID(l, rest[0])
		if err != nil {
			return 0, err
		}
		opts := runtime.ExecOptions{Stdout: os.Stdout, Stderr: os.Stderr, TTY: *tty}
		if *stdin {
			opts.Stdin = os.Stdin
		}
		return runtime.Exec(l, rec, rest[1], rest[2:], opts)
	}()
	if err == nil {
		return code
	}
	class := "failed"
	if errdefs.IsInvalid(err) || podspec.IsInvalid(err) {
		class = "invalid"
	}
	if report := os.NewFile(3, "errors"); report != nil {
		if _, werr := fmt.Fprintf(report, "%s\n%s", class, err); werr == nil {
			return ExitShimError
		}
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	if class == "invalid" {
		return 2
	}
	return 1
}

// ExitShimError is the exit code of an exec that failed before its command ran
// (the error is on fd 3), as runc's and docker's 125.
const ExitShimError = 125
