package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The init containers' order is proven through a shared emptyDir: each one
// appends its name, and the app container prints the file.
func TestInitContainersRunInOrderAndShareAnEmptyDir(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: order
spec:
  restartPolicy: Never
  initContainers:
  - name: init-1
    image: busybox:1.28
    command: ['sh', '-c', 'sleep 0.3; echo init-1 >> /work/order']
    volumeMounts: [{name: work, mountPath: /work}]
  - name: init-2
    image: busybox:1.28
    command: ['sh', '-c', 'echo init-2 >> /work/order']
    volumeMounts: [{name: work, mountPath: /work}]
  - name: init-3
    image: busybox:1.28
    command: ['sh', '-c', 'sleep 0.2; echo init-3 >> /work/order']
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'cat /work/order; hostname']
    volumeMounts: [{name: work, mountPath: /work}]
  volumes:
  - name: work
    emptyDir: {}
`)
	p := e.waitPhase("order", corev1.PodSucceeded, time.Minute)
	out := e.must("logs", "order", "-c", "app").stdout
	if want := "init-1\ninit-2\ninit-3\norder\n"; out != want {
		t.Fatalf("app printed %q, want %q (init order, then the pod name as hostname)", out, want)
	}
	var finished time.Time
	for _, name := range []string{"init-1", "init-2", "init-3"} {
		st := containerState(p, name)
		term := st.State.Terminated
		if term == nil || term.ExitCode != 0 || term.Reason != "Completed" || !st.Ready {
			t.Fatalf("%s status %+v, want terminated Completed and ready", name, st)
		}
		if term.StartedAt.Time.Before(finished) {
			t.Fatalf("%s started at %s before the previous init container finished at %s", name, term.StartedAt, finished)
		}
		finished = term.FinishedAt.Time
	}
	app := containerState(p, "app").State.Terminated
	if app == nil || app.StartedAt.Time.Before(finished) {
		t.Fatalf("app %+v started before the last init container finished (%s)", app, finished)
	}
	if e.status("order") != "Completed" {
		t.Fatalf("STATUS %q, want Completed", e.status("order"))
	}
}

func TestAppContainersRunTogetherAndShareTheNetwork(t *testing.T) {
	e := newEnv(t)
	// server listens on localhost; client reaches it over the pod's shared
	// loopback, and each sees the other's process only through the network.
	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: pair
spec:
  restartPolicy: Never
  containers:
  - name: server
    image: busybox:1.28
    command: ['sh', '-c', 'echo hello-from-server | nc -l -p 8080 127.0.0.1; ps -o comm | grep -c client || true']
  - name: client
    image: busybox:1.28
    command: ['sh', '-c', 'for i in $(seq 1 50); do nc 127.0.0.1 8080 2>/dev/null && exit 0; sleep 0.1; done; exit 1']
`)
	p := e.waitFor("pair", time.Minute, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s: %s %s", p.Status.Phase, e.podrun("logs", "pair", "-c", "client"), e.podrun("logs", "pair", "-c", "server"))
	}
	if out := e.must("logs", "pair", "-c", "client").stdout; out != "hello-from-server\n" {
		t.Fatalf("client got %q", out)
	}
	// Each container has its own pid namespace: the server does not see the client's processes.
	if out := e.must("logs", "pair", "-c", "server").stdout; strings.TrimSpace(out) != "0" {
		t.Fatalf("server saw the client's processes: %q", out)
	}
}

// TestSubPathMadeByAnEarlierInitContainer: the kubelet resolves a subPath
// when it creates the container, so a file that an earlier init container
// writes is mounted as that file. Containers created ahead of their turn
// must not make the subPath first (as a directory).
func TestSubPathMadeByAnEarlierInitContainer(t *testing.T) {
	e := newEnv(t)
	r := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: subpath}
