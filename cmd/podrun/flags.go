package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/cgroups"
	"github.com/podrun/podrun/runtime"
)

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "root", Value: runtime.DefaultRoot, Usage: "where images, pod records and logs are kept", EnvVars: []string{"PODRUN_ROOT"}},
		&cli.StringFlag{Name: "run-root", Value: runtime.DefaultRunRoot, Usage: "where runtime state (container state, namespaces, locks) is kept", EnvVars: []string{"PODRUN_RUN_ROOT"}},
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Value: "", Usage: "the pods' namespace (default \"default\")"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "cgroup-parent", Value: runtime.DefaultCgroupParent, Usage: "the cgroup under which pod cgroups are made"},
		&cli.StringFlag{Name: "cgroup-manager", Value: "", Usage: "cgroupfs or systemd (default: systemd on a cgroup v2 host booted with systemd, else cgroupfs)"},
		&cli.StringFlag{Name: "bridge", Value: "", Usage: "the host bridge pods attach to (default podrun0)", EnvVars: []string{"PODRUN_BRIDGE"}},
		&cli.StringFlag{Name: "subnet", Value: "", Usage: "the pod subnet (CIDR) on the bridge", EnvVars: []string{"PODRUN_SUBNET"}},
		&cli.DurationFlag{Name: "crashloop-backoff-initial", Value: runtime.DefaultBackoffInitial, Usage: "the first restart backoff (the kubelet's is 10s)"},
		&cli.DurationFlag{Name: "crashloop-backoff-max", Value: runtime.DefaultBackoffMax, Usage: "the restart backoff cap (the kubelet's is 5m)"},
		&cli.Int64Flag{Name: "pids-limit", Value: 0, Usage: "pids limit of each pod cgroup (0 = unlimited)"},
	}
}

func setupLogging(c *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return cli.Exit(fmt.Sprintf("--log-level %q: want debug, info, warn or error", c.String("log-level")), exitUsage)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	return nil
}

func layout(c *cli.Context) runtime.Layout {
	return runtime.Layout{
		Root:         c.String("root"),
		RunRoot:      c.String("run-root"),
		CgroupParent: c.String("cgroup-parent"),
		CgroupDriver: cgroupDriver(c),
		Bridge:       c.String("bridge"),
		Subnet:       c.String("subnet"),
	}
}

// cgroupDriver is --cgroup-manager, else the driver containerd and the
// kubelet would pick on this host.
func cgroupDriver(c *cli.Context) string {
	if d := c.String("cgroup-manager"); d != "" {
		return d
	}
	return cgroups.DefaultDriver()
}

// namespace is -n, else "default".
func namespace(c *cli.Context) string {
	if ns := c.String("namespace"); ns != "" {
		return ns
	}
	return "default"
}

// globalArgs re-creates the global flags for a re-executed podrun.
func globalArgs(c *cli.Context) []string {
	return []string{
		"--root", c.String("root"),
		"--run-root", c.String("run-root"),
		"--log-level", c.String("log-level"),
		"--cgroup-parent", c.String("cgroup-parent"),
		"--cgroup-manager", cgroupDriver(c),
		"--bridge", c.String("bridge"),
		"--subnet", c.String("subnet"),
		"--crashloop-backoff-initial", c.Duration("crashloop-backoff-initial").String(),
		"--crashloop-backoff-max", c.Duration("crashloop-backoff-max").String(),
		"--pids-limit", strconv.FormatInt(c.Int64("pids-limit"), 10),
	}
}

func usageError(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitUsage)
}

func failed(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitFailed)
}
