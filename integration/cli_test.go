package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newCLIEnv is newEnv with names that carry the cli tests' tag (pcl), so the
// bridge and cgroups these tests create are recognisably theirs.
func newCLIEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	n := envCounter.Load()
	e.bridge = fmt.Sprintf("pcl%d-%d", os.Getpid()%10000, n)
	e.cgroupParent = fmt.Sprintf("/podrun-pcl-%d-%d", os.Getpid(), n)
	return e
}

// start runs podrun in the background; its stdout arrives line by line on lines.
type bg struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    []string
	stderr bytes.Buffer
	done   chan struct{}
}

func (e *env) start(args ...string) *bg {
	e.t.Helper()
	b := &bg{cmd: exec.Command(podrunBin, e.args(args...)...), done: make(chan struct{})}
	b.cmd.Stderr = &b.stderr
	pipe, err := b.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			b.mu.Lock()
			b.out = append(b.out, sc.Text())
			b.mu.Unlock()
		}
	}()
	e.t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	})
	return b
}

func (b *bg) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.out...)
}

// waitLines waits until cond holds for the output so far.
func (b *bg) waitLines(t *testing.T, timeout time.Duration, what string, cond func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l := b.lines()
		if cond(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s; output:\n%s\nstderr:\n%s", what, timeout, strings.Join(l, "\n"), b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exit waits for the process and returns its exit code.
func (b *bg) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	errc := make(chan error, 1)
	go func() { <-b.done; errc <- b.cmd.Wait() }()
	select {
	case err := <-errc:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("podrun %v still running after %s", b.cmd.Args, timeout)
	}
	return -1
}

// The false success of issue 14: a restartPolicy-Always pod whose container
// exits at once must fail apply --wait, quickly, naming the exit code.
func TestCLIApplyWaitFailsAtOnceOnCrash(t *testing.T) {
	e := newCLIEnv(t)
	for i := range 3 {
		name := fmt.Sprintf("bad%d", i)
		startAt := time.Now()
		r := e.podrun("apply", "-f", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'echo connecting to the database; echo no database >&2; exit 3']
`, name)), "--wait", "--timeout", "1m")
		took := time.Since(startAt)
		if r.code != 1 {
			t.Fatalf("apply --wait of a crashing pod (round %d): %s", i, r)
		}
		for _, want := range []string{"container app exited with code 3", "Error", "no database", "connecting to the database"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("round %d: message lacks %q:\n%s", i, want, r.stderr)
			}
		}
		if took > 8*time.Second {
			t.Errorf("round %d: apply --wait took %s to report the crash", i, took)
		}
	}
	// podrun wait --for=condition=Ready fails the same way.
	if r := e.podrun("wait", "--for=condition=Ready", "pod/bad0", "--timeout", "30s"); r.code != 1 || !strings.Contains(r.stderr, "exited with code 3") {
		t.Errorf("wait --for=condition=Ready of a crashing pod: %s", r)
	}
	// With --allow-restarts the wait goes on until its timeout.
	if r := e.podrun("wait", "--for=condition=Ready", "bad1", "--timeout", "2s", "--allow-restarts"); r.code != 124 {
		t.Errorf("wait --allow-restarts of a crashing pod: %s, want 124", r)
	}
	// A healthy server is Ready; progress lines name each STATUS once.
	r := e.podrun("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  initContainers: [{name: init, image: busybox:1.28, command: ['sleep', '0.3']}]
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
`), "--wait")
	if r.code != 0 || !strings.Contains(r.stderr, "pod/good ready") || !strings.Contains(r.stderr, "pod/good Running") {
		t.Fatalf("apply --wait of a healthy pod: %s", r)
	}
	if strings.Count(r.stderr, "pod/good Running") != 1 {
		t.Errorf("progress repeats a STATUS:\n%s", r.stderr)
	}
	if r := e.podrun("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: quiet}
spec:
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
`), "--wait", "-q"); r.code != 0 || strings.Contains(r.stderr, "Running") {
		t.Errorf("apply --wait -q: %s", r)
	}
}

// Flags go anywhere; unknown verbs and flags are usage errors with a suggestion.
func TestCLIFlagsAnywhereAndSuggestions(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: nsd, labels: {app: web}}
spec:
  restartPolicy: Never
  containers: [{name: app, image: busybox:1.28, command: ['true']}]
`), "-n", "ci", "--wait")
	if r := e.must("get", "pods", "-n", "ci", "-o", "name"); r.stdout != "pod/nsd\n" {
		t.Errorf("get pods -n ci: %q", r.stdout)
	}
	if r := e.podrun("wiat"); r.code != 2 || !strings.Contains(r.stderr, "wait") || !strings.Contains(r.stderr, "Did you mean") {
		t.Errorf("unknown verb: %s", r)
	}
	if r := e.podrun("get", "--sho-labels"); r.code != 2 || !strings.Contains(r.stderr, "--show-labels") {
		t.Errorf("unknown flag: %s", r)
	}
	// Names are names, not patterns.
	if r := e.podrun("delete", "*", "-n", "ci"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("delete '*': %s", r)
	}
	e.must("get", "nsd", "-n", "ci")

	// A relative cgroup parent would land below the caller's own cgroup: a
	// usage error before anything is recorded (it used to be recorded, fail
	// in the supervisor, and fail the pod's delete too).
	root := t.TempDir()
	cmd := exec.Command(podrunBin, "--root", root, "--run-root", filepath.Join(root, "run"), "--cgroup-parent", "podrun-relative",
		"apply", "-f", e.manifest("apiVersion: v1\nkind: Pod\nmetadata: {name: rel}\nspec:\n  containers: [{name: app, image: busybox:1.28}]\n"))
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `--cgroup-parent: cgroup parent "podrun-relative" must be an absolute path`) {
		t.Errorf("apply with a relative --cgroup-parent: exit %d\n%s", code, out)
	}
	if pods, _ := filepath.Glob(filepath.Join(root, "pods", "*")); len(pods) > 0 {
		t.Errorf("apply with a relative --cgroup-parent recorded %v", pods)
	}
}

