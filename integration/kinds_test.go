package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const claimYAML = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`

const claimPodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'echo run >> /data/log; cat /data/log']
    volumeMounts: [{name: d, mountPath: /data}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
`

// A claim is a host directory that pods mount by name: a pod waits unscheduled
// for a missing claim, the data outlives the pod, readOnly is honoured, and a
// claim deleted while a pod uses it is Terminating until that pod is gone.
func TestClaimOutlivesPods(t *testing.T) {
	e := newEnv(t)
	// No claim yet: Pending with the scheduler's reason, as on a cluster.
	e.apply(claimPodYAML)
	e.waitFor("writer", 20*time.Second, "unschedulable", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == "Unschedulable" &&
				strings.Contains(c.Message, `persistentvolumeclaim "data" not found`) {
				return true
			}
		}
		return false
	})
	if s := e.status("writer"); s != "Pending" {
		t.Fatalf("a pod without its claim is %s", s)
	}
	if r := e.apply(claimYAML); r.stdout != "persistentvolumeclaim/data created\n" {
		t.Fatalf("apply claim: %s", r)
	}
	e.waitPhase("writer", corev1.PodSucceeded, 30*time.Second)
	if r := e.must("logs", "writer"); r.stdout != "run\n" {
		t.Fatalf("first run's log: %q", r.stdout)
	}
	r := e.must("get", "pvc")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE" {
		t.Fatalf("get pvc: %s", r)
	}
	if f := strings.Fields(lines[1]); len(f) != 7 || f[0] != "data" || f[1] != "Bound" || !strings.HasPrefix(f[2], "pvc-") || f[3] != "1Gi" || f[4] != "RWO" || f[5] != "<unset>" {
		t.Fatalf("get pvc row: %q", lines[1])
	}
	// kubectl's describe: the binding, the capacity and the pods using it.
	d := e.must("describe", "pvc", "data").stdout
	for _, want := range []string{"Status:", "Bound", "Capacity:", "1Gi", "Access Modes:", "RWO", "Used By:", "writer"} {
		if !strings.Contains(d, want) {
			t.Fatalf("describe pvc data lacks %q:\n%s", want, d)
		}
	}
	if d := e.must("describe", "ns", "default").stdout; !strings.Contains(d, "Name:") || !strings.Contains(d, "Active") {
		t.Fatalf("describe ns default:\n%s", d)
	}
	dir := filepath.Join(e.root, "volumes", "default", "data")
	if data, err := os.ReadFile(filepath.Join(dir, "log")); err != nil || string(data) != "run\n" {
		t.Fatalf("the claim's directory holds %q (%v)", data, err)
	}

	// The pod goes, the data stays: the same pod applied again sees it.
	e.must("delete", "writer")
	if r := e.apply(claimYAML); r.stdout != "persistentvolumeclaim/data unchanged\n" {
		t.Fatalf("re-apply claim: %s", r)
	}
	e.apply(claimPodYAML)
	e.waitPhase("writer", corev1.PodSucceeded, 30*time.Second)
	if r := e.must("logs", "writer"); r.stdout != "run\nrun\n" {
		t.Fatalf("second run's log: %q", r.stdout)
	}
	// readOnly: the claim is mounted read-only.
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'cat /data/log; if touch /data/x; then exit 1; fi']
    volumeMounts: [{name: d, mountPath: /data}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data, readOnly: true}}]