spec:
  restartPolicy: Never
  initContainers:
  - name: write
    image: busybox:1.28
    command: ['sh', '-c', 'echo hello > /data/greeting']
    volumeMounts: [{name: data, mountPath: /data}]
  - name: read
    image: busybox:1.28
    command: ['cat', '/etc/greeting']
    volumeMounts: [{name: data, mountPath: /etc/greeting, subPath: greeting}]
  containers:
  - name: app
    image: busybox:1.28
    command: ['cat', '/greeting']
    volumeMounts: [{name: data, mountPath: /greeting, subPath: greeting}]
  volumes: [{name: data, emptyDir: {}}]
`), "--wait", "--timeout", "1m")
	if r.code != 0 {
		t.Fatalf("apply --wait: %s\n%s", r, e.must("describe", "pod", "subpath").stdout)
	}
	for _, c := range []string{"read", "app"} {
		if out := e.must("logs", "subpath", "-c", c).stdout; out != "hello\n" {
			t.Errorf("%s printed %q, want the file the first init container wrote", c, out)
		}
	}
}

func TestFailingInitContainerUnderNeverFailsThePod(t *testing.T) {
	e := newEnv(t)
	r := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  restartPolicy: Never
  initContainers:
  - name: init-ok
    image: busybox:1.28
    command: ['true']
  - name: init-fails
    image: busybox:1.28
    command: ['sh', '-c', 'echo cannot reach the database >&2; exit 3']
  - name: init-never
    image: busybox:1.28
    command: ['true']
  containers:
  - name: app
    image: busybox:1.28
    command: ['true']
`), "--wait", "--timeout", "1m")
	if r.code != 1 || !strings.Contains(r.stderr, "init-fails exited with code 3") {
		t.Fatalf("apply --wait of a pod whose init container fails: %s", r)
	}
	p := e.pod("broken")
	if p.Status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed", p.Status.Phase)
	}
	if st := containerState(p, "init-fails").State.Terminated; st == nil || st.ExitCode != 3 || st.Reason != "Error" {
		t.Fatalf("init-fails state %+v", containerState(p, "init-fails").State)
	}
	for _, name := range []string{"init-never", "app"} {
		st := containerState(p, name)
		if st.State.Waiting == nil || st.State.Waiting.Reason != "PodInitializing" || st.ContainerID != "" {
			t.Fatalf("%s ran or has the wrong state: %+v", name, st)
		}
	}
	if got := e.status("broken"); got != "Init:Error" {
		t.Fatalf("STATUS %q, want Init:Error", got)
	}
	if out := e.must("logs", "broken", "-c", "init-fails").stdout; out != "cannot reach the database\n" {
		t.Fatalf("init logs %q", out)
	}
	// init-never was created ahead of its turn (its init waiting before any of
	// its code) and destroyed when init-fails failed: it was never Created nor
	// Started for the user, and the leak check after the test finds nothing of it.
	if ev := e.must("events").stdout; strings.Contains(ev, "container init-never") || strings.Contains(ev, "container app") {
		t.Fatalf("events of containers whose turn never came:\n%s", ev)
	}
}

func TestApplyWaitExitCodes(t *testing.T) {
	e := newEnv(t)
	ok := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox:1.28, command: ['true']}]
`), "--wait")
	if ok.code != 0 {
		t.Fatalf("apply --wait of a pod that succeeds: %s", ok)
	}
	bad := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox:1.28, command: ['sh', '-c', 'exit 7']}]
`), "--wait")
	if bad.code != 1 || !strings.Contains(bad.stderr, "exited with code 7") {
		t.Fatalf("apply --wait of a failing pod: %s", bad)
	}
	// The same manifests applied again: the API server says unchanged and the
	// finished pods stay as they are; --wait reports how they ended.
	for _, again := range []struct {
		name string
		code int
	}{{"ok", 0}, {"bad", 1}} {
		r := e.podrun("apply", e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox:1.28, command: %s}]
