package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/services"
	"github.com/podrun/podrun/store"
)

// portForwardCommand is kubectl port-forward (pkg/cmd/portforward): local
// listeners whose connections go to the pod's own loopback, dialled from
// inside its network namespace as the kubelet's CRI PortForward does, so a
// server bound to 127.0.0.1 in the pod is reached too.
func portForwardCommand() *cli.Command {
	return &cli.Command{
		Name:      "port-forward",
		Usage:     "forward local ports to a pod",
		ArgsUsage: "TYPE/NAME|POD [LOCAL_PORT:]REMOTE_PORT...",
		Description: `Examples:
  # Local ports 5000 and 6000 to the pod's 5000 and 6000
  podrun port-forward pod/mypod 5000 6000

  # Local 8080 to port 80 of a pod of the Deployment
  podrun port-forward deployment/web 8080:80

  # A random local port to the Service's port 443 (its targetPort on a pod)
  podrun port-forward svc/web :443`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "address", Value: cli.NewStringSlice("localhost"), Usage: "addresses to listen on (localhost: 127.0.0.1 and ::1)"},
			&cli.DurationFlag{Name: "pod-running-timeout", Value: time.Minute, Usage: "how long to wait until the pod is running"},
		},
		Action: runPortForward,
	}
}

// forward is one LOCAL:REMOTE pair.
type forward struct{ local, remote int }

func runPortForward(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 2 {
		return usageError("TYPE/NAME and list of ports are required for port-forward")
	}
	var fwds []forward
	for _, p := range args[1:] {
		f, err := parsePortSpec(p)
		if err != nil {
			return usageError("%v", err)
		}
		fwds = append(fwds, f)
	}
	l := layout(c)
	ns := namespace(c)
	kind, name, slash := strings.Cut(args[0], "/")
	if !slash {
		kind, name = "pod", args[0]
	}
	var rec *store.Record
	switch {
	case isPodWord(kind):
		r, err := findPod(l, ns, name)
		if err != nil {
			return failed("%v", err)
		}
		rec = r
	default:
		k, ok := store.KindFor(kind)
		if !ok {
			return failed("the server doesn't have a resource type %q", kind)
		}
		recs, err := podsForObject(l, ns, k, name, false)
		if err != nil {
			return err
		}
		rec = recs[0]
		if k == store.ServiceKind {
			// translateServicePortToTargetPort: the ports given are the Service's.
			obj, err := l.Get(k, ns, name)
			if err != nil {
				return failed("%v", err)
			}
			for i := range fwds {
				if fwds[i].remote, err = serviceTargetPort(obj.(*corev1.Service), rec.Pod, fwds[i].remote); err != nil {
					return failed("%v", err)
				}
			}
		}
	}
	pod, err := waitRunning(l, rec, c.Duration("pod-running-timeout"))
	if err != nil {
		return err
	}
	netnsPath := ""
	if !pod.Spec.HostNetwork {
		netnsPath = runtime.PodNetNS(rec.PodLayout(l), string(pod.UID))
	}
	var listeners []net.Listener
	defer func() {
		for _, ln := range listeners {
			ln.Close()
		}
	}()
	for i, f := range fwds {
		lns, err := listen(c.StringSlice("address"), f.local)
		if err != nil {
			return failed("%v", err)
		}
		// A random local port (":80") is the first listener's, for every address.
		if f.local == 0 && len(lns) > 0 {
			fwds[i].local = lns[0].Addr().(*net.TCPAddr).Port
		}
		listeners = append(listeners, lns...)
		for _, ln := range lns {
			fmt.Printf("Forwarding from %s -> %d\n", ln.Addr(), f.remote)
			go serveForward(ln, netnsPath, pod, fwds[i])
		}
	}
	// Until Ctrl-C, or until the pod is gone or stops running ("lost
	// connection to pod", as kubectl says when its stream ends).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			cur, err := rec.Reload(l)
			if err != nil || cur.View().Status.Phase != corev1.PodRunning {
				return failed("lost connection to pod")
			}
		}
	}
}