// -f repeated, -f DIR, -R and -f -, all in one transaction.
func TestCLIApplyManyInputsInOneTransaction(t *testing.T) {
	e := newCLIEnv(t)
	pod := func(name string) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers: [{name: app, image: busybox:1.28, command: ['true']}]
`, name)
	}
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(pod("in-a")), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub", "b.yml"), []byte(pod("in-b")), 0o644))
	must(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a manifest"), 0o644))
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	must(os.WriteFile(bad, []byte(pod("in-bad")+"    bogus: 1\n"), 0o644))

	// A bad file anywhere: nothing is created.
	r := e.podrunIn(pod("in-stdin"), "apply", "-f", dir, "-R", "-f", "-", "-f", bad)
	if r.code != 2 || !strings.Contains(r.stderr, "bad.yaml") {
		t.Fatalf("apply with a bad file: %s", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "" {
		t.Fatalf("a failed apply created pods: %q", r.stdout)
	}
	// Without -R only the directory's own files.
	r = e.podrunIn(pod("in-stdin"), "apply", "-f", dir, "-f", "-", "--dry-run=client", "-o", "name")
	if r.code != 0 || r.stdout != "pod/in-a\npod/in-stdin\n" {
		t.Fatalf("apply --dry-run=client -o name: %s", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "" {
		t.Fatalf("a dry run created pods: %q", r.stdout)
	}
	r = e.podrunIn(pod("in-stdin"), "apply", "-f", dir, "-R", "-f", "-", "--wait")
	if r.code != 0 {
		t.Fatalf("apply -f DIR -R -f -: %s", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "pod/in-a\npod/in-b\npod/in-stdin\n" {
		t.Fatalf("pods after apply: %q", r.stdout)
	}
	if r := e.must("delete", "-f", dir, "-R"); !strings.Contains(r.stdout, "in-a") || !strings.Contains(r.stdout, "in-b") {
		t.Fatalf("delete -f DIR -R: %s", r)
	}
}

// apply --wait sleeps without a timer, and still notices at once that the
// pod's supervisor died (its pidfd turns readable): the pod is Unknown and
// the wait fails, not seconds later at the next look.
func TestCLIApplyWaitSeesDeadSupervisor(t *testing.T) {
	e := newCLIEnv(t)
	w := e.start("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: orphan}
spec:
  restartPolicy: Never
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
`), "--wait")
	// The pod is recorded by the apply in the background: look until it runs.
	for deadline := time.Now().Add(60 * time.Second * timeoutScale); ; time.Sleep(100 * time.Millisecond) {
		if r := e.podrun("get", "orphan", "-o", "jsonpath={.status.phase}"); r.code == 0 && r.stdout == "Running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod orphan not Running; apply --wait: %q %q", w.lines(), w.stderr.String())
		}
	}
	p := e.pod("orphan")
	time.Sleep(500 * time.Millisecond) // the wait is asleep again
	killed := time.Now()
	e.crashSupervisor(string(p.UID))
	code := w.exit(t, 30*time.Second)
	took := time.Since(killed)
	if code != 1 || !strings.Contains(w.stderr.String()+strings.Join(w.lines(), "\n"), "Unknown") {
		t.Fatalf("apply --wait after its pod's supervisor died: exit %d, stdout %q, stderr %q; want exit 1, Unknown", code, w.lines(), w.stderr.String())
	}
	if limit := 2500 * time.Millisecond * timeoutScale; took > limit {
		t.Errorf("apply --wait noticed the dead supervisor %s after the kill, want well under %s", took, limit)
	}
	e.must("delete", "orphan", "--force")
}

