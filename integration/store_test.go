package integration

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// Twenty applies of one pod name at once make one pod: one says created,
// the others unchanged, none fails.
func TestConcurrentApplyOfOneName(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: only}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	const n = 20
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.podrun("apply", manifest)
		}()
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		switch {
		case r.code != 0:
			t.Errorf("apply failed: %s", r)
		case strings.Contains(r.stdout, "pod/only created"):
			created++
		case !strings.Contains(r.stdout, "pod/only unchanged"):
			t.Errorf("apply said: %s", r)
		}
	}
	if created != 1 {
		t.Errorf("%d applies created the pod, want 1", created)
	}
	entries, _ := os.ReadDir(filepath.Join(e.root, "pods"))
	if len(entries) != 1 {
		t.Errorf("%d pod records, want 1", len(entries))
	}
	if lines := strings.Split(strings.TrimSpace(e.must("get").stdout), "\n"); len(lines) != 2 {
		t.Errorf("get lists %d pods", len(lines)-1)
	}
}

// Apply racing delete of the same pod never leaves a ghost: after both, either
// the pod exists with its record or nothing of it is left on the host.
func TestApplyDeleteRace(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: racer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	// 100 rounds, each with the leak check (about 3.5 minutes on an idle
	// 2-core host); PODRUN_TEST_RACE_ROUNDS changes it.
	rounds := 100
	if v, err := strconv.Atoi(os.Getenv("PODRUN_TEST_RACE_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if testing.Short() {
		rounds = 5
	}
	for i := range rounds {
		var wg sync.WaitGroup
		var applied, deleted result
		wg.Add(2)
		go func() { defer wg.Done(); applied = e.podrun("apply", manifest) }()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.Intn(25)) * time.Millisecond)
			deleted = e.podrun("delete", "racer", "--ignore-not-found")
		}()
		wg.Wait()
		if applied.code != 0 || deleted.code != 0 {
			t.Fatalf("round %d: apply %s\ndelete %s", i, applied, deleted)
		}
		if r := e.podrun("get", "racer"); r.code == 0 {
			e.must("delete", "racer")
		}
		if left := e.leftovers(); len(left) > 0 {
			t.Fatalf("round %d: leftovers after apply %q and delete %q:\n%s", i, applied.stdout, deleted.stdout, strings.Join(left, "\n"))
		}
	}
}

// A pod keeps the settings it was applied with: describe shows its real
// cgroup, and after its supervisor died a delete with default flags releases
// everything it held.
func TestPodSettingsFromRecord(t *testing.T) {
	e := newEnv(t)
	n := envCounter.Add(1)
	custom := store.Layout{
		Root: e.root, RunRoot: e.runRoot,
		CgroupParent: fmt.Sprintf("/pst-%d-%d", os.Getpid(), n),
		Bridge:       fmt.Sprintf("pst%d-%d", os.Getpid()%10000, n),
		Subnet:       fmt.Sprintf("%s.%d.0/24", testNet, 250+n%5),
	}
	t.Cleanup(func() {
		if link, err := netlink.LinkByName(custom.Bridge); err == nil {
			_ = netlink.LinkDel(link)
		}
		for _, d := range cgroupDirs(custom.CgroupParent) {
			_ = os.Remove(d)
		}
	})
	plain := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(podrunBin, append([]string{"--root", e.root, "--run-root", e.runRoot}, args...)...)
		out, err := cmd.Output()
		r := result{stdout: string(out)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code, r.stderr = ee.ExitCode(), string(ee.Stderr)
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: settled}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	applyArgs := []string{"--root", e.root, "--run-root", e.runRoot, "--cgroup-parent", custom.CgroupParent,
		"--bridge", custom.Bridge, "--subnet", custom.Subnet, "apply", manifest, "--wait"}
	if out, err := exec.Command(podrunBin, applyArgs...).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	p := e.pod("settled")
	if !strings.HasPrefix(p.Status.PodIP, strings.TrimSuffix(custom.Subnet, "0/24")) {
		t.Errorf("pod IP %s is not in the subnet it was applied with (%s)", p.Status.PodIP, custom.Subnet)
	}
	want := custom.CgroupParent + "/pod" + string(p.UID)
	if r := plain("describe", "settled"); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("describe with default flags does not show the pod's cgroup %s:\n%s", want, r)
	}
	if len(cgroupDirs(want)) == 0 {
		t.Fatalf("no cgroup %s", want)
	}
	e.crashSupervisor(string(p.UID))
	if r := plain("delete", "settled"); r.code != 0 {
		t.Fatalf("delete with default flags: %s", r)
	}
	if left := runtime.Leftovers(custom); len(left) > 0 {
		t.Errorf("leftovers after delete with default flags:\n%s", strings.Join(left, "\n"))
	}
}