// parsePortSpec reads [LOCAL:]REMOTE, :REMOTE (a random local port) and
// LOCAL:REMOTE (kubectl's parsePorts).
func parsePortSpec(spec string) (forward, error) {
	local, remote, pair := strings.Cut(spec, ":")
	if !pair {
		remote, local = spec, spec
	}
	r, err := strconv.ParseUint(remote, 10, 16)
	if err != nil || r == 0 {
		return forward{}, fmt.Errorf("error parsing remote port %q: invalid port", remote)
	}
	l := uint64(0)
	if local != "" {
		if l, err = strconv.ParseUint(local, 10, 16); err != nil {
			return forward{}, fmt.Errorf("error parsing local port %q: invalid port", local)
		}
	}
	return forward{local: int(l), remote: int(r)}, nil
}

// serviceTargetPort is the pod port a Service's port goes to
// (translateServicePortToTargetPort): its targetPort, a name looked up among
// the pod's container ports as the endpoints controller does
// (services.FindPort), or the port itself when none is set.
func serviceTargetPort(svc *corev1.Service, pod *corev1.Pod, port int) (int, error) {
	for _, p := range svc.Spec.Ports {
		if int(p.Port) != port {
			continue
		}
		if p.TargetPort.IntValue() == 0 && p.TargetPort.StrVal == "" {
			return port, nil
		}
		target, err := services.FindPort(pod, &p)
		if err != nil {
			return 0, fmt.Errorf("pod %s does not have a named port '%s'", pod.Name, p.TargetPort.StrVal)
		}
		return int(target), nil
	}
	return 0, fmt.Errorf("Service %s does not have a service port %d", svc.Name, port)
}

// waitRunning waits until the pod runs (kubectl's podRunningTimeout).
func waitRunning(l store.Layout, rec *store.Record, timeout time.Duration) (*corev1.Pod, error) {
	deadline := time.Now().Add(timeout)
	for {
		cur, err := rec.Reload(l)
		if err != nil {
			return nil, failed("%v", err)
		}
		pod := cur.View()
		switch pod.Status.Phase {
		case corev1.PodRunning:
			return pod, nil
		case corev1.PodSucceeded, corev1.PodFailed:
			return nil, failed("unable to forward port because pod is not running. Current status=%v", pod.Status.Phase)
		}
		if time.Now().After(deadline) {
			return nil, failed("unable to forward port because pod is not running. Current status=%v", pod.Status.Phase)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listen opens the local listeners of one port: "localhost" is 127.0.0.1
// and ::1, and, as kubectl, an address that cannot be had is skipped as long
// as one can (the port taken is an error).
func listen(addresses []string, port int) ([]net.Listener, error) {
	var hosts []string
	for _, a := range addresses {
		for _, h := range strings.Split(a, ",") {
			if h == "localhost" {
				hosts = append(hosts, "127.0.0.1", "::1")
			} else if h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	var out []net.Listener
	var errs []error
	for _, h := range hosts {
		p := port
		if p == 0 && len(out) > 0 {
			p = out[0].Addr().(*net.TCPAddr).Port
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(p)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, ln)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unable to listen on any of the requested ports: %w", errors.Join(errs...))
	}
	return out, nil
}

// serveForward copies each accepted connection to and from the pod's port.
func serveForward(ln net.Listener, netnsPath string, pod *corev1.Pod, f forward) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		fmt.Printf("Handling connection for %d\n", f.local)
		go func() {
			defer conn.Close()
			up, err := network.DialPod(netnsPath, f.remote, 5*time.Second)
			if err != nil {
				fmt.Fprintf(os.Stderr, "E%s an error occurred forwarding %d -> %d: error forwarding port %d to pod %s, uid %s: %v\n", time.Now().Format("0102 15:04:05.000000"), f.local, f.remote, f.remote, pod.Name, pod.UID, err)
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				// Half-close, so the other side sees the end of this direction.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			go pipe(up, conn)
			go pipe(conn, up)
			wg.Wait()
		}()
	}
}
