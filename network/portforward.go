package network

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/vishvananda/netns"
)

// DialPod connects to port on the pod's loopback from inside its network
// namespace (netnsPath; "" is the host's, a hostNetwork pod's), as a CRI
// runtime's PortForward does (containerd's portForward: localhost, IPv4
// then IPv6), so that a server listening on 127.0.0.1 in the pod is reached.
// The socket belongs to the namespace it was made in: it is made on a
// thread locked in the pod's namespace, which goes back to the host's.
func DialPod(netnsPath string, port int, timeout time.Duration) (net.Conn, error) {
	dial := func() (net.Conn, error) {
		c4, err4 := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), timeout)
		if err4 == nil {
			return c4, nil
		}
		c6, err6 := net.DialTimeout("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)), timeout)
		if err6 == nil {
			return c6, nil
		}
		return nil, fmt.Errorf("failed to connect to localhost:%d inside the pod's network namespace, IPv4: %v IPv6: %v", port, err4, err6)
	}
	if netnsPath == "" {
		return dial()
	}
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("the thread's network namespace: %w", err)}
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(netnsPath)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("opening the pod's network namespace %s: %w", netnsPath, err)}
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("entering the pod's network namespace %s: %w", netnsPath, err)}
			return
		}
		c, err := dial()
		// The thread goes back to the pool only in the host's namespace;
		// otherwise it stays locked and ends with this goroutine.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}
