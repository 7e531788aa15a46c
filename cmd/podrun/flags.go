package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/logs"

	"github.com/podrun/podrun/cgroups"
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
		&cli.StringFlag{Name: "cgroup-manager", Value: "", Usage: "cgroupfs or systemd (default: systemd on a cgroup v2 host booted with systemd, else cgroupfs)"},
		&cli.StringFlag{Name: "bridge", Value: "", Usage: "the host bridge pods attach to (default podrun0)", EnvVars: []string{"PODRUN_BRIDGE"}},
		&cli.StringFlag{Name: "subnet", Value: "", Usage: "the pod subnet (CIDR) on the bridge", EnvVars: []string{"PODRUN_SUBNET"}},
		&cli.DurationFlag{Name: "crashloop-backoff-initial", Value: supervisor.DefaultBackoffInitial, Usage: "the first restart backoff (the kubelet's is 10s)"},
		&cli.DurationFlag{Name: "crashloop-backoff-max", Value: supervisor.DefaultBackoffMax, Usage: "the restart backoff cap (the kubelet's is 5m)"},
		&cli.Int64Flag{Name: "pids-limit", Value: 0, Usage: "pids limit of each pod cgroup (0 = unlimited)"},
		&cli.StringFlag{Name: "service-cidr", Value: "", Usage: "the Services' ClusterIP range, recorded on first use (default 10.96.0.0/16, or the next /16 of 10.96.0.0/12 clear of the host's routes)", EnvVars: []string{"PODRUN_SERVICE_CIDR"}},
		&cli.DurationFlag{Name: "sync-frequency", Value: store.DefaultSyncFrequency, Usage: "how often a running pod's configMap and secret volumes are refreshed (the kubelet's --sync-frequency)"},
		&cli.StringSliceFlag{Name: "allowed-unsafe-sysctls", Usage: "the kubelet's flag: unsafe sysctls or patterns (ending in *) pods may set, comma-separated; others are rejected (SysctlForbidden)"},
		&cli.StringFlag{Name: "container-log-max-size", Value: "10Mi", Usage: "the size (a quantity: 10Mi, 500Ki) at which a container's log is rotated, as the kubelet's"},
		&cli.IntFlag{Name: "container-log-max-files", Value: logs.DefaultMaxFiles, Usage: "how many log files a container run keeps, the live one included (at least 2), as the kubelet's"},
		&cli.StringFlag{Name: "resolv-conf", Value: "", Usage: "the kubelet's --resolv-conf: the resolver configuration pods' resolv.conf starts from (dnsPolicy Default, and the search domains of ClusterFirst) and whose nameservers the cluster DNS forwards other names to; recorded on first use (default /etc/resolv.conf, or systemd-resolved's list behind its stub)"},
		&cli.BoolFlag{Name: "seccomp-default", Usage: "give containers that set no seccomp profile the RuntimeDefault profile, as the kubelet's --seccomp-default"},
	}
}

// logPolicy is the container log rotation policy of the global flags,
// checked as the kubelet checks its own (NewContainerLogManager).
func logPolicy(c *cli.Context) (maxSize int64, maxFiles int, err error) {
	q, err := resource.ParseQuantity(c.String("container-log-max-size"))
	if err != nil {
		return 0, 0, usageError("--container-log-max-size %q: failed to parse container log max size: %v", c.String("container-log-max-size"), err)
	}
	if q.Sign() <= 0 {
		return 0, 0, usageError("--container-log-max-size %q: must be positive", c.String("container-log-max-size"))
	}
	maxFiles = c.Int("container-log-max-files")
	if maxFiles < 2 {
		return 0, 0, usageError("--container-log-max-files %d: must be equal to or greater than 2", maxFiles)
	}
	return q.Value(), maxFiles, nil
}

func setupLogging(c *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return cli.Exit(fmt.Sprintf("--log-level %q: want debug, info, warn or error", c.String("log-level")), exitUsage)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if err := cgroups.CheckParent(c.String("cgroup-parent")); err != nil {
		return cli.Exit(fmt.Sprintf("--cgroup-parent: %v (a path from the cgroup root, e.g. %s)", err, store.DefaultCgroupParent), exitUsage)
	}
	_, _, err := logPolicy(c)
	return err
}

func layout(c *cli.Context) store.Layout {
	return store.Layout{
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

// podSettings are the host settings a new pod is applied with; they are kept
// in its record, and later commands use those, not their own flags.
func podSettings(c *cli.Context) store.Settings {
	logMaxSize, logMaxFiles, _ := logPolicy(c) // checked with the other global flags
	return store.Settings{
		LogMaxSize:           logMaxSize,
		LogMaxFiles:          logMaxFiles,
		CgroupParent:         c.String("cgroup-parent"),
		CgroupDriver:         cgroupDriver(c),
		Bridge:               c.String("bridge"),
		Subnet:               c.String("subnet"),
		BackoffInitial:       metav1.Duration{Duration: c.Duration("crashloop-backoff-initial")},
		BackoffMax:           metav1.Duration{Duration: c.Duration("crashloop-backoff-max")},
		PidsLimit:            c.Int64("pids-limit"),
		SyncFrequency:        metav1.Duration{Duration: c.Duration("sync-frequency")},
		AllowedUnsafeSysctls: c.StringSlice("allowed-unsafe-sysctls"),
		SeccompDefault:       c.Bool("seccomp-default"),
		ResolvConf:           resolvConfFlag(c),
	}
}

// resolvConfFlag is --resolv-conf as an absolute path (the supervisor and
// the services owner read it from other directories), "" when not given.
func resolvConfFlag(c *cli.Context) string {
	p := c.String("resolv-conf")
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}

func usageError(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitUsage)
}

func failed(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), exitFailed)
}
