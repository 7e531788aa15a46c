// Command podrun-shim is the half of podrun that creates containers: the pod
// supervisor that `podrun apply` starts (one per pod), the container init that
// libcontainer re-executes from it, the holder of a shared PID namespace, and
// the in-container side of `podrun exec` and `podrun cp`, and the services
// owner (cluster DNS and Service rules, package serviceowner). It is installed next
// to the `podrun` CLI, which starts it; it is not meant to be run by hand.
//
// libcontainer starts every container's init (and every exec'd process) by
// re-executing a sealed copy of /proc/self/exe, so the process that creates
// containers must be a small binary for that init to start fast: this one
// links neither go.podman.io/image and storage (pulls run the CLI's `podrun
// pull`), nor the CLI's libraries, nor gRPC (the gRPC probe speaks h2c through
// net/http). It must be built with the build tag podrun_lean (the Makefile does).
//
// GOMAXPROCS is not re-read from the cgroup every second (Go 1.25's default):
// every idle supervisor would wake for it.
//
//go:debug updatemaxprocs=0
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // the re-exec'd container init's C constructor

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
)

const shimName = "podrun-shim"

// version is set by the Makefile (-X main.version=...), as the CLI's.
var version = "v0.0.0-dev"

func main() {
	// libcontainer re-executes this binary as the container's init.
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
		return
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet(shimName, flag.ContinueOnError)
	root := fs.String("root", store.DefaultRoot, "where images, pod records and logs are kept")
	runRoot := fs.String("run-root", store.DefaultRunRoot, "where runtime state is kept")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "error: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	// The pod's own settings come from its record; these are the defaults the
	// CLI's layout has for a command given no flags.
	l := store.Layout{Root: *root, RunRoot: *runRoot, CgroupParent: store.DefaultCgroupParent, CgroupDriver: cgroups.DefaultDriver()}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprintf(os.Stderr, "%s is started by podrun (supervise, pause, exec, services-owner); it is not a command of its own\n", shimName)
		return 2
	}
	var err error
	switch rest[0] {
	case "supervise":
		err = supervise(l, rest[1:])
	case "pause":
		err = pause()
	case "services-owner":
		// serviceowner.Ensure passes the write end of its readiness pipe as
		// fd 3. It runs from this binary, not the CLI's: it starts beside
		// every first pod, and this binary starts several times cheaper.
		err = serviceowner.Run(l, os.NewFile(3, "ready"))
	case "exec":
		return execIn(l, rest[1:])
	case "version":
		fmt.Println(shimName, version)
	default:
		err = fmt.Errorf("unknown command %q", rest[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if errdefs.IsInvalid(err) || podspec.IsInvalid(err) {
			return 2
		}
		return 1
	}
	return 0
}