// A file whose second pod conflicts with a pod that exists creates nothing:
// every conflict is found before the first object is stored.
func TestCLIApplyConflictCreatesNothing(t *testing.T) {
	e := newCLIEnv(t)
	pod := func(name, cmd string) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers: [{name: app, image: busybox:1.28, command: ['sh', '-c', '%s']}]
`, name, cmd)
	}
	e.must("apply", "-f", e.manifest(pod("tx-b", "sleep 3600")))
	file := e.manifest(`
apiVersion: v1
kind: ConfigMap
metadata: {name: tx-config}
data: {k: v}
---` + pod("tx-a", "sleep 3600") + "---" + pod("tx-b", "sleep 7200"))
	r := e.podrun("apply", "-f", file)
	// tx-b's command changed: an update the API server forbids for a pod.
	if r.code != 2 || !strings.Contains(r.stderr, `The Pod "tx-b" is invalid`) || strings.Contains(r.stdout, "created") {
		t.Fatalf("apply of a file whose second pod conflicts: %s\nwant exit 2 naming tx-b, nothing created", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "pod/tx-b\n" {
		t.Fatalf("pods after the refused apply: %q, want only pod/tx-b", r.stdout)
	}
	if r := e.must("get", "configmaps", "-o", "name"); r.stdout != "" {
		t.Fatalf("configmaps after the refused apply: %q", r.stdout)
	}
	// Without the conflict the same file applies whole.
	e.must("delete", "tx-b", "--grace-period", "0", "--force")
	r = e.must("apply", "-f", file)
	if !strings.Contains(r.stdout, "pod/tx-a created") || !strings.Contains(r.stdout, "pod/tx-b created") || !strings.Contains(r.stdout, "configmap/tx-config created") {
		t.Fatalf("apply after the delete: %s", r)
	}
}

// A Service whose ClusterIP cannot be allocated (outside the range, or taken
// by another Service) fails apply's pre-check: the ConfigMaps, Secrets, other
// Services and pods of the same apply are not stored either.
func TestCLIApplyServiceAddressCreatesNothing(t *testing.T) {
	e := newCLIEnv(t)
	ip := strings.TrimSuffix(e.serviceCIDR, "0/24") + "50"
	e.must("apply", "-f", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: holder}
spec:
  clusterIP: %s
  ports: [{port: 80}]
`, ip)))
	file := func(clusterIP string) string {
		return e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: tx-config}
data: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: tx-secret}
stringData: {k: v}
---
apiVersion: v1
kind: Service
metadata: {name: tx-first}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: tx-svc}
spec:
  clusterIP: %s
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: tx-pod}
spec:
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
`, clusterIP))
	}
	for _, tc := range []struct{ what, clusterIP, want string }{
		{"an address taken by another Service", ip, "provided IP is already allocated"},
		{"an address outside the range", "192.0.2.10", "is not in the valid range"},
	} {
		r := e.podrun("apply", "-f", file(tc.clusterIP))
		if r.code != 2 || !strings.Contains(r.stderr, `Service "tx-svc" is invalid`) || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Fatalf("apply with %s: %s\nwant exit 2 naming tx-svc (%q), nothing created", tc.what, r, tc.want)
		}
		for _, kind := range []string{"pods", "configmaps", "secrets"} {
			if r := e.must("get", kind, "-o", "name"); r.stdout != "" {
				t.Errorf("%s after the apply refused for %s: %q", kind, tc.what, r.stdout)
			}
		}
		if r := e.must("get", "svc", "-o", "name"); r.stdout != "service/holder\n" {
			t.Errorf("services after the apply refused for %s: %q, want only service/holder", tc.what, r.stdout)
		}
	}
	// With a free address the same file applies whole.
	r := e.must("apply", "-f", file(strings.TrimSuffix(e.serviceCIDR, "0/24")+"51"))
	for _, want := range []string{"configmap/tx-config created", "secret/tx-secret created", "service/tx-first created", "service/tx-svc created", "pod/tx-pod created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply with a free address: %s\nwant %q", r, want)
		}
	}
	e.must("delete", "tx-pod", "--force")
	e.must("delete", "svc", "--all")
}

// wait takes the other kinds of the store, through their table (Service,
// ConfigMap, Secret…): delete, create and jsonpath, woken by file events.
func TestCLIWaitOtherKinds(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Service
metadata: {name: wsvc, labels: {app: w}}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: wcm}
data: {mode: one}
`))
	if r := e.must("wait", "--for=jsonpath={.spec.type}=ClusterIP", "svc/wsvc", "--timeout", "10s"); r.stdout != "service/wsvc condition met\n" {
		t.Fatalf("wait --for=jsonpath on a Service: %s", r)
	}
	if r := e.podrun("wait", "--for=jsonpath={.data.mode}=two", "configmap", "wcm", "--timeout", "1s"); r.code != 124 {
		t.Fatalf("wait for a value the ConfigMap does not have: %s\nwant exit 124", r)
	}
	// A value that arrives while waiting; an object created while waiting.
	mode := e.start("wait", "--for=jsonpath={.data.mode}=two", "cm/wcm", "--timeout", "1m")
	created := e.start("wait", "--for=create", "secret/wsecret", "--timeout", "1m")
	time.Sleep(500 * time.Millisecond)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: ConfigMap
