package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// servicesResult is the Services and cluster DNS benchmark (issue 12).
type servicesResult struct {
	queries, errors int
	dnsSeconds      float64
	dnsLatency      samples
	// readyToTraffic: from the status write that says the backend is Ready
	// to the first connection through the ClusterIP that reaches it.
	readyToTraffic samples
	// pod start (apply --wait) on an empty store, where the apply starts the
	// services owner; with the owner running (one Service kept); with 50
	// Services in the namespace (50 × 7 environment variables per container).
	startFirst, startOwner, start50 samples
}

const svcBackendYAML = `
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox:1.28
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {exec: {command: ['test', '-f', '/tmp/ready']}, periodSeconds: 1}
    command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait']
`

const svcClientYAML = `
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: bench, hostPath: {path: %s, type: Directory}}]
  containers:
  - name: c
    image: busybox:1.28
    volumeMounts: [{name: bench, mountPath: /bench, readOnly: true}]
    command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait']
`

const svcWebYAML = `
apiVersion: v1
kind: Service
metadata: {name: %s}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`

const svcPlainPodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: busybox:1.28, command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait']}]
`

// servicesBench measures the cluster DNS from a pod (dnsquery, a static
// client mounted into it: queries of a Service name one after another), the
// time from a backend turning Ready to its first connection through the
// ClusterIP, and what Services add to a pod's start.
func servicesBench(e *env, dnsquery string, queries, runs int) (*servicesResult, error) {
	res := &servicesResult{}
	binDir := filepath.Join(e.dir, "dnsquery")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(dnsquery)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(binDir, "dnsquery"), data, 0o755); err != nil {
		return nil, err
	}

	// Pod start: on an empty store, the apply starts the services owner.
	plain, err := e.manifest("svc-plain", svcPlainPodYAML)
	if err != nil {
		return nil, err
	}
	startRuns := func(into *samples) error {
		for i := 0; i < runs; i++ {
			_, took, err := e.timed("apply", plain, "--wait", "--timeout", "2m")
			if err != nil {
				return err
			}
			*into = append(*into, took)
			if _, err := e.run("delete", "plain", "--force"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := startRuns(&res.startFirst); err != nil {
		return nil, err
	}
	keep, err := e.manifest("svc-keep", fmt.Sprintf(svcWebYAML, "keep"))
	if err != nil {
		return nil, err
	}
	if _, err := e.run("apply", keep); err != nil {
		return nil, err
	}
	if err := startRuns(&res.startOwner); err != nil {
		return nil, err
	}
	var many []string
	for i := 0; i < 49; i++ {
		many = append(many, fmt.Sprintf(svcWebYAML, fmt.Sprintf("svc-%02d", i)))
	}
	manyPath, err := e.manifest("svc-many", strings.Join(many, "---\n"))
	if err != nil {
		return nil, err
	}
	if _, err := e.run("apply", manyPath); err != nil {
		return nil, err
	}
	if err := startRuns(&res.start50); err != nil {
		return nil, err
	}
	if _, err := e.run("delete", "-f", manyPath); err != nil {
		return nil, err
	}

	// DNS from a pod.
	web, err := e.manifest("svc-web", fmt.Sprintf(svcWebYAML, "web"))
	if err != nil {
		return nil, err
	}
	client, err := e.manifest("svc-client", fmt.Sprintf(svcClientYAML, binDir))
	if err != nil {
		return nil, err
	}
	if _, err := e.run("apply", "-f", web, "-f", client, "--wait", "--timeout", "2m"); err != nil {
		return nil, err
	}
	out, err := e.run("exec", "client", "--", "/bench/dnsquery", "-n", strconv.Itoa(queries), "web.default.svc.cluster.local")
	if err != nil {
		return nil, err
	}
	var q struct {
		Queries, Errors int
		Seconds         float64
		Latencies       []int64 `json:"latencies_ns"`
	}
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		return nil, fmt.Errorf("dnsquery printed %q: %w", out, err)
	}
	res.queries, res.errors, res.dnsSeconds = q.Queries, q.Errors, q.Seconds
	for _, l := range q.Latencies {
		res.dnsLatency = append(res.dnsLatency, time.Duration(l))
	}
	if q.Errors > 0 {
		return res, fmt.Errorf("%d of %d DNS queries from the pod failed", q.Errors, q.Queries)
	}

	// Ready → traffic through the ClusterIP.
	svcOut, err := e.run("get", "svc", "web", "-o", "json")
	if err != nil {
		return nil, err
	}
	var svc corev1.Service
	if err := json.Unmarshal([]byte(svcOut), &svc); err != nil || svc.Spec.ClusterIP == "" {
		return nil, fmt.Errorf("get svc web -o json printed %q: %v", svcOut, err)
	}
	target := svc.Spec.ClusterIP + ":80"
	for i := 0; i < runs; i++ {
		name := fmt.Sprintf("backend-%d", i)
		path, err := e.manifest(name, fmt.Sprintf(svcBackendYAML, name))
		if err != nil {
			return nil, err
		}
		if _, err := e.run("apply", path); err != nil {
			return nil, err
		}
		d, err := readyToTraffic(e, name, target)
		if err != nil {
			return nil, err
		}
		res.readyToTraffic = append(res.readyToTraffic, d)
		if _, err := e.run("delete", name, "--force"); err != nil {
			return nil, err
		}
	}
	if _, err := e.run("delete", "client", "--force"); err != nil {
		return nil, err
	}
	if _, err := e.run("delete", "svc", "--all"); err != nil {
		return nil, err
	}
	return res, nil
}

// readyToTraffic makes the running, not yet Ready backend Ready while a
// client in the client pod connects to the Service every millisecond, and
// returns the time from the status write that says Ready to the first
// accepted connection (both on the host's clock).
func readyToTraffic(e *env, name, target string) (time.Duration, error) {
	deadline := time.Now().Add(2 * time.Minute)
	var statusFile string
	for {
		r, err := e.record(name)
		if err == nil && len(r.Pod.Status.ContainerStatuses) == 1 && r.Pod.Status.ContainerStatuses[0].State.Running != nil {
			statusFile = r.Paths.StatusFile()
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s never ran", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	type conn struct {
		out string
		err error
	}
	done := make(chan conn, 1)
	go func() {
		out, err := e.run("exec", "client", "--", "/bench/dnsquery", "-connect", target, "-timeout", "60s")
		done <- conn{out, err}
	}()
	time.Sleep(500 * time.Millisecond) // the client is connecting (and refused)
	if _, err := e.run("exec", name, "--", "touch", "/tmp/ready"); err != nil {
		return 0, err
	}
	var readyAt time.Time
	for readyAt.IsZero() {
		v, err := readStatus(statusFile)
		if err == nil {
			for _, c := range v.status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					readyAt = v.written
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s never became Ready", name)
		}
		time.Sleep(2 * time.Millisecond)
	}
	c := <-done
	if c.err != nil {
		return 0, c.err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(c.out), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dnsquery -connect printed %q", c.out)
	}
	return time.Unix(0, ns).Sub(readyAt), nil
}
