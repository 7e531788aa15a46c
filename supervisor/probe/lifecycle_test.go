package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"golang.org/x/net/http/httpproxy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNoProxy comes first in the package so that nothing has read (and cached)
// the proxy environment before it: a probe must ignore the host's proxy
// settings, as the kubelet's probers do.
func TestNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("NO_PROXY", "")
	u, _ := url.Parse("http://192.0.2.10:8080/healthz") // TEST-NET-1: only looked at, never dialled
	if p, _ := httpproxy.FromEnvironment().ProxyFunc()(u); p == nil {
		t.Fatal("precondition: the environment does not ask for a proxy")
	}
	req := &http.Request{URL: u}
	if p, err := probeTransport.Proxy(req); p != nil || err != nil {
		t.Errorf("probe transport uses proxy %v (err %v)", p, err)
	}
	if tr := lifecycleClient.Transport.(*http.Transport); tr.Proxy != nil {
		if p, err := tr.Proxy(req); p != nil || err != nil {
			t.Errorf("lifecycle transport uses proxy %v (err %v)", p, err)
		}
	}
}

func testPod() *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web-1", "default", "0a1b"
	return pod
}

func TestRunHandlerExec(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		exec    ExecFunc
		msg     string
		err     bool
	}{
		{
			name:    "success",
			command: []string{"sh", "-c", "echo $(NOT_EXPANDED)"},
			exec:    func(ctx context.Context, cmd []string) (int, []byte, error) { return 0, []byte("fine"), nil },
		},
		{
			name:    "non-zero exit",
			command: []string{"sh", "-c", "echo bye; exit 2"},
			exec:    func(ctx context.Context, cmd []string) (int, []byte, error) { return 2, []byte("bye\n"), nil },
			msg: `Exec lifecycle hook ([sh -c echo bye; exit 2]) for Container "app" in Pod "web-1_default(0a1b)" failed - ` +
				`error: command 'sh -c echo bye; exit 2' exited with 2: bye` + "\n" + `, message: "bye\n"`,
			err: true,
		},
		{
			name:    "cannot start",
			command: []string{"nope"},
			exec: func(ctx context.Context, cmd []string) (int, []byte, error) {
				return 0, nil, errors.New("no such file")
			},
			msg: `Exec lifecycle hook ([nope]) for Container "app" in Pod "web-1_default(0a1b)" failed - error: no such file, message: ""`,
			err: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			exec := func(ctx context.Context, cmd []string) (int, []byte, error) {
				got = cmd
				return tc.exec(ctx, cmd)
			}
			h := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: tc.command}}
			msg, err := RunHandler(context.Background(), h, Target{Pod: testPod(), Container: &corev1.Container{Name: "app"}, Exec: exec})
			if (err != nil) != tc.err || msg != tc.msg {
				t.Errorf("RunHandler = %q, %v; want %q (error %v)", msg, err, tc.msg, tc.err)
			}
			// Hooks run their command as written: no $(VAR) expansion.
			if strings.Join(got, " ") != strings.Join(tc.command, " ") {
				t.Errorf("ran %q, want %q", got, tc.command)
			}
		})
	}
}