metadata: {name: wcm}
data: {mode: two}
---
apiVersion: v1
kind: Secret
metadata: {name: wsecret}
stringData: {k: v}
`))
	if code := mode.exit(t, 30*time.Second); code != 0 || strings.Join(mode.lines(), "\n") != "configmap/wcm condition met" {
		t.Fatalf("wait for the ConfigMap's new value: exit %d, %q, %s", code, mode.lines(), mode.stderr.String())
	}
	if code := created.exit(t, 30*time.Second); code != 0 || strings.Join(created.lines(), "\n") != "secret/wsecret condition met" {
		t.Fatalf("wait --for=create secret: exit %d, %q, %s", code, created.lines(), created.stderr.String())
	}
	// delete, chosen by a selector: it returns once the Service is gone and,
	// it being the last object, the services owner has exited.
	gone := e.start("wait", "--for=delete", "svc", "-l", "app=w", "--timeout", "1m")
	time.Sleep(500 * time.Millisecond)
	select {
	case <-gone.done:
		t.Fatalf("wait --for=delete returned before the delete: %q %s", gone.lines(), gone.stderr.String())
	default:
	}
	e.must("delete", "svc", "wsvc")
	if code := gone.exit(t, 30*time.Second); code != 0 || strings.Join(gone.lines(), "\n") != "service/wsvc condition met" {
		t.Fatalf("wait --for=delete svc: exit %d, %q, %s", code, gone.lines(), gone.stderr.String())
	}
	if r := e.must("wait", "--for=delete", "svc/never-was", "--timeout", "5s"); r.stdout != "" {
		t.Errorf("wait --for=delete of an object that never existed: %s, want nothing printed", r)
	}
	// Types podrun does not keep are refused as kubectl refuses them, exit 1,
	// never taken for pod names.
	for _, args := range [][]string{
		{"wait", "--for=delete", "widget/x"},
		{"wait", "--for=delete", "pod/a", "hpa/x"},
		{"get", "hpa"},
		{"get", "horizontalpodautoscalers.autoscaling", "web"},
		{"describe", "nodes"},
		{"delete", "ingresses/migrate"},
	} {
		r := e.podrun(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "error: the server doesn't have a resource type") || strings.Contains(r.stderr, "error: error:") || strings.Contains(r.stderr, "pods \"") {
			t.Errorf("podrun %v: %s\nwant exit 1 and kubectl's message", args, r)
		}
	}
}

// wait --for=delete returns once everything the pod held is released.
func TestCLIWaitForDelete(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: slowstop, labels: {app: db}}
spec:
  terminationGracePeriodSeconds: 2
  containers: [{name: app, image: busybox:1.28, command: ['sh', '-c', 'trap "" TERM; sleep 3600']}]
`), "--wait")
	w := e.start("wait", "--for=delete", "-l", "app=db", "--timeout", "1m")
	time.Sleep(300 * time.Millisecond)
	del := e.start("delete", "slowstop")
	if code := w.exit(t, time.Minute); code != 0 {
		t.Fatalf("wait --for=delete: exit %d, %s", code, w.stderr.String())
	}
	if got := strings.Join(w.lines(), "\n"); got != "pod/slowstop condition met" {
		t.Errorf("wait printed %q", got)
	}
	// The test's own delete may still be finishing (it waits for the services
	// owner to exit once the pod is gone): it is not the pod's.
	var left []string
	for _, l := range e.leftovers() {
		if !strings.HasPrefix(l, fmt.Sprintf("podrun process %d:", del.cmd.Process.Pid)) {
			left = append(left, l)
		}
	}
	if len(left) > 0 {
		t.Errorf("wait --for=delete returned with leftovers: %v", left)
	}
	if code := del.exit(t, time.Minute); code != 0 {
		t.Errorf("delete: exit %d", code)
	}
	// A pod that is not there is deleted already; jsonpath waits for a value.
	e.must("wait", "--for=delete", "pod/slowstop")
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  restartPolicy: Never
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '0.5']}]
`))
	// "job" alone names the Job type, as for kubectl: the pod is pod/job.
	if r := e.must("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/job", "--timeout", "30s"); r.stdout != "pod/job condition met\n" {
		t.Errorf("wait --for=jsonpath: %q", r.stdout)
	}
	if r := e.podrun("wait", "--for=jsonpath={.status.phase}=Running", "pod/job", "--timeout", "1s"); r.code != 124 {
		t.Errorf("wait that cannot be met: %s, want 124", r)
	}
}

// get -w prints each STATUS change once.
func TestCLIGetWatch(t *testing.T) {
	e := newCLIEnv(t)
	w := e.start("get", "-w")
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: steps}
spec:
  restartPolicy: Never
  initContainers: [{name: init, image: busybox:1.28, command: ['sleep', '1']}]
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3']}]
`))
	lines := w.waitLines(t, time.Minute, "Completed", func(l []string) bool {
		return len(l) > 0 && strings.Contains(l[len(l)-1], "Completed")
	})
	var statuses []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "steps" {
			t.Fatalf("get -w line %q", l)
		}
		statuses = append(statuses, f[2])
	}
	for i := 1; i < len(statuses); i++ {
		if statuses[i] == statuses[i-1] {
			t.Errorf("STATUS %s printed twice in a row: %v", statuses[i], statuses)
		}
	}
	for _, want := range []string{"Init:0/1", "Running", "Completed"} {
		if !strings.Contains(strings.Join(statuses, " "), want) {
			t.Errorf("get -w did not show %s: %v", want, statuses)
		}
	}
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	if code := w.exit(t, 10*time.Second); code != 0 || w.stderr.Len() > 0 {
		t.Errorf("get -w after Ctrl-C: exit %d, stderr %q", code, w.stderr.String())
	}
}

