package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostPort splits a test server's URL into host and port.
func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), port
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func httpProbe(path string, port intstr.IntOrString, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers},
	}}
}

func TestHTTPProbeResults(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
		fmt.Fprint(w, "body of ", code)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("loc"), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/query", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "query ", r.URL.RawQuery)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 3*maxOutput))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := hostPort(t, srv.URL)

	tests := []struct {
		name    string
		path    string
		want    Result
		message string // the whole message, or a regexp when it starts with "^"
	}{
		{"200 is a success with the body", "/status/200", Success, "body of 200"},
		{"204", "/status/204", Success, ""},
		{"399 is a redirect not followed: warning", "/status/399", Warning, "Probe terminated redirects, Response body: body of 399"},
		{"400", "/status/400", Failure, "HTTP probe failed with statuscode: 400"},
		{"500 without the body", "/status/500", Failure, "HTTP probe failed with statuscode: 500"},
		{"same-host redirect is followed", "/redirect?loc=/status/200", Success, "body of 200"},
		{"same-host redirect to a failure", "/redirect?loc=/status/503", Failure, "HTTP probe failed with statuscode: 503"},
		{"other-host redirect is a warning", "/redirect?loc=" + url.QueryEscape("http://localhost:1/x"), Warning,
			`Probe terminated redirects, Response body: <a href="http://localhost:1/x">Found</a>.` + "\n\n"},
		{"redirect loop", "/loop", Failure, `^Get "/loop": stopped after 10 redirects$`},
		{"path with a query", "/query?a=1&b=2", Success, "query a=1&b=2"},
		{"body read up to 10 KiB", "/big", Success, strings.Repeat("x", maxOutput)},
		{"timeout", "/slow", Failure, `^Get "http://127\.0\.0\.1:\d+/slow": context deadline exceeded \(Client\.Timeout exceeded while awaiting headers\)$`},
		{"404", "/nothing", Failure, "HTTP probe failed with statuscode: 404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Run(context.Background(), httpProbe(tc.path, intstr.FromInt32(int32(port))), Target{PodIP: host})
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if res != tc.want {
				t.Errorf("result %v, want %v (message %q)", res, tc.want, msg)
			}
			if strings.HasPrefix(tc.message, "^") {
				if !regexp.MustCompile(tc.message).MatchString(msg) {
					t.Errorf("message %q does not match %q", msg, tc.message)
				}
			} else if msg != tc.message {
				t.Errorf("message %q, want %q", msg, tc.message)
			}
		})
	}
}

func TestHTTPProbeRequest(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	container := &corev1.Container{Name: "web", Ports: []corev1.ContainerPort{
		{Name: "metrics", ContainerPort: 1},
		{Name: "http", ContainerPort: int32(port)},
	}}

	tests := []struct {
		name    string
		probe   *corev1.Probe
		podIP   string
		want    map[string]string // header → value; "" means absent
		host    string            // the request's Host, if checked
		reqPath string
	}{
		{
			name:    "defaults",
			probe:   httpProbe("/healthz", intstr.FromInt32(int32(port))),
			podIP:   host,
			want:    map[string]string{"User-Agent": "kube-probe/" + kubeVersion(), "Accept": "*/*", "Accept-Encoding": ""},
			host:    net.JoinHostPort(host, strconv.Itoa(port)),
			reqPath: "/healthz",
		},
		{
			name: "named port, custom headers, repeated header, Host and User-Agent overridden",
			probe: httpProbe("/named", intstr.FromString("http"),
				corev1.HTTPHeader{Name: "X-Custom", Value: "a"},
				corev1.HTTPHeader{Name: "x-custom", Value: "b"},
				corev1.HTTPHeader{Name: "Host", Value: "example.test"},
				corev1.HTTPHeader{Name: "user-agent", Value: "mine/1"},
				corev1.HTTPHeader{Name: "Accept", Value: "application/json"}),
			podIP:   host,
			want:    map[string]string{"User-Agent": "mine/1", "Accept": "application/json", "X-Custom": "a,b"},
			host:    "example.test",
			reqPath: "/named",
		},
		{
			name:    "empty Accept removes it; port number written as a string",
			probe:   httpProbe("/", intstr.FromString(strconv.Itoa(port)), corev1.HTTPHeader{Name: "Accept", Value: ""}),
			podIP:   host,
			want:    map[string]string{"Accept": ""},
			reqPath: "/",
		},
		{
			name: "probe host wins over the pod IP",
			probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: host, Path: "/h", Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP}}},
			podIP:   "192.0.2.1", // must not be used
			reqPath: "/h",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Run(context.Background(), tc.probe, Target{PodIP: tc.podIP, Container: container})
			if err != nil || res != Success {
				t.Fatalf("Run = %v, %q, %v; want success", res, msg, err)
			}
			r := <-got
			if r.URL.Path != tc.reqPath {
				t.Errorf("path %q, want %q", r.URL.Path, tc.reqPath)
			}
			if r.Method != http.MethodGet {
				t.Errorf("method %s", r.Method)
			}
			for h, v := range tc.want {
				if got := strings.Join(r.Header.Values(h), ","); got != v {
					t.Errorf("header %s = %q, want %q", h, got, v)
				}
			}
			if tc.host != "" && r.Host != tc.host {
				t.Errorf("Host %q, want %q", r.Host, tc.host)
			}
		})
	}
	if !regexp.MustCompile(`^1\.\d+$`).MatchString(kubeVersion()) {
		t.Errorf("kubeVersion() %q is not 1.<minor>", kubeVersion())
	}
}