`, again.name, map[string]string{"ok": "['true']", "bad": "['sh', '-c', 'exit 7']"}[again.name])), "--wait")
		if r.code != again.code || !strings.Contains(r.stdout, "pod/"+again.name+" unchanged") {
			t.Fatalf("apply --wait of finished pod %s again: %s", again.name, r)
		}
	}
	if rs := containerState(e.pod("ok"), "c").RestartCount; rs != 0 || e.status("ok") != "Completed" {
		t.Fatalf("pod ok ran again: restarts %d, STATUS %s", rs, e.status("ok"))
	}
	slow := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  restartPolicy: Never
  initContainers: [{name: wait, image: busybox:1.28, command: ['sleep', '30']}]
  containers: [{name: c, image: busybox:1.28, command: ['true']}]
`), "--wait", "--timeout", "1s")
	if slow.code != 124 || !strings.Contains(slow.stderr, "timed out") {
		t.Fatalf("apply --wait --timeout 1s: %s", slow)
	}
	running := e.podrun("apply", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: server}
spec:
  containers: [{name: c, image: busybox:1.28, command: ['sleep', '3600']}]
`), "--wait")
	if running.code != 0 || e.status("server") != "Running" {
		t.Fatalf("apply --wait of a long-running pod: %s", running)
	}
}

func TestInitContainerLogsStayReadable(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: logs
spec:
  initContainers:
  - name: init-mydb
    image: busybox:1.28
    # stdout and stderr are separate pipes: lines of the two streams are
    # ordered by when podrun reads them, so give each a moment.
    command: ['sh', '-c', 'echo line one; sleep 0.1; echo line two >&2; sleep 0.1; echo line three']
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'trap "exit 0" TERM; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done']
`, "--wait")
	// No pod name: the one pod with a container of that name.
	out := e.must("logs", "-c", "init-mydb").stdout
	if out != "line one\nline two\nline three\n" {
		t.Fatalf("init logs %q", out)
	}
	ts := e.must("logs", "logs", "-c", "init-mydb", "--timestamps", "--tail", "1").stdout
	fields := strings.SplitN(strings.TrimSpace(ts), " ", 2)
	if len(fields) != 2 || fields[1] != "line three" {
		t.Fatalf("--timestamps --tail 1 printed %q", ts)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields[0]); err != nil {
		t.Fatalf("timestamp %q: %v", fields[0], err)
	}
	// -f follows the running app until it stops.
	e.waitFor("logs", 10*time.Second, "ticking", func(*corev1.Pod) bool {
		return strings.Contains(e.must("logs", "logs", "-c", "app").stdout, "tick 3")
	})
	done := make(chan result, 1)
	go func() { done <- e.podrun("logs", "logs", "-c", "app", "-f") }()
	time.Sleep(500 * time.Millisecond)
	e.must("delete", "logs")
	select {
	case r := <-done:
		if !strings.Contains(r.stdout, "tick 1\n") || !strings.Contains(r.stdout, "tick 5\n") {
			t.Fatalf("logs -f printed %q", r.stdout)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("logs -f did not end when the pod was deleted")
	}
}

