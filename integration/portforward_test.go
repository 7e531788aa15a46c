package integration

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// port-forward: kubectl's, to a server the pod binds to its own loopback
// (reached from inside its network namespace, as the CRI's PortForward),
// through a Service's named targetPort, with kubectl's lines; the pod gone,
// it ends with "lost connection to pod".
func TestCLIPortForward(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: srv, labels: {app: srv}}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'echo inside > /tmp/index.html; httpd -f -p 127.0.0.1:8000 -h /tmp & httpd -f -p 8080 -h /tmp & trap "exit 0" TERM; wait']
    ports: [{name: web, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: srv}
spec:
  selector: {app: srv}
  ports: [{port: 80, targetPort: web}]
`), "--wait")
	// fetch reads / through a local port, the forward's.
	fetch := func(port string) string {
		t.Helper()
		var err error
		for range 50 {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 2*time.Second); err == nil {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(c, "GET /index.html HTTP/1.0\r\n\r\n")
				data, _ := io.ReadAll(c)
				c.Close()
				return string(data)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("connecting to the forwarded port %s: %v", port, err)
		return ""
	}
	localPort := func(b *bg, remote string) string {
		t.Helper()
		lines := b.waitLines(t, 30*time.Second, "Forwarding from", func(l []string) bool {
			return len(l) > 0 && strings.HasSuffix(l[0], "-> "+remote)
		})
		f := strings.Fields(lines[0]) // Forwarding from 127.0.0.1:PORT -> REMOTE
		_, port, _ := net.SplitHostPort(f[2])
		return port
	}
	pf := e.start("port-forward", "pod/srv", ":8000")
	if got := fetch(localPort(pf, "8000")); !strings.HasSuffix(got, "\r\n\r\ninside\n") {
		t.Errorf("through port-forward to the pod's loopback: %q", got)
	}
	pf.waitLines(t, 10*time.Second, "Handling connection", func(l []string) bool {
		return len(l) > 0 && strings.HasPrefix(l[len(l)-1], "Handling connection for ")
	})
	svc := e.start("port-forward", "svc/srv", ":80")
	if got := fetch(localPort(svc, "8080")); !strings.HasSuffix(got, "inside\n") {
		t.Errorf("through port-forward to the Service's targetPort: %q", got)
	}
	if r := e.podrun("port-forward", "svc/srv", "8081:81"); r.code != 1 || !strings.Contains(r.stderr, "Service srv does not have a service port 81") {
		t.Errorf("port-forward to a port the Service lacks: %s", r)
	}
	e.must("delete", "pod", "srv", "--now")
	if code := pf.exit(t, 30*time.Second); code != 1 || !strings.Contains(pf.stderr.String(), "lost connection to pod") {
		t.Errorf("port-forward after the pod was deleted: exit %d, %s", code, pf.stderr.String())
	}
	_ = svc.exit(t, 30*time.Second)
}