// The fallback version must follow go.mod's k8s.io/api.
func TestFallbackKubeVersion(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.`).FindSubmatch(data)
	if m == nil {
		t.Fatal("k8s.io/api not found in go.mod")
	}
	if want := "1." + string(m[1]); fallbackKubeVersion != want || kubeVersion() != want {
		t.Errorf("fallbackKubeVersion %q, kubeVersion() %q; go.mod says %q", fallbackKubeVersion, kubeVersion(), want)
	}
}

func TestHTTPSProbe(t *testing.T) {
	// A self-signed certificate: the kubelet does not verify it.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tls ok")
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	p := httpProbe("/", intstr.FromInt32(int32(port)))
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	res, msg, err := Run(context.Background(), p, Target{PodIP: host})
	if err != nil || res != Success || msg != "tls ok" {
		t.Errorf("Run = %v, %q, %v; want Success, \"tls ok\"", res, msg, err)
	}

	// An HTTPS probe against a plain HTTP server fails.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	host, port = hostPort(t, plain.URL)
	p = httpProbe("/", intstr.FromInt32(int32(port)))
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	res, msg, err = Run(context.Background(), p, Target{PodIP: host})
	if err != nil || res != Failure || !strings.Contains(msg, "server gave HTTP response to HTTPS client") {
		t.Errorf("Run = %v, %q, %v; want a failure", res, msg, err)
	}
}

func TestHTTPProbeConnectionRefused(t *testing.T) {
	port := closedPort(t)
	res, msg, err := Run(context.Background(), httpProbe("/", intstr.FromInt32(int32(port))), Target{PodIP: "127.0.0.1"})
	want := fmt.Sprintf(`Get "http://127.0.0.1:%d/": dial tcp 127.0.0.1:%d: connect: connection refused`, port, port)
	if err != nil || res != Failure || msg != want {
		t.Errorf("Run = %v, %q, %v; want Failure, %q", res, msg, err, want)
	}
}

func TestPortErrors(t *testing.T) {
	container := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		name  string
		probe *corev1.Probe
		want  string
	}{
		{"unknown port name", httpProbe("/", intstr.FromString("nope")), `strconv.Atoi: parsing "nope": invalid syntax`},
		{"port 0", httpProbe("/", intstr.FromInt32(0)), "invalid port number: 0"},
		{"port too big", httpProbe("/", intstr.FromString("70000")), "invalid port number: 70000"},
		{"tcp unknown port name", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("web")}}},
			`strconv.Atoi: parsing "web": invalid syntax`},
		{"no handler", &corev1.Probe{}, "missing probe handler for p_ns(uid-1):c"},
	}
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "ns", "uid-1"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := Run(context.Background(), tc.probe, Target{Pod: pod, PodIP: "127.0.0.1", Container: container})
			if res != Unknown || err == nil || err.Error() != tc.want {
				t.Errorf("Run = %v, %v; want Unknown, %q", res, err, tc.want)
			}
		})
	}
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := l.Addr().(*net.TCPAddr).Port
	closed := closedPort(t)
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(open)}}}
	tcp := func(host string, port intstr.IntOrString) *corev1.Probe {
		return &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: host, Port: port}}}
	}
	tests := []struct {
		name    string
		probe   *corev1.Probe
		podIP   string
		want    Result
		message string
	}{
		{"open port", tcp("", intstr.FromInt32(int32(open))), "127.0.0.1", Success, ""},
		{"named port", tcp("", intstr.FromString("db")), "127.0.0.1", Success, ""},
		{"probe host", tcp("127.0.0.1", intstr.FromInt32(int32(open))), "192.0.2.1", Success, ""},
		{"closed port", tcp("", intstr.FromInt32(int32(closed))), "127.0.0.1", Failure,
			fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", closed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Run(context.Background(), tc.probe, Target{PodIP: tc.podIP, Container: container})
			if err != nil || res != tc.want || msg != tc.message {
				t.Errorf("Run = %v, %q, %v; want %v, %q", res, msg, err, tc.want, tc.message)
			}
		})
	}
}

func TestGRPCProbe(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	serve := func(register bool) int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		if register {
			healthpb.RegisterHealthServer(s, hs)
		}
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
		return l.Addr().(*net.TCPAddr).Port
	}
	withHealth, without, closed := serve(true), serve(false), closedPort(t)

	grpcProbe := func(port int, service *string) *corev1.Probe {
		return &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}}}
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		probe   *corev1.Probe
		want    Result
		message string
	}{
		{"serving, no service name", grpcProbe(withHealth, nil), Success, "service healthy"},
		{"serving, empty service name", grpcProbe(withHealth, str("")), Success, "service healthy"},
		{"not serving", grpcProbe(withHealth, str("db")), Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", grpcProbe(withHealth, str("nope")), Failure,
			"error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", grpcProbe(without, nil), Failure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"nothing listening", grpcProbe(closed, nil), Failure,
			fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, closed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Run(context.Background(), tc.probe, Target{PodIP: "127.0.0.1"})
			if err != nil || res != tc.want || msg != tc.message {
				t.Errorf("Run = %v, %q, %v; want %v, %q", res, msg, err, tc.want, tc.message)
			}
		})
	}
}

// The gRPC probe announces itself as the kubelet does.
func TestGRPCProbeUserAgent(t *testing.T) {
	ua := make(chan string, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			ua <- strings.Join(md["user-agent"], ",")
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(l) }()
	defer s.Stop()
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(l.Addr().(*net.TCPAddr).Port)}}}
	if res, msg, err := Run(context.Background(), p, Target{PodIP: "127.0.0.1"}); res != Success {
		t.Fatalf("Run = %v, %q, %v", res, msg, err)
	}
	if got := <-ua; !strings.HasPrefix(got, "kube-probe/"+kubeVersion()+" grpc-go/") {
		t.Errorf("user agent %q", got)
	}
}

func TestExecProbe(t *testing.T) {
	tests := []struct {
		name    string
		env     []corev1.EnvVar
		command []string
		exec    ExecFunc
		want    Result
		message string
		wantCmd []string
		wantErr string
	}{
		{
			name:    "exit 0 is a success with the output",
			command: []string{"cat", "/tmp/healthy"},
			exec:    func(ctx context.Context, cmd []string) (int, []byte, error) { return 0, []byte("ok\n"), nil },
			want:    Success, message: "ok\n", wantCmd: []string{"cat", "/tmp/healthy"},
		},
		{
			name:    "non-zero exit is a failure with the output",
			command: []string{"sh", "-c", "echo broken; exit 3"},
			exec:    func(ctx context.Context, cmd []string) (int, []byte, error) { return 3, []byte("broken\n"), nil },
			want:    Failure, message: "broken\n",
		},
		{
			name:    "output kept up to 10 KiB",
			command: []string{"yes"},
			exec: func(ctx context.Context, cmd []string) (int, []byte, error) {
				return 1, []byte(strings.Repeat("y", 2*maxOutput)), nil
			},
			want: Failure, message: strings.Repeat("y", maxOutput),
		},
		{
			name:    "static env expanded, valueFrom as empty, unknown kept, $$ escaped",
			env:     []corev1.EnvVar{{Name: "FILE", Value: "/tmp/ok"}, {Name: "FROM", ValueFrom: &corev1.EnvVarSource{}}},
			command: []string{"test", "-f", "$(FILE)", "[$(FROM)]", "$(NOPE)", "$$(FILE)"},
			exec:    func(ctx context.Context, cmd []string) (int, []byte, error) { return 0, nil, nil },
			want:    Success, wantCmd: []string{"test", "-f", "/tmp/ok", "[]", "$(NOPE)", "$(FILE)"},
		},
		{
			name:    "a command that cannot run is an error",
			command: []string{"nope"},
			exec: func(ctx context.Context, cmd []string) (int, []byte, error) {
				return 0, nil, errors.New(`exec: "nope": executable file not found in $PATH`)
			},
			want: Unknown, wantErr: `running "nope" in the container: exec: "nope": executable file not found in $PATH`,
		},
		{
			name:    "no exec function",
			command: []string{"true"},
			want:    Unknown, wantErr: "exec handlers need a command runner for the container",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotCmd []string
			exec := tc.exec
			if exec != nil {
				exec = func(ctx context.Context, cmd []string) (int, []byte, error) {
					gotCmd = cmd
					return tc.exec(ctx, cmd)
				}
			}
			p := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: tc.command}}}
			res, msg, err := Run(context.Background(), p, Target{Container: &corev1.Container{Env: tc.env}, Exec: exec})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || res != Unknown {
					t.Fatalf("Run = %v, %v; want Unknown, %q", res, err, tc.wantErr)
				}
				return
			}
			if err != nil || res != tc.want || msg != tc.message {
				t.Errorf("Run = %v, %q, %v; want %v, %q", res, msg, err, tc.want, tc.message)
			}
			if tc.wantCmd != nil && strings.Join(gotCmd, "\x00") != strings.Join(tc.wantCmd, "\x00") {
				t.Errorf("command %q, want %q", gotCmd, tc.wantCmd)
			}
		})
	}
}

func TestExecProbeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var deadline time.Duration
		start := time.Now()
		exec := func(ctx context.Context, cmd []string) (int, []byte, error) {
			<-ctx.Done() // the command hangs until it is killed
			deadline = time.Since(start)
			return 137, []byte("partial"), ctx.Err()
		}
		p := &corev1.Probe{TimeoutSeconds: 3, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "100"}}}}
		res, msg, err := Run(context.Background(), p, Target{Exec: exec})
		if err != nil || res != Failure || msg != `command "sleep 100" timed out` {
			t.Errorf("Run = %v, %q, %v; want Failure, command \"sleep 100\" timed out", res, msg, err)
		}
		if deadline != 3*time.Second {
			t.Errorf("the command was stopped after %v, want timeoutSeconds (3s)", deadline)
		}

		// A caller that gives up is not a timeout.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, _, err = Run(ctx, p, Target{Exec: exec})
		if res != Unknown || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Run = %v, %v; want Unknown, context.Canceled", res, err)
		}
	})
}

// Run on a cancelled context ends the HTTP attempt at once.
func TestHTTPProbeCancelled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	host, port := hostPort(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	p := httpProbe("/", intstr.FromInt32(int32(port)))
	p.TimeoutSeconds = 30
	res, msg, _ := Run(ctx, p, Target{PodIP: host})
	if res != Failure || !strings.Contains(msg, "context canceled") {
		t.Errorf("Run = %v, %q; want a failure from the cancellation", res, msg)
	}
}

// The gRPC probe's User-Agent names the grpc-go of go.mod, the one the
// kubelet's own probe would carry.
func TestGRPCGoVersionMatchesGoMod(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*google\.golang\.org/grpc v(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("no google.golang.org/grpc in go.mod")
	}
	if string(m[1]) != grpcGoVersion {
		t.Errorf("grpcGoVersion %q; go.mod says %q", grpcGoVersion, m[1])
	}
}