// logs -f of two containers that log alternately shows both, in arrival order;
// Ctrl-C ends it quietly.
func TestCLILogsFollowSeveralContainers(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata:
  name: pingpong
  labels: {app: pp}
  annotations: {kubectl.kubernetes.io/default-container: pong}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: ping
    image: busybox:1.28
    volumeMounts: [{name: data, mountPath: /data}]
    command: ['sh', '-c', 'until [ -e /data/go ]; do sleep 0.1; done; for i in 1 2 3 4; do echo ping $i; sleep 0.6; done; sleep 3600']
  - name: pong
    image: busybox:1.28
    volumeMounts: [{name: data, mountPath: /data}]
    command: ['sh', '-c', 'until [ -e /data/go ]; do sleep 0.1; done; sleep 0.3; for i in 1 2 3 4; do echo pong $i; sleep 0.6; done; sleep 3600']
`), "--wait")
	f := e.start("logs", "pingpong", "-f", "--all-containers", "--prefix")
	time.Sleep(500 * time.Millisecond)
	e.must("exec", "pingpong", "-c", "ping", "--", "touch", "/data/go")
	lines := f.waitLines(t, 30*time.Second, "pong 4", func(l []string) bool { return len(l) > 0 && strings.HasSuffix(l[len(l)-1], "pong 4") })
	want := []string{}
	for i := 1; i <= 4; i++ {
		want = append(want, fmt.Sprintf("[pod/pingpong/ping] ping %d", i), fmt.Sprintf("[pod/pingpong/pong] pong %d", i))
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs -f --all-containers --prefix:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	if code := f.exit(t, 10*time.Second); code != 0 || f.stderr.Len() > 0 {
		t.Errorf("logs -f after Ctrl-C: exit %d, stderr %q", code, f.stderr.String())
	}
	// The default-container annotation picks pong, without a "Defaulted" note.
	if r := e.must("logs", "pingpong"); !strings.HasPrefix(r.stdout, "pong 1\n") || strings.Contains(r.stderr, "Defaulted") {
		t.Errorf("logs with the default-container annotation: %s", r)
	}
	// -l: the default container of each matching pod, last 10 lines.
	if r := e.must("logs", "-l", "app=pp", "--tail", "1"); r.stdout != "pong 4\n" {
		t.Errorf("logs -l: %s", r)
	}
	// --since-time in the future shows nothing; in the past everything.
	if r := e.must("logs", "pingpong", "-c", "ping", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); r.stdout != "" {
		t.Errorf("logs --since-time in the future: %q", r.stdout)
	}
	if r := e.must("logs", "pingpong", "-c", "ping", "--since-time", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)); !strings.HasPrefix(r.stdout, "ping 1\n") {
		t.Errorf("logs --since-time an hour ago: %q", r.stdout)
	}
}

// logs -f prints a line as soon as the container writes it, as kubectl logs
// -f does (the kubelet's follow reads on inotify events): the line comes long
// before the container's next output, 30 s later, and without seconds of delay.
func TestLogsFollowPrintsAtOnce(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: oneline}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: c
    image: busybox:1.28
    volumeMounts: [{name: data, mountPath: /data}]
    command: ['sh', '-c', 'until [ -e /data/go ]; do sleep 0.05; done; echo first; sleep 30; echo second; sleep 3600']
`), "--wait")
	f := e.start("logs", "oneline", "-f", "--timestamps")
	time.Sleep(time.Second) // logs -f is following the (empty) log by now
	e.must("exec", "oneline", "--", "touch", "/data/go")
	wrote := time.Now() // the line is written within 50 ms of the touch
	lines := f.waitLines(t, 25*time.Second, "first line", func(l []string) bool { return len(l) > 0 })
	took := time.Since(wrote)
	if len(lines) != 1 || !strings.HasSuffix(lines[0], " first") {
		t.Fatalf("logs -f printed %q, want the one line \"first\"", lines)
	}
	if limit := 2 * time.Second * timeoutScale; took > limit {
		t.Errorf("logs -f printed the line %s after the container wrote it, want well under %s", took, limit)
	}
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	if code := f.exit(t, 10*time.Second); code != 0 {
		t.Errorf("logs -f after Ctrl-C: exit %d, stderr %q", code, f.stderr.String())
	}
	e.must("delete", "oneline", "--force")
}

// get's selectors and kubectl's template outputs.
func TestCLIGetSelectorsAndTemplates(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web, tier: front}}
spec:
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec:
  restartPolicy: Never
  containers: [{name: app, image: busybox:1.28, command: ['true']}]
