package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:        "exec",
		Description: "Examples:\n  # Run a command in the pod's first container\n  podrun exec web -- cat /etc/hosts\n\n  # An interactive shell in the sidecar\n  podrun exec -it web -c proxy -- sh",
		Usage:       "run a command in a running container",
		ArgsUsage:   "POD [-c CONTAINER] [-i] -- COMMAND [ARGS...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "the container (default: the pod's first)"},
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the command"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "run the command on a terminal (with -i, an interactive shell)"},
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1:1], args[2:]...)
			}
			if len(args) < 2 {
				return usageError("exec needs a pod and a command: podrun exec POD -- COMMAND")
			}
			l := layout(c)
			rec, err := findPod(l, namespace(c), podArgs(args[:1])[0])
			if err != nil {
				return failed("%v", err)
			}
			container := c.String("container")
			if container == "" {
				container = rec.Pod.Spec.Containers[0].Name
			}
			opts := runtime.ExecOptions{Stdout: os.Stdout, Stderr: os.Stderr, TTY: c.Bool("tty")}
			if c.Bool("stdin") {
				opts.Stdin = os.Stdin
			}
			code, err := execInPod(l, rec, container, args[1:], opts)
			if err != nil {
				return err // report maps its class to the exit code
			}
			if code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
