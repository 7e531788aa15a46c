package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestLivenessExecProbeRestartsTheContainer(t *testing.T) {
	e := newEnv(t)
	// Healthy for a moment, then the health file disappears.
	e.fast("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: liveness}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'touch /tmp/healthy; sleep 2; rm -f /tmp/healthy; sleep 600']
    livenessProbe:
      exec: {command: ['cat', '/tmp/healthy']}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
`))
	p := e.waitFor("liveness", time.Minute, "restarted by its liveness probe", func(p *corev1.Pod) bool {
		return containerState(p, "app").RestartCount >= 1
	})
	var unhealthy, killing bool
	for _, ev := range e.events(p) {
		msg, _ := ev["message"].(string)
		if ev["reason"] == "Unhealthy" && strings.HasPrefix(msg, "Liveness probe failed:") {
			unhealthy = true
		}
		if ev["reason"] == "Killing" && msg == "Container app failed liveness probe, will be restarted" {
			killing = true
		}
	}
	if !unhealthy || !killing {
		t.Fatalf("events lack Unhealthy (%v) or Killing (%v): %v", unhealthy, killing, e.events(p))
	}
	last := containerState(p, "app").LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 && last.ExitCode != 143 {
		t.Fatalf("lastState %+v, want the killed run", last)
	}
}

func TestReadinessProbeTogglesReady(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: readiness}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait']
    readinessProbe:
      exec: {command: ['cat', '/tmp/ready']}
      periodSeconds: 1
`)
	p := e.waitFor("readiness", 30*time.Second, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if containerState(p, "app").Ready {
		t.Fatal("ready before the probe passed")
	}
	if r := e.must("get", "readiness").stdout; !strings.Contains(r, "0/1") || !strings.Contains(r, "Running") {
		t.Fatalf("get: %s", r)
	}
	e.must("exec", "readiness", "--", "touch", "/tmp/ready")
	e.waitFor("readiness", 30*time.Second, "ready", func(p *corev1.Pod) bool {
		return containerState(p, "app").Ready && hasCondition(p, corev1.PodReady, corev1.ConditionTrue)
	})
	if r := e.must("get", "readiness").stdout; !strings.Contains(r, "1/1") {
		t.Fatalf("READY column: %s", r)
	}
	e.must("exec", "readiness", "--", "rm", "/tmp/ready")
	p = e.waitFor("readiness", 30*time.Second, "unready again", func(p *corev1.Pod) bool {
		return !containerState(p, "app").Ready && hasCondition(p, corev1.ContainersReady, corev1.ConditionFalse)
	})
	if rc := containerState(p, "app").RestartCount; rc != 0 {
		t.Fatalf("a readiness failure restarted the container (%d)", rc)
	}
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}

func TestHTTPAndTCPProbesReachThePod(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: busybox:1.28
    command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && httpd -f -p 8080 -h /www']
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /healthz, port: http}
      periodSeconds: 1
    livenessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
    startupProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 30
`)
	p := e.waitFor("web", 30*time.Second, "ready", func(p *corev1.Pod) bool { return containerState(p, "httpd").Ready })
	if s := containerState(p, "httpd"); s.Started == nil || !*s.Started || s.RestartCount != 0 {
		t.Fatalf("status %+v", s)
	}
	// A probe of a path that does not exist fails with the kubelet's message.
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: web404}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: busybox:1.28
    command: ['sh', '-c', 'mkdir -p /www && httpd -f -p 8080 -h /www']
    readinessProbe:
      httpGet: {path: /missing, port: 8080}
      periodSeconds: 1
`)
	p = e.waitFor("web404", 30*time.Second, "reported unhealthy", func(p *corev1.Pod) bool {
		for _, ev := range e.events(p) {
			if ev["reason"] == "Unhealthy" && strings.Contains(ev["message"].(string), "HTTP probe failed with statuscode: 404") {
				return true
			}
		}
		return false
	})
	if containerState(p, "httpd").Ready {
		t.Fatal("ready although its probe fails")
	}
}

func TestLifecycleHooks(t *testing.T) {
	e := newEnv(t)
	out := t.TempDir()
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'trap "echo TERM >> /out/log; exit 0" TERM; echo main >> /out/log; while true; do sleep 0.1; done']
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
      postStart:
        exec: {command: ['sh', '-c', 'echo postStart >> /out/log']}
      preStop:
        exec: {command: ['sh', '-c', 'echo preStop >> /out/log; sleep 1']}
  volumes: [{name: out, hostPath: {path: `+out+`}}]
`, "--wait")
	e.waitFor("hooks", 10*time.Second, "postStart done", func(*corev1.Pod) bool {
		data, _ := os.ReadFile(filepath.Join(out, "log"))
		return strings.Contains(string(data), "postStart")
	})
	e.must("delete", "hooks")
	data, _ := os.ReadFile(filepath.Join(out, "log"))
	lines := strings.Fields(string(data))
	// postStart runs alongside the main process; preStop comes before SIGTERM.
	if len(lines) != 4 || lines[2] != "preStop" || lines[3] != "TERM" {
		t.Fatalf("hook order %v, want main/postStart, then preStop, then TERM", lines)
	}
}

func TestFailingPostStartHookKillsTheContainer(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.28
    command: ['sleep', '3600']
    lifecycle:
      postStart:
        exec: {command: ['sh', '-c', 'echo nope; exit 3']}
`)
	p := e.waitPhase("badhook", corev1.PodFailed, 30*time.Second)
	found := false
	for _, ev := range e.events(p) {
		if ev["reason"] == "FailedPostStartHook" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no FailedPostStartHook event: %v", e.events(p))
	}
}

// As the Kubernetes e2e lifecycle tests do: httpGet hooks call a handler pod
// (busybox httpd -vv logs every request's path).
func TestHTTPGetHooksReachAHandlerPod(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: handler}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: busybox:1.28
    command: ['sh', '-c', 'mkdir -p /www && touch /www/poststart /www/prestop && httpd -f -vv -p 8080 -h /www']
`, "--wait")
	ip := e.pod("handler").Status.PodIP
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: hooked}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox:1.28
    command: ['sleep', '3600']
    lifecycle:
      postStart:
        httpGet: {host: `+ip+`, port: 8080, path: /poststart}
      preStop:
        httpGet: {host: `+ip+`, port: 8080, path: /prestop}
`, "--wait")
	e.waitFor("handler", 20*time.Second, "called by postStart", func(*corev1.Pod) bool {
		return strings.Contains(e.must("logs", "handler").stdout, "url:/poststart")
	})
	e.must("delete", "hooked")
	if out := e.must("logs", "handler").stdout; !strings.Contains(out, "url:/prestop") {
		t.Fatalf("handler saw %q, want the preStop call", out)
	}
}
