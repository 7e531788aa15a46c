package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "root", Value: store.DefaultRoot, Usage: "where images, pod records and logs are kept", EnvVars: []string{"PODRUN_ROOT"}},
		&cli.StringFlag{Name: "run-root", Value: store.DefaultRunRoot, Usage: "where runtime state (container state, namespaces, locks) is kept", EnvVars: []string{"PODRUN_RUN_ROOT"}},
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Value: "", Usage: "the pods' namespace (default \"default\")"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "cgroup-parent", Value: store.DefaultCgroupParent, Usage: "the cgroup under which pod cgroups are made"},
		&cli.StringFlag{Name: "cgroup-manager", Value: "cgroupfs", Usage: "cgroupfs or systemd"},
		&cli.StringFlag{Name: "bridge", Value: "", Usage: "the host bridge pods attach to (default podrun0)", EnvVars: []string{"PODRUN_BRIDGE"}},
		&cli.StringFlag{Name: "subnet", Value: "", Usage: "the pod subnet (CIDR) on the bridge", EnvVars: []string{"PODRUN_SUBNET"}},
		&cli.DurationFlag{Name: "crashloop-backoff-initial", Value: supervisor.DefaultBackoffInitial, Usage: "the first restart backoff (the kubelet's is 10s)"},
		&cli.DurationFlag{Name: "crashloop-backoff-max", Value: supervisor.DefaultBackoffMax, Usage: "the restart backoff cap (the kubelet's is 5m)"},
		&cli.Int64Flag{Name: "pids-limit", Value: 0, Usage: "pids limit of each pod cgroup (0 = unlimited)"},
		&cli.StringFlag{Name: "service-cidr", Value: "", Usage: "the Services' ClusterIP range, recorded on first use (default 10.96.0.0/16, or the next /16 of 10.96.0.0/12 clear of the host's routes)", EnvVars: []string{"PODRUN_SERVICE_CIDR"}},
		&cli.DurationFlag{Name: "sync-frequency", Value: store.DefaultSyncFrequency, Usage: "how often a running pod's configMap and secret volumes are refreshed (the kubelet's --sync-frequency)"},
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

func layout(c *cli.Context) store.Layout {
	return store.Layout{
		Root:         c.String("root"),
		RunRoot:      c.String("run-root"),
		CgroupParent: c.String("cgroup-parent"),
		CgroupDriver: c.String("cgroup-manager"),
		Bridge:       c.String("bridge"),
		Subnet:       c.String("subnet"),
	}
}

// namespace is -n, else "default".
func namespace(c *cli.Context) string {
	if ns := c.String("namespace"); ns != "" {
		return ns
	}
	return "default"
}

// podSettings are the host settings a new pod is applied with; they are kept
// in its record, and later commands use those, not their own flags.
func podSettings(c *cli.Context) store.Settings {
	return store.Settings{
		CgroupParent:   c.String("cgroup-parent"),
		CgroupDriver:   c.String("cgroup-manager"),
		Bridge:         c.String("bridge"),
		Subnet:         c.String("subnet"),
		BackoffInitial: metav1.Duration{Duration: c.Duration("crashloop-backoff-initial")},
		BackoffMax:     metav1.Duration{Duration: c.Duration("crashloop-backoff-max")},
		PidsLimit:      c.Int64("pids-limit"),
		SyncFrequency:  metav1.Duration{Duration: c.Duration("sync-frequency")},
	}
}

func usageError(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitUsage)
}

func failed(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitFailed)
}
