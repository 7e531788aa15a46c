package integration

import (
	"github.com/podrun/podrun/tools/mkimage/archive"
	corev1 "k8s.io/api/core/v1"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Scenarios ported from Kubernetes' node e2e tests (test/e2e/common/node and
// test/e2e/common/storage), run end to end against podrun.

// downwardapi_volume.go "should update labels on modification" and "should
// update annotations on modification": a downwardAPI volume follows the
// pod's metadata after an update, as the kubelet remounts the pod's volumes
// when the pod changes; the environment keeps its first values.
func TestE2EDownwardAPIVolumeFollowsLabelAndAnnotationUpdates(t *testing.T) {
	e := newEnv(t)
	pod := func(label, note string) string {
		return `
apiVersion: v1
kind: Pod
metadata:
  name: labelsupdate
  labels: {key1: ` + label + `}
  annotations: {builder: ` + note + `}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client-container
    image: busybox:1.28
    command: ['sleep', '3600']
    env: [{name: LABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['key1']"}}}]
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}, {name: proj, mountPath: /etc/proj}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
  - name: proj
    projected:
      sources:
      - downwardAPI: {items: [{path: key1, fieldRef: {fieldPath: "metadata.labels['key1']"}}]}
`
	}
	e.apply(pod("value1", "bar"), "--wait")
	read := func() string {
		r := e.must("exec", "labelsupdate", "--", "sh", "-c", "cat /etc/podinfo/labels; echo; cat /etc/podinfo/annotations; echo; cat /etc/proj/key1; echo; echo $LABEL")
		return r.stdout
	}
	if got, want := read(), "key1=\"value1\"\nbuilder=\"bar\"\nvalue1\nvalue1\n"; got != want {
		t.Fatalf("before the update: %q, want %q", got, want)
	}
	if r := e.apply(pod("value2", "foo")); r.stdout != "pod/labelsupdate configured\n" {
		t.Fatalf("update: %s", r)
	}
	// Well within the default sync period (one minute): an update remounts at once.
	want := "key1=\"value2\"\nbuilder=\"foo\"\nvalue2\nvalue1\n"
	deadline := time.Now().Add(20 * time.Second * timeoutScale)
	for {
		got := read()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the update: %q, want %q", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p := e.pod("labelsupdate"); containerState(p, "client-container").RestartCount != 0 {
		t.Fatalf("the update restarted the container: %+v", containerState(p, "client-container"))
	}
	if strings.Contains(e.must("get", "pod", "labelsupdate").stdout, "Terminating") {
		t.Fatal("pod terminating after the update")
	}
}

// secrets_volume.go "optional updates should be reflected in volume" and
// projected_secret.go "optional updates should be reflected in volume": a
// changed Secret and an optional Secret created after the pod reach the
// running pod's secret and projected volumes (tmpfs, under the run root), and
// nothing of them is written under --root.
func TestE2ESecretVolumeUpdatesReachThePod(t *testing.T) {
	e := newEnv(t)
	secret := func(name, v string) string {
		return `
apiVersion: v1
kind: Secret
metadata: {name: ` + name + `}
stringData: {data-1: ` + v + `}
`
	}
	e.apply(secret("s-upd", "value-1"))
	e.must("--sync-frequency", "1s", "apply", "--wait", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: pod-secrets}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    command: ['sleep', '3600']
    volumeMounts:
    - {name: upd, mountPath: /etc/secret-volumes/upd}
    - {name: create, mountPath: /etc/secret-volumes/create}
    - {name: proj, mountPath: /etc/projected}
  volumes:
  - {name: upd, secret: {secretName: s-upd}}
  - {name: create, secret: {secretName: s-create, optional: true}}
  - name: proj
    projected: {sources: [{secret: {name: s-upd}}, {secret: {name: s-create, optional: true}}]}
`))
	read := func() string {
		return e.must("exec", "pod-secrets", "--", "sh", "-c",
			"cat /etc/secret-volumes/upd/data-1; echo; cat /etc/secret-volumes/create/data-1; echo; cat /etc/projected/data-1; echo").stdout
	}
	if got, want := read(), "value-1\n\nvalue-1\n"; got != want {
		t.Fatalf("before the update: %q, want %q", got, want)
	}
	e.apply(secret("s-upd", "value-2"))
	e.apply(secret("s-create", "value-3"))
	want := "value-2\nvalue-3\nvalue-3\n"
	deadline := time.Now().Add(20 * time.Second * timeoutScale)
	for {
		got := read()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the update: %q, want %q", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Secret values stay off --root: no volume of the pod there holds them.
	out, _ := exec.Command("grep", "-rl", "value-", filepath.Join(e.root, "pods")).Output()
	for _, f := range strings.Fields(string(out)) {
		if strings.Contains(f, "/volumes/") {
			t.Errorf("secret data under --root: %s", f)
		}
	}
}

// downwardapi.go "should provide pod name, namespace and IP address as env
// vars" with spec.serviceAccountName: the API server's ServiceAccount
// admission gives a pod that names no service account "default", which the
// downward API, -o jsonpath and field selectors then see.
func TestE2EPodWithoutServiceAccountRunsAsDefault(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: sa-env}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'echo SA=$SA']
    env: [{name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}]
`)
	e.waitPhase("sa-env", "Succeeded", 30*time.Second)
	if r := e.must("logs", "sa-env"); r.stdout != "SA=default\n" {
		t.Fatalf("logs: %s", r)
	}
	if r := e.must("get", "pod", "sa-env", "-o", "jsonpath={.spec.serviceAccountName} {.spec.serviceAccount}"); r.stdout != "default default" {
		t.Fatalf("jsonpath: %s", r)
	}
	if r := e.must("get", "pods", "--field-selector", "spec.serviceAccountName=default", "-o", "name"); r.stdout != "pod/sa-env\n" {
		t.Fatalf("field selector: %s", r)
	}
	if r := e.must("describe", "pod", "sa-env"); !regexp.MustCompile(`\nNamespace: +default\nPriority: +0\nService Account: +default\nNode: `).MatchString(r.stdout) {
		t.Fatalf("describe: %s", r)
	}
}