func TestRunHandlerHTTP(t *testing.T) {
	type seen struct {
		path, ua, auth string
		tls            bool
	}
	var mu sync.Mutex
	var reqs []seen
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.URL.Path, r.UserAgent(), r.Header.Get("Authorization"), r.TLS != nil})
		mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		case "/away":
			http.Redirect(w, r, "http://localhost:1/elsewhere", http.StatusFound)
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	host, plainPort := hostPort(t, plain.URL)
	_, securePort := hostPort(t, secure.URL)
	closed := closedPort(t)
	container := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: int32(plainPort)}}}

	get := func(scheme corev1.URIScheme, path string, port intstr.IntOrString, headers ...corev1.HTTPHeader) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: scheme, Path: path, Port: port, HTTPHeaders: headers}}
	}
	tests := []struct {
		name   string
		h      *corev1.LifecycleHandler
		podIP  string
		msg    string
		seen   []seen
		events []Event
	}{
		{
			name:  "a 500 answer is not a failure",
			h:     get("", "/fail", intstr.FromInt32(int32(plainPort))),
			podIP: host,
			seen:  []seen{{path: "/fail", ua: "kube-lifecycle/" + kubeVersion()}},
		},
		{
			name:  "named port, other-host redirect not followed",
			h:     get(corev1.URISchemeHTTP, "/away", intstr.FromString("admin")),
			podIP: host,
			seen:  []seen{{path: "/away", ua: "kube-lifecycle/" + kubeVersion()}},
		},
		{
			name:  "https without certificate checks",
			h:     get(corev1.URISchemeHTTPS, "/s", intstr.FromInt32(int32(securePort))),
			podIP: host,
			seen:  []seen{{path: "/s", ua: "kube-lifecycle/" + kubeVersion(), tls: true}},
		},
		{
			name:  "https hook answered in http is retried in http without Authorization",
			h:     get(corev1.URISchemeHTTPS, "/fallback", intstr.FromInt32(int32(plainPort)), corev1.HTTPHeader{Name: "Authorization", Value: "Bearer x"}),
			podIP: host,
			seen:  []seen{{path: "/fallback", ua: "kube-lifecycle/" + kubeVersion()}},
			events: []Event{{Reason: ReasonLifecycleHTTPFallback,
				Message: fmt.Sprintf("request to HTTPS lifecycle hook %s:%d got HTTP response, retry with HTTP succeeded", host, plainPort)}},
		},
		{
			name:  "connection refused",
			h:     get("", "/stop", intstr.FromInt32(int32(closed))),
			podIP: host,
			msg: fmt.Sprintf(`HTTP lifecycle hook (/stop) for Container "app" in Pod "web-1_default(0a1b)" failed - error: `+
				`Get "http://127.0.0.1:%d/stop": dial tcp 127.0.0.1:%d: connect: connection refused`, closed, closed),
		},
		{
			name: "no pod IP",
			h:    get("", "/stop", intstr.FromInt32(int32(plainPort))),
			msg: `HTTP lifecycle hook (/stop) for Container "app" in Pod "web-1_default(0a1b)" failed - error: ` +
				`failed to find networking container: the pod has no IP`,
		},
		{
			name:  "unknown port name",
			h:     get("", "/stop", intstr.FromString("nope")),
			podIP: host,
			msg: `HTTP lifecycle hook (/stop) for Container "app" in Pod "web-1_default(0a1b)" failed - error: ` +
				`strconv.Atoi: parsing "nope": invalid syntax`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			reqs = nil
			mu.Unlock()
			var events []Event
			tgt := Target{Pod: testPod(), PodIP: tc.podIP, Container: container, Event: func(e Event) { events = append(events, e) }}
			msg, err := RunHandler(context.Background(), tc.h, tgt)
			if (err != nil) != (tc.msg != "") || msg != tc.msg {
				t.Errorf("RunHandler = %q, %v; want %q", msg, err, tc.msg)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(reqs) != fmt.Sprint(tc.seen) {
				t.Errorf("requests %+v, want %+v", reqs, tc.seen)
			}
			if fmt.Sprint(events) != fmt.Sprint(tc.events) {
				t.Errorf("events %+v, want %+v", events, tc.events)
			}
		})
	}
}

func TestRunHandlerSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tgt := Target{Pod: testPod(), Container: &corev1.Container{Name: "app"}}
		h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}}
		if msg, err := RunHandler(context.Background(), h, tgt); msg != "" || err != nil {
			t.Errorf("sleep 30 = %q, %v", msg, err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var msg string
		var err error
		go func() { msg, err = RunHandler(ctx, h, tgt); close(done) }()
		synctest.Wait()
		cancel()
		<-done
		want := `Sleep lifecycle hook (30) for Container "app" in Pod "web-1_default(0a1b)" failed - error: container terminated before sleep hook finished`
		if msg != want || err == nil {
			t.Errorf("cancelled sleep = %q, %v; want %q", msg, err, want)
		}
	})
}

func TestRunHandlerInvalid(t *testing.T) {
	msg, err := RunHandler(context.Background(), &corev1.LifecycleHandler{}, Target{})
	if err == nil || !strings.HasPrefix(msg, "Cannot run handler: invalid handler: ") {
		t.Errorf("RunHandler = %q, %v", msg, err)
	}
}
