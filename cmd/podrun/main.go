// Command podrun runs Kubernetes Pod manifests on one Linux host. It is the
// CLI; the processes that create containers (pod supervisors, container inits,
// exec) are podrun-shim (cmd/podrun-shim), installed next to it.
//
// GOMAXPROCS is not re-read from the cgroup every second (Go 1.25's default):
// a waiting podrun and every supervisor would wake for it while idle.
//
//go:debug updatemaxprocs=0
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
)

// Exit codes, documented in the README.
const (
	exitOK      = 0
	exitFailed  = 1 // the pod failed, or an operation did
	exitUsage   = 2 // bad input or usage: nothing was created
	exitTimeout = 124
)

func main() {
	closeInheritedOnExec()
	app := newApp()
	args := interspersed(app, os.Args)
	if err := checkCommand(app, args); err != nil {
		os.Exit(report(err))
	}
	if err := app.Run(args); err != nil {
		os.Exit(report(err))
	}
}

// report prints an error once and picks the exit code.
func report(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := ec.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "error:", msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	// The error classes (internal/errdefs) map to exit codes here, once.
	if errdefs.IsInvalid(err) || podspec.IsInvalid(err) {
		return exitUsage
	}

	return exitFailed
}

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "podrun",
		Usage:                "run Kubernetes Pod manifests on this host, without a cluster",
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		// Errors go back to main, which prints them once as "error: ..." and picks the
		// exit code (cli's default handler prints them bare and exits early).
		ExitErrHandler: func(*cli.Context, error) {},
		Flags:          globalFlags(),
		Before:         setupLogging,
		OnUsageError: func(c *cli.Context, err error, isSubcommand bool) error {
			var flags []cli.Flag
			if c != nil && c.Command != nil {
				flags = c.Command.Flags
			}
			return cli.Exit(flagSuggestion(err, flags), exitUsage)
		},
		Commands: []*cli.Command{
			applyCommand(),
			getCommand(),
			describeCommand(),
			logsCommand(),
			execCommand(),
			deleteCommand(),
			waitCommand(),
			runCommand(),
			completionCommand(),
			eventsCommand(),
			topCommand(),
			cpCommand(),
			restartCommand(),
			pullCommand(),
			loadCommand(),
			imagesCommand(),
			rmiCommand(),
			imageCommand(),
			versionCommand(),
			infoCommand(),
			createCommand(),
			controllersCommand(),
			finishDeleteCommand(),
			rolloutCommand(),
			scaleCommand(),
			labelCommand(),
			patchCommand(),
			setCommand(),
			replaceCommand(),
			diffCommand(),
			portForwardCommand(),
			exposeCommand(),
			annotateCommand(),
			debugCommand(),
		},
	}
	app.UseShortOptionHandling = true
	// A bad flag or argument on any command is a usage error: exit 2.
	var usage func(cmds []*cli.Command)
	usage = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = app.OnUsageError
			if cmd.Before == nil && len(cmd.Subcommands) == 0 {
				cmd.Before = needRoot
			}
			switch cmd.Name {
			case "get", "describe", "logs", "exec", "delete", "restart", "wait", "debug":
				cmd.BashComplete = completePods
			}
			cmd.UseShortOptionHandling = true // -it, as kubectl takes it
			usage(cmd.Subcommands)
		}
	}
	usage(app.Commands)
	return app
}

// closeInheritedOnExec marks the descriptors this command inherited beyond
// stdin, stdout and stderr close-on-exec. The processes it starts (a pod's
// supervisor, the services owner, the controllers) live on after it, and Go's
// exec passes on every descriptor not so marked: a CI runner's pipe inherited
// here would be held open by them, and a step that waits for its pipes to
// close would never end. (Descriptors Go opens are close-on-exec already.)
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}