// security_context.go "When creating a container with runAsNonRoot": an image
// whose USER is a name cannot be verified non-root and is refused, a numeric
// non-root USER runs, and an explicit runAsUser 0 is refused; the messages
// are the kubelet's verifyRunAsNonRoot, with the Failed event.
func TestE2ERunAsNonRootWithImageUsers(t *testing.T) {
	e := newEnv(t)
	base := imgDockerArchiveLayers(t, testImage)[0]
	for tag, user := range map[string]string{"named": "nobody", "numeric": "65534", "numeric-group": "65534:65534"} {
		cfg := imgBusyboxConfig
		cfg.User = user
		e.must("load", "-i", imgWriteArchive(t, archive.DockerArchive, "", cfg, archive.Layer{Tar: base}), "--tag", "busybox:"+tag)
	}
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: named}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: 'busybox:named', command: ['id', '-u'], securityContext: {runAsNonRoot: true}}
---
apiVersion: v1
kind: Pod
metadata: {name: numeric}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: c, image: 'busybox:numeric', command: ['id', '-u']}
  - {name: d, image: 'busybox:numeric-group', command: ['id', '-u']}
---
apiVersion: v1
kind: Pod
metadata: {name: explicit-root-uid}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: 'busybox:numeric', command: ['id', '-u'], securityContext: {runAsNonRoot: true, runAsUser: 0}}
---
apiVersion: v1
kind: Pod
metadata: {name: named-with-uid}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: 'busybox:named', command: ['id', '-u'], securityContext: {runAsNonRoot: true, runAsUser: 1234}}
`)
	refused := func(name, want string) {
		t.Helper()
		p := e.waitFor(name, 30*time.Second, "refused", func(p *corev1.Pod) bool {
			w := containerState(p, "c").State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError"
		})
		want = strings.ReplaceAll(want, "POD", name+"_default("+string(p.UID)+")")
		if msg := containerState(p, "c").State.Waiting.Message; msg != want {
			t.Errorf("pod %s: message %q, want %q", name, msg, want)
		}
		if ev := e.must("events", "--for", "pod/"+name).stdout; !strings.Contains(ev, "Failed") || !strings.Contains(ev, "Error: "+want) {
			t.Errorf("pod %s: no Failed event with the message:\n%s", name, ev)
		}
	}
	refused("named", `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "POD", container: c)`)
	refused("explicit-root-uid", `container's runAsUser breaks non-root policy (pod: "POD", container: c)`)
	for _, name := range []string{"numeric", "named-with-uid"} {
		e.waitPhase(name, corev1.PodSucceeded, 30*time.Second)
	}
	if r := e.must("logs", "named-with-uid"); r.stdout != "1234\n" {
		t.Errorf("named-with-uid: %s", r)
	}
	if r := e.must("logs", "numeric", "-c", "d"); r.stdout != "65534\n" {
		t.Errorf("numeric-group: %s", r)
	}
}

