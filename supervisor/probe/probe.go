// Package probe runs a container's liveness, readiness and startup probes and
// its postStart/preStop hooks the way the kubelet does (pkg/kubelet/prober,
// pkg/probe/{exec,http,tcp,grpc}, pkg/kubelet/lifecycle): the same handlers,
// the same result messages and events, the same threshold counting, and
// results reported only when they change.
//
// The pod supervisor owns the containers; this package only probes. It runs
// commands inside a container through the caller's ExecFunc, and reaches the
// pod over the network from the host, as the kubelet does.
package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/podspec"
)

// Kind is the kind of a probe; its value is the kubelet's probeType.String(),
// which starts the kubelet's event messages ("Liveness probe failed: ...").
type Kind string

const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Result is the outcome of a probe. Run returns the four results of the
// kubelet's pkg/probe; workers report only Unknown, Success and Failure, as
// the kubelet's results manager does (a Warning counts as a Success).
type Result int

const (
	Unknown Result = iota
	Success
	Failure
	// Warning is a success that deserves an event: an HTTP probe stopped at a
	// redirect to another host.
	Warning
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	case Warning:
		return "Warning"
	default:
		return "Unknown"
	}
}

// probeString is pkg/probe.Result's own spelling, which the kubelet prints in
// its "probe errored and resulted in %s state" event.
func (r Result) probeString() string {
	return strings.ToLower(r.String())
}

// ExecFunc runs cmd inside the container and returns its exit code and
// combined output. It must stop the command when ctx ends and then return
// ctx's error.
type ExecFunc func(ctx context.Context, cmd []string) (exitCode int, output []byte, err error)

// Target is the container run that probes and hooks act on.
type Target struct {
	// Pod names the pod in messages (name_namespace(uid), as the kubelet's
	// format.Pod); it may be nil.
	Pod *corev1.Pod
	// PodIP is where httpGet, tcpSocket and grpc handlers connect when they
	// name no host (grpc always connects there).
	PodIP string
	// Container holds the probes, the lifecycle hooks, the ports that named
	// ports resolve against and the env that exec probes expand $(VAR) with.
	Container *corev1.Container
	// Exec runs exec handlers; without it they fail with an error.
	Exec ExecFunc
	// StartedAt is when this container run started: initialDelaySeconds
	// counts from it. Zero means when the worker is created.
	StartedAt time.Time
	// Event, if set, receives the events the kubelet records for single probe
	// attempts and hooks (all of type Warning). It is called on the worker's
	// goroutine and must not block.
	Event func(Event)
}

// Event is one of the kubelet's Warning events about a probe attempt or hook.
type Event struct {
	Kind    Kind // empty for lifecycle hook events
	Reason  string
	Message string
}

// The kubelet's event reasons (pkg/kubelet/events and lifecycle/handlers.go).
const (
	ReasonUnhealthy             = "Unhealthy"
	ReasonProbeWarning          = "ProbeWarning"
	ReasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// maxOutput is how much of a command's output or an HTTP body the kubelet
// keeps (10 KiB in pkg/probe/exec, pkg/probe/http and lifecycle).
const maxOutput = 10 << 10

// Run makes one attempt of probe p against t, bounded by p.TimeoutSeconds, as
// the kubelet's prober.runProbe: exec, httpGet, tcpSocket or grpc. The string
// is the handler's output (the message of the kubelet's events). A non-nil
// error means the probe could not be run at all (a port name that resolves to
// nothing, an exec that could not start, no handler): the kubelet retries such
// an attempt up to 3 times and then throws the result away.
func Run(ctx context.Context, p *corev1.Probe, t Target) (Result, string, error) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second // the API default
	}
	switch {
	case p.Exec != nil:
		var env []corev1.EnvVar
		if t.Container != nil {
			env = t.Container.Env
		}
		return runExec(ctx, t.Exec, expandStatic(p.Exec.Command, env), timeout)
	case p.HTTPGet != nil:
		req, err := newRequest(ctx, p.HTTPGet, t.Container, t.PodIP, "probe")
		if err != nil {
			return Unknown, "", err
		}
		return doHTTPProbe(req, newProbeClient(timeout))
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Container)
		if err != nil {
			return Unknown, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		return doTCPProbe(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return doGRPCProbe(ctx, t.PodIP, service, int(p.GRPC.Port), timeout)
	default:
		return Unknown, "", fmt.Errorf("missing probe handler for %s:%s", formatPod(t.Pod), containerName(t.Container))
	}
}