`), "--wait")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "-l", "app=web", "-o", "name"}, "pod/web\n"},
		{[]string{"get", "-l", "app in (web,db),tier!=front", "-o", "name"}, "pod/db\n"},
		{[]string{"get", "--field-selector", "status.phase=Succeeded", "-o", "name"}, "pod/db\n"},
		{[]string{"get", "web", "-o", "jsonpath={.metadata.labels.tier}"}, "front"},
		{[]string{"get", "pods", "-o", "jsonpath={.items[*].metadata.name}"}, "db web"},
		{[]string{"get", "-o", "go-template={{range .items}}{{.metadata.name}}:{{.status.phase}} {{end}}"}, "db:Succeeded web:Running "},
		{[]string{"get", "-o", "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app,TIER:.metadata.labels.tier", "--sort-by", ".metadata.labels.app"}, "NAME   APP   TIER\ndb     db    <none>\nweb    web   front\n"},
		{[]string{"get", "--sort-by", "{.metadata.name}", "-o", "custom-columns=NAME:.metadata.name", "--no-headers"}, "db\nweb\n"},
	} {
		if r := e.must(tc.args...); r.stdout != tc.want {
			t.Errorf("podrun %q: %q, want %q", tc.args, r.stdout, tc.want)
		}
	}
	r := e.must("get", "web", "--show-labels", "-L", "tier")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if f := strings.Fields(lines[0]); f[len(f)-2] != "TIER" || f[len(f)-1] != "LABELS" {
		t.Errorf("get --show-labels -L tier header: %q", lines[0])
	}
	if f := strings.Fields(lines[1]); f[len(f)-2] != "front" || f[len(f)-1] != "app=web,tier=front" {
		t.Errorf("get --show-labels -L tier row: %q", lines[1])
	}
	if r := e.podrun("get", "--field-selector", "spec.bogus=1"); r.code != 2 {
		t.Errorf("unsupported field selector: %s", r)
	}
	if r := e.must("delete", "-l", "app=db"); !strings.Contains(r.stdout, `pod "db" deleted`) {
		t.Errorf("delete -l: %s", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "pod/web\n" {
		t.Errorf("after delete -l: %q", r.stdout)
	}
}

// run --rm -i --restart=Never: the container's output and exit code, nothing left.
func TestCLIRunRemoveExitCode(t *testing.T) {
	e := newCLIEnv(t)
	r := e.podrun("run", "once", "--image=busybox:1.28", "--rm", "-i", "--restart=Never", "--", "sh", "-c", "echo hello from the pod; exit 3")
	if r.code != 3 || r.stdout != "hello from the pod\n" || !strings.Contains(r.stderr, "terminated (Error)") {
		t.Fatalf("run --rm -i of a failing command: %s", r)
	}
	if r := e.must("get", "-o", "name"); r.stdout != "" {
		t.Fatalf("run --rm left a pod: %q", r.stdout)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Fatalf("run --rm left %v", left)
	}
	// -i passes stdin to the container; its end closes the container's.
	if r := e.podrunIn("hi\nthere\n", "run", "cat", "--rm", "-i", "--restart=Never", "--image=busybox:1.28", "--", "cat"); r.code != 0 || r.stdout != "hi\nthere\n" {
		t.Fatalf("echo hi | run --rm -i -- cat: %s", r)
	}
	if r := e.podrunIn("7\n", "run", "readcode", "--rm", "-i", "--restart=Never", "--image=busybox:1.28", "--", "sh", "-c", "read n; echo got $n; exit $n"); r.code != 7 || r.stdout != "got 7\n" || !strings.Contains(r.stderr, "error: pod default/readcode terminated (Error)") {
		t.Fatalf("run -i of a command that exits with what it read: %s", r)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Fatalf("run --rm -i left %v", left)
	}
	if r := e.podrun("run", "ok", "--image=busybox:1.28", "--rm", "--attach", "--restart=Never", "--env=X=42", "--command", "--", "sh", "-c", "echo $X"); r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("run --rm --attach of a succeeding command: %s", r)
	}
	if r := e.podrun("run", "dry", "--image=busybox:1.28", "--dry-run=client", "-o", "yaml", "--labels=app=x"); r.code != 0 || !strings.Contains(r.stdout, "app: x") || !strings.Contains(r.stdout, "restartPolicy: Always") {
		t.Fatalf("run --dry-run=client -o yaml: %s", r)
	}
	if r := e.podrun("run", "x", "--rm", "--image=busybox:1.28"); r.code != 2 {
		t.Errorf("run --rm without -i: %s", r)
	}
	// Shell completion is generated from the commands themselves.
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := e.must("completion", sh); !strings.Contains(r.stdout, "podrun") {
			t.Errorf("completion %s: %s", sh, r)
		}
	}
	if r := e.must("--generate-bash-completion"); !strings.Contains(r.stdout, "wait\n") {
		t.Errorf("completion words: %q", r.stdout)
	}
}

// A plain user gets one clear message.
func TestCLINeedsRoot(t *testing.T) {
	cmd := exec.Command(podrunBin, "get")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "podrun needs root") {
		t.Fatalf("podrun get as nobody: %v %s", err, out)
	}
	cmd = exec.Command(podrunBin, "version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("podrun version as nobody: %v %s", err, out)
	}
	// A client dry run needs no root, and says nothing of the host.
	dir, err := os.MkdirTemp("", "podrun-dry-") // readable by nobody, unlike t.TempDir
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	manifest := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: dry}\nspec: {containers: [{name: c, image: busybox:1.28}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(podrunBin, "apply", "-f", manifest, "--dry-run=client")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err = cmd.CombinedOutput()
	if err != nil || string(out) != "pod/dry created (dry run)\n" {
		t.Fatalf("apply --dry-run=client as nobody: %v\n%s", err, out)
	}
}

// A load reading its archive from stdin ends on SIGTERM to the CLI (which
// passes it to podrun-image and waits for it) and leaves no copy of the
// half-read archive behind, though the writer never closes the pipe.
func TestCLILoadFromStdinEndsOnSigterm(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(podrunBin, e.args("load")...)
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A podrun-image that outlives the CLI holds the output pipe: Wait must
	// not wait for it.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if _, err := w.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	copies := func() []string {
		m, _ := filepath.Glob(filepath.Join(e.root, ".load-stdin-*"))
		return m
	}
	for deadline := time.Now().Add(30 * time.Second); len(copies()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no copy of stdin appeared under %s\n%s", e.root, out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("load ended well after SIGTERM:\n%s", out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		w.Close() // EOF for a podrun-image still reading, so that it ends
		<-done
		t.Fatalf("load still runs 30 s after SIGTERM\n%s", out.String())
	}
	if left := copies(); len(left) > 0 {
		t.Errorf("the half-read archive is left behind: %v\n%s", left, out.String())
	}
}

// events, get events, top pod and load from stdin.
func TestCLIEventsTopLoadStdin(t *testing.T) {
	e := newCLIEnv(t)
	archive, err := os.ReadFile(testImage)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(podrunBin, e.args("load", "--tag", "piped:1")...)
	cmd.Stdin = bytes.NewReader(archive)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "piped:1") {
		t.Fatalf("load from stdin: %v %s", err, out)
	}
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  containers:
  - name: spin
    image: piped:1
    imagePullPolicy: Never
    command: ['sh', '-c', 'while :; do :; done']
`), "--wait")
	r := e.must("top", "pod", "busy")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "POD") {
		t.Fatalf("top pod: %q", r.stdout)
	}
	f := strings.Fields(lines[1])
	milli := atoi(t, strings.TrimSuffix(f[1], "m"))
	if f[0] != "busy" || milli < 200 || !strings.HasSuffix(f[2], "Mi") {
		t.Errorf("top pod of a busy loop: %q (want a few hundred millicores at least)", lines[1])
	}
	for _, args := range [][]string{{"events"}, {"get", "events"}, {"events", "--for", "pod/busy"}} {
		r := e.must(args...)
		if !strings.Contains(r.stdout, "LAST SEEN") || !strings.Contains(r.stdout, "Started") || !strings.Contains(r.stdout, "pod/busy") {
			t.Errorf("podrun %v: %s", args, r)
		}
	}
}