// delete -f deletes each object in its own namespace; -n naming another
// namespace than the manifest is refused, naming both.
func TestDeleteFileNamespaces(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: one, namespace: ns-a}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
---
apiVersion: v1
kind: Pod
metadata: {name: two, namespace: ns-b}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: ns-b}
data: {k: v}
`)
	r := e.podrun("-n", "other", "apply", "-f", manifest)
	if r.code != 2 || !strings.Contains(r.stderr, `the namespace from the provided object "ns-a" does not match the namespace "other". You must pass '--namespace=ns-a' to perform this operation.`) {
		t.Fatalf("apply -n other: %s", r)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.root, "pods")); len(entries) != 0 {
		t.Fatalf("a refused apply left %d records", len(entries))
	}
	e.must("apply", "-f", manifest)
	if got := e.must("get", "-A").stdout; !strings.Contains(got, "ns-a") || !strings.Contains(got, "ns-b") {
		t.Fatalf("get -A:\n%s", got)
	}
	if r := e.podrun("-n", "other", "delete", "-f", manifest); r.code != 2 || !strings.Contains(r.stderr, `does not match the namespace "other"`) {
		t.Fatalf("delete -n other -f: %s", r)
	}
	r = e.must("delete", "-f", manifest, "--grace-period", "1")
	for _, want := range []string{`pod "one" deleted`, `pod "two" deleted`, `configmap "cfg" deleted`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("delete -f said %q, want %q", r.stdout, want)
		}
	}
	if r := e.must("get", "-A"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("pods left: %s", r.stdout)
	}
}

// A ConfigMap is an object of its own: applied alone, found by a pod applied
// later, and an update reaches the running pod's volume as the kubelet's
// atomic ..data swap does; env vars and subPath mounts keep their values.
func TestConfigMapUpdateReachesRunningPod(t *testing.T) {
	e := newEnv(t)
	cm := func(v string) string {
		return e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: %s}
`, v))
	}
	if r := e.must("apply", cm("hello")); !strings.Contains(r.stdout, "configmap/settings created") {
		t.Fatalf("apply configmap: %s", r)
	}
	if r := e.must("get", "configmaps"); !strings.Contains(r.stdout, "settings") || !strings.Contains(r.stdout, "DATA") {
		t.Fatalf("get configmaps:\n%s", r)
	}
	e.must("--sync-frequency", "1s", "apply", "--wait", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ['sleep', '3600']
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: settings, key: greeting}}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: cfg, mountPath: /pinned, subPath: greeting}
  volumes:
  - name: cfg
    configMap: {name: settings}
`))
	read := func(args ...string) string {
		return strings.TrimSpace(e.must(append([]string{"exec", "reader", "--"}, args...)...).stdout)
	}
	if got := read("cat", "/cfg/greeting"); got != "hello" {
		t.Fatalf("volume file: %q", got)
	}
	before := read("readlink", "/cfg/..data")
	if r := e.must("apply", cm("bonjour")); !strings.Contains(r.stdout, "configmap/settings configured") {
		t.Fatalf("update: %s", r)
	}
	if r := e.must("apply", cm("bonjour")); !strings.Contains(r.stdout, "configmap/settings unchanged") {
		t.Fatalf("same again: %s", r)
	}
	deadline := time.Now().Add(20 * time.Second)
	for read("cat", "/cfg/greeting") != "bonjour" {
		if time.Now().After(deadline) {
			t.Fatalf("the volume still says %q 20s after the update", read("cat", "/cfg/greeting"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after := read("readlink", "/cfg/..data"); after == before {
		t.Errorf("..data still points to %s: not swapped", after)
	}
	if got := read("sh", "-c", "echo $GREETING"); got != "hello" {
		t.Errorf("env var changed to %q; the kubelet keeps it", got)
	}
	if got := read("cat", "/pinned"); got != "hello" {
		t.Errorf("subPath mount changed to %q; the kubelet keeps it", got)
	}
	if r := e.must("delete", "configmap", "settings"); !strings.Contains(r.stdout, `configmap "settings" deleted`) {
		t.Errorf("delete configmap: %s", r)
	}
	if r := e.podrun("get", "configmap", "settings"); r.code == 0 {
		t.Errorf("get after delete: %s", r)
	}
	if p := e.pod("reader"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s after its configmap was deleted", p.Status.Phase)
	}
}

// Valid pod names up to 253 characters work although a directory name has at
// most 255 bytes.
func TestLongPodName(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("a", 240) + ".long-name"
	name += strings.Repeat("z", 253-len(name))
	e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: busybox:1.28, command: ['echo', 'long']}
`, name), "--wait")
	if got := e.must("logs", name).stdout; strings.TrimSpace(got) != "long" {
		t.Errorf("logs: %q", got)
	}
	e.must("delete", name)
}