// expandStatic expands $(VAR) in an exec probe's command with the container's
// literal env values only, as kubecontainer.ExpandContainerCommandOnlyStatic:
// a valueFrom variable expands to "", an undefined one stays as written.
func expandStatic(cmd []string, env []corev1.EnvVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	var out []string
	for _, c := range cmd {
		out = append(out, podspec.Expand(c, vars))
	}
	return out
}

// runExec is pkg/probe/exec with the CRI's ExecSync timeout handling: exit 0
// is a success, another code a failure whose message is the output, and a
// timeout a failure "command \"...\" timed out" (ExecProbeTimeout).
func runExec(ctx context.Context, exec ExecFunc, cmd []string, timeout time.Duration) (Result, string, error) {
	if exec == nil {
		return Unknown, "", errors.New("exec handlers need a command runner for the container")
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	code, out, err := exec(ectx, cmd)
	out = out[:min(len(out), maxOutput)]
	if err != nil {
		if ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return Unknown, "", fmt.Errorf("running %q in the container: %w", strings.Join(cmd, " "), err)
	}
	if code != 0 {
		return Failure, string(out), nil
	}
	return Success, string(out), nil
}

// doTCPProbe is pkg/probe/tcp: a connection that opens within the timeout is a
// success; any error is a failure whose message is the error.
func doTCPProbe(ctx context.Context, addr string, timeout time.Duration) (Result, string, error) {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}

// probeDialer is pkg/probe.ProbeDialer: SO_LINGER of 1 s keeps the kubelet's
// many short probe connections out of TIME-WAIT.
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(network, address string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}

// resolvePort is pkg/probe.ResolveContainerPort: a number, or the name of one
// of the container's ports, or a number written as a string.
func resolvePort(param intstr.IntOrString, c *corev1.Container) (int, error) {
	port := -1
	var err error
	switch param.Type {
	case intstr.Int:
		port = param.IntValue()
	case intstr.String:
		if port, err = findPortByName(c, param.StrVal); err != nil {
			// Last ditch effort - maybe it was an int stored as string?
			if port, err = strconv.Atoi(param.StrVal); err != nil {
				return port, err
			}
		}
	default:
		return port, fmt.Errorf("intOrString had no kind: %+v", param)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

func findPortByName(c *corev1.Container, name string) (int, error) {
	if c != nil {
		for _, p := range c.Ports {
			if p.Name == name {
				return int(p.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("port %s not found", name)
}

// formatPod is the kubelet's format.Pod.
func formatPod(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID)
}

func containerName(c *corev1.Container) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// kubeVersion is the "major.minor" the kubelet puts in its User-Agent: that of
// the Kubernetes API podrun is built against (k8s.io/api v0.X.Y is 1.X).
// It is read on first use: reading the build info at start would cost every
// container init of podrun-shim.
var kubeVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != "k8s.io/api" {
				continue
			}
			if parts := strings.Split(strings.TrimPrefix(d.Version, "v"), "."); len(parts) >= 2 && parts[0] == "0" {
				return "1." + parts[1]
			}
		}
	}
	return fallbackKubeVersion
})

// fallbackKubeVersion is used when the binary carries no module information;
// it matches the k8s.io/api in go.mod (a test keeps them in step).
const fallbackKubeVersion = "1.37"

func userAgent(purpose string) string {
	return "kube-" + purpose + "/" + kubeVersion()
}