// configmap.go / secrets.go env scenarios with a missing key or object: the
// container waits in CreateContainerConfigError with the kubelet's error
// (makeEnvironmentVariables; the Secret manager's NotFound) as its message.
func TestE2EMissingEnvSourceMessages(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {data-1: value-1}
---
apiVersion: v1
kind: Pod
metadata: {name: missing-key}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['env'], env: [{name: X, valueFrom: {configMapKeyRef: {name: cm, key: nope}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: missing-secret}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['env'], envFrom: [{secretRef: {name: nosecret}}]}
`)
	for name, want := range map[string]string{
		"missing-key":    "couldn't find key nope in ConfigMap default/cm",
		"missing-secret": `secret "nosecret" not found`,
	} {
		p := e.waitFor(name, 30*time.Second, "refused", func(p *corev1.Pod) bool {
			w := containerState(p, "c").State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError"
		})
		if msg := containerState(p, "c").State.Waiting.Message; msg != want {
			t.Errorf("pod %s: message %q, want %q", name, msg, want)
		}
	}
}

// pods.go / node e2e pod status checks read spec.priority: the Priority
// admission (no default PriorityClass) gives a pod without a class priority
// 0 and a system class its value, both PreemptLowerPriority; kubectl describe
// prints it; a second apply of the same manifest changes nothing.
func TestE2EPodPriorityFromAdmission(t *testing.T) {
	e := newEnv(t)
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
---
apiVersion: v1
kind: Pod
metadata: {name: critical}
spec:
  terminationGracePeriodSeconds: 1
  priorityClassName: system-node-critical
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`
	e.apply(manifest, "--wait")
	for name, want := range map[string]string{"plain": "0 PreemptLowerPriority", "critical": "2000001000 PreemptLowerPriority"} {
		if r := e.must("get", "pod", name, "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}"); r.stdout != want {
			t.Errorf("pod %s: %q, want %q", name, r.stdout, want)
		}
	}
	// kubectl describe's describePod: "Priority Class Name:" only when set
	// (its tabwriter widens the first block's key column for it).
	if r := e.must("describe", "pod", "critical"); !strings.Contains(r.stdout, "\nNamespace:            default\nPriority:             2000001000\nPriority Class Name:  system-node-critical\nService Account:      default\n") {
		t.Errorf("describe: %s", r)
	}
	if r := e.must("describe", "pod", "plain"); strings.Contains(r.stdout, "Priority Class Name:") || !strings.Contains(r.stdout, "\nNamespace:        default\nPriority:         0\nService Account:  default\n") {
		t.Errorf("describe: %s", r)
	}
	if r := e.apply(manifest); r.stdout != "pod/plain unchanged\npod/critical unchanged\n" {
		t.Errorf("second apply: %s", r)
	}
}

// The DefaultTolerationSeconds admission plugin gives a pod that does not
// already tolerate them tolerations of the not-ready and unreachable
// NoExecute taints for 300 s; `get -o yaml` shows them and kubectl
// describe's "Tolerations:" lists them sorted by key.
func TestE2EDefaultTolerationSeconds(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
---
apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  terminationGracePeriodSeconds: 1
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
  - {key: dedicated, operator: Equal, value: ci, effect: NoSchedule}
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`)
	const jp = `jsonpath={range .spec.tolerations[*]}{.key}/{.operator}/{.effect}/{.tolerationSeconds};{end}`
	for name, want := range map[string]string{
		"plain":    "node.kubernetes.io/not-ready/Exists/NoExecute/300;node.kubernetes.io/unreachable/Exists/NoExecute/300;",
		"tolerant": "node.kubernetes.io/not-ready/Exists/NoExecute/60;dedicated/Equal/NoSchedule/;node.kubernetes.io/unreachable/Exists/NoExecute/300;",
	} {
		if r := e.must("get", "pod", name, "-o", jp); r.stdout != want {
			t.Errorf("pod %s tolerations: %q, want %q", name, r.stdout, want)
		}
	}
	if r := e.must("get", "pod", "plain", "-o", "yaml"); !strings.Contains(r.stdout, "    tolerationSeconds: 300\n") {
		t.Errorf("get -o yaml: %s", r)
	}
	if r := e.must("describe", "pod", "plain"); !strings.Contains(r.stdout, "\nTolerations:      node.kubernetes.io/not-ready:NoExecute op=Exists for 300s\n                  node.kubernetes.io/unreachable:NoExecute op=Exists for 300s\n") {
		t.Errorf("describe plain: %s", r)
	}
	if r := e.must("describe", "pod", "tolerant"); !strings.Contains(r.stdout, "\nTolerations:      dedicated=ci:NoSchedule\n                  node.kubernetes.io/not-ready:NoExecute op=Exists for 60s\n                  node.kubernetes.io/unreachable:NoExecute op=Exists for 300s\n") {
		t.Errorf("describe tolerant: %s", r)
	}
}

// The Priority admission with PriorityClass objects (admission.go admitPod):
// an unknown class and a priority that differs from the class's are
// forbidden with the API server's messages; a user class gives its value and
// preemptionPolicy, the globalDefault class is a classless pod's, and only one
// class may be the default. `get pc` lists the system classes too.
func TestPriorityClassAdmission(t *testing.T) {
	e := newEnv(t)
	pod := func(name, spec string) string {
		return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  terminationGracePeriodSeconds: 1` + spec + `
  containers:
  - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`
	}
	if r := e.podrun("apply", "-f", e.manifest(pod("p1", "\n  priorityClassName: nope"))); r.code != 1 || !strings.Contains(r.stderr, `pods "p1" is forbidden: no PriorityClass with name nope was found`) {
		t.Errorf("unknown class: %s", r)
	}
	if r := e.podrun("apply", "-f", e.manifest(pod("p2", "\n  priority: 5"))); r.code != 1 || !strings.Contains(r.stderr, `pods "p2" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`) {
		t.Errorf("explicit priority: %s", r)
	}
	classes := `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
description: batch jobs that never preempt
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: dflt}
value: 7
globalDefault: true
`
	if r := e.apply(classes + "---" + pod("p3", "\n  priorityClassName: high") + "---" + pod("p4", "")); r.stdout != "priorityclass.scheduling.k8s.io/high created\npriorityclass.scheduling.k8s.io/dflt created\npod/p3 created\npod/p4 created\n" {
		t.Errorf("apply: %s", r)
	}
	for name, want := range map[string]string{"p3": "high 1000 Never", "p4": "dflt 7 PreemptLowerPriority"} {
		if r := e.must("get", "pod", name, "-o", "jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}"); r.stdout != want {
			t.Errorf("pod %s: %q, want %q", name, r.stdout, want)
		}
	}
	r := e.must("get", "pc")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || strings.Join(strings.Fields(lines[0]), " ") != "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY" || !strings.Contains(r.stdout, "system-node-critical") {
		t.Errorf("get pc: %s", r)
	}
	for _, l := range lines {
		if f := strings.Fields(l); f[0] == "high" && (f[1] != "1000" || f[2] != "false" || f[4] != "Never") {
			t.Errorf("get pc row %q", l)
		}
	}
	other := "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: other}\nvalue: 3\nglobalDefault: true\n"
	if r := e.podrun("apply", "-f", e.manifest(other)); r.code != 1 || !strings.Contains(r.stderr, `priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass dflt is already marked as default. Only one default can exist`) {
		t.Errorf("second default: %s", r)
	}
	if r := e.must("describe", "pod", "p3"); !strings.Contains(r.stdout, "\nPriority:             1000\nPriority Class Name:  high\n") {
		t.Errorf("describe: %s", r)
	}
	e.must("delete", "pod", "p3", "p4", "--force")
	if r := e.must("delete", "pc", "high", "dflt"); r.stdout != "priorityclass.scheduling.k8s.io \"high\" deleted\npriorityclass.scheduling.k8s.io \"dflt\" deleted\n" {
		t.Errorf("delete pc: %s", r)
	}
}