`)
	e.waitPhase("reader", corev1.PodSucceeded, 30*time.Second)

	// Deleted while pods use it: Terminating, then gone with the last pod.
	if r := e.must("delete", "pvc", "data"); r.stdout != "persistentvolumeclaim \"data\" deleted\n" {
		t.Fatalf("delete pvc: %s", r)
	}
	if r := e.must("get", "pvc", "data"); !strings.Contains(r.stdout, "Terminating") {
		t.Fatalf("a claim in use after delete: %s", r)
	}
	e.must("delete", "writer")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the claim went while pod reader uses it: %v", err)
	}
	e.must("delete", "reader")
	if r := e.podrun("get", "pvc", "data"); r.code != 1 {
		t.Fatalf("claim after its last pod: %s", r)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the claim's directory is still there: %v", err)
	}
}

// delete ns removes everything in the namespace; a manifest's Namespace is
// created first wherever it is in the file; default cannot be deleted.
func TestNamespaceDeleteRemovesAll(t *testing.T) {
	e := newEnv(t)
	r := e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: team}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.28
    command: ['sleep', '3600']
    volumeMounts: [{name: d, mountPath: /data}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: team}
data: {a: b}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team}
spec: {selector: {app: x}, ports: [{port: 80}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: team}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
`, "--wait")
	if !strings.HasPrefix(r.stdout, "namespace/team created\n") {
		t.Fatalf("apply: the Namespace is not first: %s", r)
	}
	r = e.must("get", "ns")
	for _, want := range []string{"default ", "kube-system ", "team "} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("get ns has no %q: %s", want, r)
		}
	}
	if r := e.podrun("delete", "ns", "default"); r.code != 1 || !strings.Contains(r.stderr, `namespaces "default" is forbidden: this namespace may not be deleted`) {
		t.Fatalf("delete ns default: %s", r)
	}
	if r := e.must("delete", "ns", "team"); r.stdout != "namespace \"team\" deleted\n" {
		t.Fatalf("delete ns: %s", r)
	}
	for _, kind := range []string{"pods", "cm", "svc", "pvc"} {
		if r := e.must("get", kind, "-n", "team", "-o", "name"); r.stdout != "" {
			t.Fatalf("get %s -n team after delete ns: %s", kind, r)
		}
	}
	if r := e.podrun("get", "ns", "team"); r.code != 1 || !strings.Contains(r.stderr, `namespaces "team" not found`) {
		t.Fatalf("get ns team after delete: %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "volumes", "team", "data")); !os.IsNotExist(err) {
		t.Fatalf("the claim's directory is left: %v", err)
	}
}

// One bad file among several: no Namespace, claim, ConfigMap or pod is created.
func TestApplyBadFileCreatesNoObject(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	good := "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n" + claimYAML + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bad}\nspec:\n  accessModes: [ReadWriteOnce]\n"
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.podrun("apply", "-f", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "b.yaml") || !strings.Contains(r.stderr, "spec.resources[storage]: Required value") {
		t.Fatalf("apply a bad claim: %s", r)
	}
	for _, kind := range []string{"pvc", "cm"} {
		if r := e.must("get", kind, "-o", "name"); r.stdout != "" {
			t.Fatalf("a failed apply created %s: %s", kind, r.stdout)
		}
	}
	if r := e.podrun("get", "ns", "team"); r.code != 1 {
		t.Fatalf("a failed apply created the namespace: %s", r)
	}
	// An update the API server refuses (a bound claim's spec) stops the
	// whole apply before anything of it is stored.
	e.apply(claimYAML)
	changed := strings.Replace(claimYAML, "ReadWriteOnce", "ReadWriteMany", 1) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2}\n"
	r = e.podrun("apply", "-f", e.manifest(changed))
	if r.code != 2 || !strings.Contains(r.stderr, `PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after creation`) {
		t.Fatalf("apply a changed claim: %s", r)
	}
	if r := e.must("get", "cm", "-o", "name"); r.stdout != "" {
		t.Fatalf("a refused apply created %s", r.stdout)
	}
}

// apply -k builds a kustomization with the kustomize library (namePrefix,
// commonLabels) and applies it; get, describe and delete take -k too.
func TestKustomize(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": "namePrefix: ci-\ncommonLabels: {team: blue}\nresources: [pod.yaml]\nconfigMapGenerator:\n- name: conf\n  literals: [mode=test]\n",
		"pod.yaml": `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['sh', '-c', 'echo $MODE']
    env: [{name: MODE, valueFrom: {configMapKeyRef: {name: conf, key: mode}}}]
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := e.must("apply", "-k", dir)
	if !strings.Contains(r.stdout, "pod/ci-web created") || !strings.Contains(r.stdout, "configmap/ci-conf-") {
		t.Fatalf("apply -k: %s", r)
	}
	e.waitPhase("ci-web", corev1.PodSucceeded, 30*time.Second)
	if r := e.must("logs", "ci-web"); r.stdout != "test\n" {
		t.Fatalf("the generated ConfigMap's value: %q", r.stdout)
	}
	// Every object of the kustomization, as kubectl get -k prints them.
	if r := e.must("get", "-k", dir, "-o", "name"); !strings.HasPrefix(r.stdout, "pod/ci-web\nconfigmap/ci-conf-") || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("get -k: %s", r)
	}
	if r := e.must("get", "pods", "-l", "team=blue", "-o", "name"); r.stdout != "pod/ci-web\n" {
		t.Fatalf("commonLabels: %s", r)
	}
	if r := e.podrun("apply", "-k", dir, "-f", filepath.Join(dir, "pod.yaml")); r.code != 2 {
		t.Fatalf("-k with -f: %s", r)
	}
	if r := e.must("delete", "-k", dir); !strings.Contains(r.stdout, `pod "ci-web" deleted`) || !strings.Contains(r.stdout, `configmap "ci-conf-`) {
		t.Fatalf("delete -k: %s", r)
	}
}