func TestLogsWithoutPodNameWhenSeveralPodsHaveTheContainer(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"a", "b"} {
		e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  restartPolicy: Never
  containers: [{name: shared, image: busybox:1.28, command: ['true']}]
`)
	}
	r := e.podrun("logs", "-c", "shared")
	if r.code == 0 || !strings.Contains(r.stderr, "a, b") {
		t.Fatalf("logs -c shared with two pods: %s", r)
	}
}

func TestDeleteIsGracefulThenForceful(t *testing.T) {
	e := newEnv(t)
	out := t.TempDir()
	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: graceful
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: polite
    image: busybox:1.28
    command: ['sh', '-c', 'trap "echo got TERM > /out/polite; exit 0" TERM; while true; do sleep 0.1; done']
    volumeMounts: [{name: out, mountPath: /out}]
  - name: stubborn
    image: busybox:1.28
    command: ['sh', '-c', 'trap "echo ignoring TERM > /out/stubborn" TERM; while true; do sleep 0.1; done']
    volumeMounts: [{name: out, mountPath: /out}]
  volumes:
  - name: out
    hostPath: {path: `+out+`}
`, "--wait")
	start := time.Now()
	e.must("delete", "graceful", "--grace-period", "3")
	took := time.Since(start)
	for _, f := range []struct{ file, want string }{{"polite", "got TERM\n"}, {"stubborn", "ignoring TERM\n"}} {
		data, err := os.ReadFile(filepath.Join(out, f.file))
		if err != nil || string(data) != f.want {
			t.Fatalf("%s wrote %q (%v): SIGTERM did not come first", f.file, data, err)
		}
	}
	// The stubborn container was killed once the grace period ran out, not 30s later.
	if took < 3*time.Second {
		t.Fatalf("delete returned after %s, before the 3s grace period", took)
	}
	t.Logf("delete with --grace-period 3 took %s", took)
	if r := e.podrun("get", "graceful"); r.code == 0 {
		t.Fatalf("pod still listed after delete: %s", r)
	}
}

func TestDeleteAfterSupervisorCrashReleasesEverything(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: orphan}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
  - {name: app2, image: busybox:1.28, command: ['sleep', '3600']}
`, "--wait")
	// A crash: the supervisor dies without tearing anything down.
	e.crashSupervisor(string(e.pod("orphan").UID))
	if left := e.leftovers(); len(left) == 0 {
		t.Fatal("expected the crashed pod's resources to still be there")
	}
	e.must("delete", "orphan", "--grace-period", "1")
	if left := e.leftovers(); len(left) != 0 {
		t.Fatalf("left after delete: %v", left)
	}
	// And a second delete of what is gone says so.
	if r := e.podrun("delete", "orphan"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("second delete: %s", r)
	}
}

func TestBadInputCreatesNothing(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"yaml syntax", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n    image: [unclosed\n", []string{":8:", "YAML"}},
		{"missing image", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n", []string{"spec.containers[0].image", "Required"}},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: []\n", []string{"spec.containers", "Required"}},
		{"duplicate names", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  initContainers:\n  - {name: a, image: busybox:1.28}\n  containers:\n  - {name: a, image: busybox:1.28}\n", []string{"spec.initContainers[0].name", "Duplicate"}},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n    imagee: busybox:1.28\n", []string{"imagee"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := e.manifest(tc.yaml)
			r := e.podrun("apply", file)
			if r.code != 2 {
				t.Fatalf("exit code %d, want 2: %s", r.code, r)
			}
			if !strings.Contains(r.stderr, filepath.Base(file)) {
				t.Errorf("message does not name the file: %s", r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("message %q does not mention %q", r.stderr, w)
				}
			}
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) > 3 {
				t.Errorf("expected one clear message, got:\n%s", r.stderr)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.root, "pods")); len(entries) != 0 {
				t.Fatalf("bad input left pod records: %v", entries)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.runRoot, "pods")); len(entries) != 0 {
				t.Fatalf("bad input left run state: %v", entries)
			}
		})
	}
}

func TestGetShowsInitProgressThenRunning(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: progress}
spec:
  initContainers:
  - {name: init-a, image: busybox:1.28, command: ['sleep', '1.5']}
  - {name: init-b, image: busybox:1.28, command: ['sleep', '1.5']}
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	var seen []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s := e.status("progress")
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if s == "Running" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The kubectl STATUS sequence, in order (PodInitializing may be too brief to see).
	want := []string{"Init:0/2", "Init:1/2", "Running"}
	var got []string
	for _, s := range seen {
		if s != "PodInitializing" {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("STATUS went %v, want %v", seen, want)
	}
	p := e.pod("progress")
	if p.Spec.NodeName == "" || containerState(p, "app").ImageID == "" || p.Status.PodIP == "" || p.Status.StartTime == nil {
		t.Fatalf("status lacks nodeName, imageID, podIP or startTime: %+v", p.Status)
	}
}