// cp both ways, files and directories, through tar in the container.
func TestCLICopy(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers: [{name: app, image: busybox:1.28, command: ['sleep', '3600']}]
`), "--wait")
	local := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(local, "tree", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(local, "tree", "a.txt"), []byte("alpha\n"), 0o644))
	must(os.WriteFile(filepath.Join(local, "tree", "sub", "b.txt"), []byte("beta\n"), 0o600))
	must(os.WriteFile(filepath.Join(local, "one.txt"), []byte("one\n"), 0o644))

	e.must("cp", filepath.Join(local, "tree"), "box:/tmp")
	e.must("cp", filepath.Join(local, "one.txt"), "box:/tmp/renamed.txt")
	if r := e.must("exec", "box", "--", "sh", "-c", "cat /tmp/tree/a.txt /tmp/tree/sub/b.txt /tmp/renamed.txt"); r.stdout != "alpha\nbeta\none\n" {
		t.Fatalf("files copied in: %q", r.stdout)
	}
	e.must("exec", "box", "--", "sh", "-c", "mkdir -p /out/d && echo report > /out/d/r.txt && echo x > /out/x")
	back := t.TempDir()
	e.must("cp", "box:/out/d", filepath.Join(back, "d2"))
	e.must("cp", "box:/out/x", back)
	for p, want := range map[string]string{"d2/r.txt": "report\n", "x": "x\n"} {
		if data, err := os.ReadFile(filepath.Join(back, p)); err != nil || string(data) != want {
			t.Errorf("copied out %s: %q %v", p, data, err)
		}
	}
	if r := e.podrun("cp", "box:/nope", back); r.code != 1 {
		t.Errorf("cp of a missing file: %s", r)
	}
}

// podrun version and podrun info name the podrun-shim the CLI runs (next to
// it, of its version), and say so when it is missing: what a user with a
// half-installed upgrade needs to see.
func TestCLIVersionNamesTheShim(t *testing.T) {
	out, err := exec.Command(podrunBin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("podrun version: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	cliVersion := strings.TrimPrefix(lines[0], "podrun ")
	bin, err := filepath.EvalSymlinks(podrunBin)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(bin)
	want := "podrun-shim: " + filepath.Join(filepath.Dir(abs), "podrun-shim") + " " + cliVersion
	if len(lines) < 2 || lines[1] != want {
		t.Errorf("podrun version:\n%s\nwant its second line %q", out, want)
	}
	want = "podrun-image: " + filepath.Join(filepath.Dir(abs), "podrun-image") + " " + cliVersion
	if len(lines) < 3 || lines[2] != want {
		t.Errorf("podrun version:\n%s\nwant its third line %q", out, want)
	}
	// The registry client's version comes from podrun-image, which links it.
	if !strings.Contains(string(out), "\ngo.podman.io/image/v5: v") {
		t.Errorf("podrun version names no go.podman.io/image version:\n%s", out)
	}
	out, err = exec.Command(podrunBin, "info", "-o", "json").Output()
	if err != nil {
		t.Fatalf("podrun info: %v\n%s", err, out)
	}
	var info struct {
		Shim        struct{ Path, Version, Problem string }
		ImageHelper struct{ Path, Version, Problem string }
		Libraries   map[string]string
	}
	if err := json.Unmarshal(out, &info); err != nil || info.Shim.Version != cliVersion || info.Shim.Problem != "" {
		t.Errorf("podrun info's shim: %+v (%v)", info.Shim, err)
	}
	if info.ImageHelper.Version != cliVersion || info.ImageHelper.Problem != "" || info.Libraries["go.podman.io/image/v5"] == "" {
		t.Errorf("podrun info's podrun-image: %+v, libraries %v", info.ImageHelper, info.Libraries)
	}

	// The CLI alone, without its shim.
	dir, alone := cliAlone(t)
	out, err = exec.Command(alone, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "podrun-shim: "+filepath.Join(dir, "podrun-shim")+" (missing: pods cannot start") {
		t.Errorf("podrun version without its shim: %v\n%s", err, out)
	}
	out, _ = exec.Command(alone, "info").CombinedOutput()
	if !strings.Contains(string(out), "podrun-shim missing: pods cannot start") || !strings.Contains(string(out), "podrun-image missing: images cannot be pulled or loaded") {
		t.Errorf("podrun info without its shim and podrun-image warns of nothing:\n%s", out)
	}
	// A load without podrun-image fails at once and says what to install where.
	root := t.TempDir()
	cmd := exec.Command(alone, "--root", root, "load", "-i", testImage)
	out, err = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "podrun-image must be installed next to "+alone) {
		t.Errorf("podrun load without podrun-image: exit %d (%v)\n%s", code, err, out)
	}
}

// cliAlone is a copy of the podrun binary in a directory of its own, where
// podrun-shim is missing until the test puts one there.
func cliAlone(t *testing.T) (dir, alone string) {
	t.Helper()
	bin, err := filepath.EvalSymlinks(podrunBin)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	alone = filepath.Join(dir, "podrun")
	if err := os.Link(bin, alone); err != nil {
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(alone, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, alone
}

// A podrun-shim of another release that fails before it writes a word (a
// half-installed upgrade): apply says which shim, and that its version is not
// the CLI's, instead of an empty log tail; the pod is not left recorded.
func TestApplyWithAShimOfAnotherRelease(t *testing.T) {
	e := newEnv(t)
	dir, alone := cliAlone(t)
	shim := filepath.Join(dir, "podrun-shim")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\n[ \"$1\" = version ] && { echo 'podrun-shim v0.0.1-other'; exit 0; }\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, e.args("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: mismatched}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`))...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("apply with a shim of another release: %v\n%s", err, out)
	}
	if want := shim + ": version v0.0.1-other is not podrun's"; !strings.Contains(string(out), want) || !strings.Contains(string(out), "the supervisor exited (exit status 1) and wrote nothing to its log") {
		t.Errorf("apply said:\n%s\nwant the supervisor's exit and %q", out, want)
	}
	if r := e.must("get", "pods", "--no-headers"); strings.Contains(r.stdout, "mismatched") {
		t.Errorf("the pod stayed recorded: %s", r.stdout)
	}
}