// A pod whose record is corrupt shows as Unknown with the reason, hides no
// other pod, and delete still releases it.
func TestCorruptRecordIsOneUnknownPod(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"sound", "broken"} {
		e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`, n), "--wait")
	}
	p := e.pod("broken")
	dir := filepath.Join(e.root, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
	for _, f := range []string{"status.json", "pod.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := e.must("get")
	if !strings.Contains(r.stdout, "sound") || !strings.Contains(r.stdout, "Running") {
		t.Errorf("get hides the sound pod:\n%s", r)
	}
	if got := e.status("broken"); got != "Unknown" {
		t.Errorf("broken pod STATUS %q, want Unknown", got)
	}
	if got := e.pod("broken").Status.Message; !strings.Contains(got, "cannot be read") {
		t.Errorf("message %q does not say why", got)
	}
	e.must("delete", "broken", "--grace-period", "1")
	if r := e.podrun("get", "broken"); r.code == 0 {
		t.Errorf("broken pod still listed: %s", r)
	}
}

// delete works on a full disk: it writes nothing under --root before it acts.
func TestDeleteOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=48m,mode=0700"); err != nil {
		t.Fatal(err)
	}
	n := envCounter.Add(1)
	e := &env{
		t: t, root: root, runRoot: filepath.Join(dir, "run"),
		bridge:       fmt.Sprintf("pst%d-%d", os.Getpid()%10000, n),
		subnet:       fmt.Sprintf("%s.%d.0/24", testNet, n%250),
		cgroupParent: fmt.Sprintf("/pst-%d-%d", os.Getpid(), n),
	}
	// The leak check, less the file system the test mounted itself.
	leftovers := func() []string {
		var out []string
		for _, l := range e.leftovers() {
			if l != "mount "+root {
				out = append(out, l)
			}
		}
		return out
	}
	t.Cleanup(func() {
		if r := e.podrun("delete", "--all", "-A", "--grace-period", "1"); r.code != 0 {
			t.Errorf("cleanup: delete --all: %s", r)
		}
		for _, l := range leftovers() {
			t.Errorf("leftover after delete: %s", l)
		}
		_ = unix.Unmount(root, unix.MNT_DETACH)
		if link, err := netlink.LinkByName(e.bridge); err == nil {
			_ = netlink.LinkDel(link)
		}
		for _, d := range cgroupDirs(e.cgroupParent) {
			_ = os.Remove(d)
		}
	})
	e.must("load", "-i", testImage, "--tag", "busybox:1.28")
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: app, image: busybox:1.28, command: ['sh', '-c', 'while true; do echo line; sleep 0.01; done']}
`, "--wait")
	filler := filepath.Join(root, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(root, "probe"), []byte("x"), 0o644); err == nil {
		t.Fatal("the disk is not full")
	}
	if r := e.podrun("delete", "chatty"); r.code != 0 {
		t.Fatalf("delete on a full disk: %s", r)
	}
	if r := e.podrun("get", "chatty"); r.code == 0 {
		t.Errorf("pod still listed: %s", r)
	}
	if left := leftovers(); len(left) > 0 {
		t.Errorf("leftovers:\n%s", strings.Join(left, "\n"))
	}
	_ = os.Remove(filler)
}

// A pod whose supervisor died before the pod started (during sandbox setup)
// is not stuck Pending: apply of the same manifest starts it again.
func TestPodLostBeforeItStartedIsRestartedByApply(t *testing.T) {
	e := newEnv(t)
	manifest := e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: early}
spec:
  containers:
  - {name: app, image: busybox:1.28, command: ['sleep', '3600']}
`)
	e.must("apply", manifest, "--wait")
	p := e.pod("early")
	e.crashSupervisor(string(p.UID))
	// What a supervisor killed while it built the sandbox leaves: no start time.
	statusFile := filepath.Join(e.root, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "status.json")
	if err := os.WriteFile(statusFile, []byte(`{"phase":"Pending"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.must("apply", manifest, "--wait"); !strings.Contains(r.stdout, "pod/early restarted") {
		t.Fatalf("apply of a pod that never started: %s", r)
	}
	if got := e.pod("early"); got.UID != p.UID || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("uid %s phase %s", got.UID, got.Status.Phase)
	}
}