// kubectl delete --wait=false returns once the deletion is requested: the
// pod reads Terminating while its grace period runs (sleep as PID 1 ignores
// SIGTERM), a second delete waits with it until it is gone, and nothing of it
// is left (the harness's leak check). --now and --grace-period conflict.
func TestDeleteNoWait(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  terminationGracePeriodSeconds: 6
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`, "--wait")
	start := time.Now()
	if r := e.must("delete", "slow", "--wait=false"); r.stdout != "pod \"slow\" deleted\n" {
		t.Errorf("delete --wait=false printed %q", r.stdout)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("delete --wait=false took %s, the grace period's length", d)
	}
	if r := e.must("get", "pod", "slow", "--no-headers"); !strings.Contains(r.stdout, " Terminating ") {
		t.Errorf("get after delete --wait=false: %s", r)
	}
	if r := e.must("get", "pod", "slow", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"); r.stdout != "6" {
		t.Errorf("deletionGracePeriodSeconds %q, want 6", r.stdout)
	}
	if r := e.must("delete", "slow"); r.stdout != "pod \"slow\" deleted\n" {
		t.Errorf("second delete printed %q", r.stdout)
	}
	if d := time.Since(start); d < 5*time.Second {
		t.Errorf("the second delete returned after %s, before the grace period ended", d)
	}
	if r := e.podrun("get", "pod", "slow"); r.code != 1 || !strings.Contains(r.stderr, `pods "slow" not found`) {
		t.Errorf("get after the delete: %s", r)
	}
	if r := e.podrun("delete", "slow", "--now", "--grace-period", "3"); r.code == 0 || !strings.Contains(r.stderr, "--now and --grace-period cannot be specified together") {
		t.Errorf("--now with --grace-period: %s", r)
	}
}

// wait --for=create of a pod returns once its record appears (a change
// notification wakes it; it does not relist every few seconds).
func TestCLIWaitForCreatePod(t *testing.T) {
	e := newEnv(t)
	created := e.start("wait", "--for=create", "pod/late", "--timeout", "1m")
	time.Sleep(300 * time.Millisecond)
	applied := time.Now()
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`)
	if code := created.exit(t, 30*time.Second); code != 0 || strings.Join(created.lines(), "\n") != "pod/late condition met" {
		t.Fatalf("wait --for=create pod: exit %d, %q, %s", code, created.lines(), created.stderr.String())
	}
	if d := time.Since(applied); d > 4*time.Second {
		t.Errorf("wait --for=create returned %s after the apply", d)
	}
}
