package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Scenarios of kubectl's own behaviour (test/e2e/kubectl, kubectl's delete,
// describe and wait commands) that podrun's CLI follows.

// kcPod is a pod manifest of the kubectl scenarios: one busybox container
// running script, with the given grace period.
func kcPod(name, grace, script string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, labels: {app: kc}}
spec:
  terminationGracePeriodSeconds: ` + grace + `
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', '` + script + `']
`
}

// kubectl delete --timeout (delete.go DeleteResult): the deletion is
// requested and printed, then waited for until the timeout; past it, kubectl's
// wait error "timed out waiting for the condition on pods/NAME" and exit 1,
// the pod still Terminating. Within the timeout the delete succeeds.
func TestKubectlDeleteTimeout(t *testing.T) {
	e := newEnv(t)
	e.apply(kcPod("kc-stubborn", "30", "trap \"\" TERM; while true; do sleep 1; done") + "---" + kcPod("kc-quick", "1", "sleep 3600"))
	e.must("wait", "pod/kc-stubborn", "pod/kc-quick", "--for=condition=Ready", "--timeout=60s")
	start := time.Now()
	r := e.podrun("delete", "pod", "kc-stubborn", "--timeout=2s")
	if r.code != 1 || r.stdout != "pod \"kc-stubborn\" deleted\n" || !strings.Contains(r.stderr, "error: timed out waiting for the condition on pods/kc-stubborn") {
		t.Errorf("delete --timeout=2s of a pod that ignores SIGTERM: %s", r)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("delete --timeout=2s took %s", d)
	}
	if s := e.status("kc-stubborn"); s != "Terminating" {
		t.Errorf("after the timeout the pod reads %s, want Terminating", s)
	}
	if r := e.podrun("delete", "pod", "kc-quick", "--timeout=60s"); r.code != 0 || r.stdout != "pod \"kc-quick\" deleted\n" {
		t.Errorf("delete --timeout=60s: %s", r)
	}
	if r := e.podrun("get", "pod", "kc-quick"); r.code != 1 || !strings.Contains(r.stderr, `pods "kc-quick" not found`) {
		t.Errorf("after delete --timeout: %s", r)
	}
	if r := e.podrun("delete", "pod", "kc-stubborn", "--timeout=-1s"); r.code != 2 {
		t.Errorf("negative --timeout: %s", r)
	}
	e.must("delete", "pod", "kc-stubborn", "--grace-period=1")
}

// kubectl delete's DeleteOptions.Validate and PrintObj: --force with a
// positive grace period is refused; --force alone is an immediate deletion,
// warned about on stderr and printed "force deleted".
func TestKubectlDeleteForce(t *testing.T) {
	e := newEnv(t)
	e.apply(kcPod("kc-force", "30", "sleep 3600"))
	if r := e.podrun("delete", "pod", "kc-force", "--force", "--grace-period=5"); r.code != 1 || !strings.Contains(r.stderr, "--force and --grace-period greater than 0 cannot be specified together") || r.stdout != "" {
		t.Errorf("--force --grace-period=5: %s", r)
	}
	r := e.must("delete", "pod", "kc-force", "--force")
	if r.stdout != "pod \"kc-force\" force deleted\n" || !strings.Contains(r.stderr, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.") {
		t.Errorf("delete --force: %s", r)
	}
	e.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kc-cm}\ndata: {a: b}\n")
	if r := e.must("delete", "configmap", "kc-cm", "--force", "--grace-period=0"); r.stdout != "configmap \"kc-cm\" force deleted\n" {
		t.Errorf("delete configmap --force: %s", r)
	}
}

// kubectl describe priorityclass (describe.go describePriorityClass), the
// system classes' creation time (made with the cluster, so AGE is real), and
// what the API server answers about classes: system ones cannot be deleted,
// a missing one is priorityclasses.scheduling.k8s.io, a changed value is
// Invalid as kubectl prints it.
func TestKubectlDescribePriorityClass(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: kc-batch
  annotations: {team: infra, note: nightly}
value: 1000
preemptionPolicy: Never
description: batch jobs that never preempt
`)
	want := "Name:              kc-batch\n" +
		"Value:             1000\n" +
		"GlobalDefault:     false\n" +
		"PreemptionPolicy:  Never\n" +
		"Description:       batch jobs that never preempt\n" +
		"Annotations:       note=nightly,team=infra\n" +
		"Events:            <none>\n"
	for _, kind := range []string{"pc", "priorityclass", "priorityclasses.scheduling.k8s.io"} {
		if r := e.must("describe", kind, "kc-batch"); r.stdout != want {
			t.Errorf("describe %s kc-batch:\n%s\nwant:\n%s", kind, r.stdout, want)
		}
	}
	if r := e.must("describe", "pc", "system-node-critical"); !strings.Contains(r.stdout, "Name:              system-node-critical\nValue:             2000001000\nGlobalDefault:     false\nPreemptionPolicy:  PreemptLowerPriority\nDescription:       Used for system critical pods that must not be moved from their current node.\nAnnotations:       <none>\nEvents:            <none>\n") {
		t.Errorf("describe a system class: %s", r)
	}
	if r := e.podrun("describe", "pc", "kc-nope"); r.code != 1 || !strings.Contains(r.stderr, `priorityclasses.scheduling.k8s.io "kc-nope" not found`) {
		t.Errorf("describe a missing class: %s", r)
	}
	// The system classes were created with the store: a real AGE.
	r := e.must("get", "pc", "--no-headers")
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if f := strings.Fields(l); strings.HasPrefix(f[0], "system-") && !regexp.MustCompile(`^\d+[smhd]`).MatchString(f[3]) {
			t.Errorf("system class AGE %q: %q", f[3], l)
		}
	}
	if r := e.must("get", "pc", "system-cluster-critical", "-o", "jsonpath={.metadata.creationTimestamp}"); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT`).MatchString(r.stdout) {
		t.Errorf("system class creationTimestamp %q", r.stdout)
	}
	if r := e.must("get", "ns", "default", "--no-headers"); strings.Contains(r.stdout, "<unknown>") {
		t.Errorf("the default namespace has no age: %s", r)
	}
	if r := e.podrun("delete", "pc", "system-node-critical"); r.code != 1 || !strings.Contains(r.stderr, `priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`) {
		t.Errorf("delete a system class: %s", r)
	}
	changed := "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kc-batch}\nvalue: 1001\npreemptionPolicy: Never\n"
	if r := e.podrun("apply", "-f", e.manifest(changed)); r.code != 2 || !strings.Contains(r.stderr, `The PriorityClass "kc-batch" is invalid: value: Forbidden: may not be changed in an update.`) {
		t.Errorf("changed value: %s", r)
	}
	r = e.must("delete", "pc", "kc-batch", "-n", "default")
	if r.stdout != "priorityclass.scheduling.k8s.io \"kc-batch\" deleted\n" || !strings.Contains(r.stderr, "Warning: deleting cluster-scoped resources, not scoped to the provided namespace") {
		t.Errorf("delete pc -n default: %s", r)
	}
}

// The API server's NotFound names a grouped resource with its group
// (schema.GroupResource.String()): deployments.apps, jobs.batch, …, in get,
// describe, delete and wait.
func TestKubectlGroupedResourceErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "deployment", "kc-x"}, `deployments.apps "kc-x" not found`},
		{[]string{"get", "rs", "kc-x"}, `replicasets.apps "kc-x" not found`},
		{[]string{"get", "ds", "kc-x"}, `daemonsets.apps "kc-x" not found`},
		{[]string{"get", "sts", "kc-x"}, `statefulsets.apps "kc-x" not found`},
		{[]string{"get", "job", "kc-x"}, `jobs.batch "kc-x" not found`},
		{[]string{"get", "cronjob", "kc-x"}, `cronjobs.batch "kc-x" not found`},
		{[]string{"get", "pc", "kc-x"}, `priorityclasses.scheduling.k8s.io "kc-x" not found`},
		{[]string{"get", "configmap", "kc-x"}, `configmaps "kc-x" not found`},
		{[]string{"describe", "deployment", "kc-x"}, `deployments.apps "kc-x" not found`},
		{[]string{"describe", "job", "kc-x"}, `jobs.batch "kc-x" not found`},
		{[]string{"delete", "deployment", "kc-x"}, `deployments.apps "kc-x" not found`},
		{[]string{"delete", "cronjob", "kc-x"}, `cronjobs.batch "kc-x" not found`},
		{[]string{"delete", "pc", "kc-x"}, `priorityclasses.scheduling.k8s.io "kc-x" not found`},
		{[]string{"wait", "deployment/kc-x", "--for=condition=Available", "--timeout=1s"}, `deployments.apps "kc-x" not found`},
	} {
		if r := e.podrun(tc.args...); r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: %s\nwant %q", strings.Join(tc.args, " "), r, tc.want)
		}
	}
}

// The Priority admission applies on create only (admission.go Admit): a pod
// created before a globalDefault PriorityClass keeps priority 0, and applying
// its unchanged manifest again is "unchanged", not a forbidden spec change;
// a new pod gets the default class.
func TestKubectlReapplyAfterDefaultPriorityClass(t *testing.T) {
	e := newEnv(t)
	pod := kcPod("kc-plain", "1", "sleep 3600")
	if r := e.apply(pod); r.stdout != "pod/kc-plain created\n" {
		t.Fatalf("apply: %s", r)
	}
	e.apply("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kc-default}\nvalue: 5\nglobalDefault: true\n")
	if r := e.podrun("apply", "-f", e.manifest(pod)); r.code != 0 || r.stdout != "pod/kc-plain unchanged\n" {
		t.Errorf("re-apply after a globalDefault class: %s", r)
	}
	if r := e.must("get", "pod", "kc-plain", "-o", "jsonpath={.spec.priority}/{.spec.priorityClassName}"); r.stdout != "0/" {
		t.Errorf("the existing pod's priority: %q", r.stdout)
	}
	// A label change is still an update in place, the priority untouched.
	labelled := strings.Replace(pod, "labels: {app: kc}", "labels: {app: kc, tier: x}", 1)
	if r := e.podrun("apply", "-f", e.manifest(labelled)); r.code != 0 || r.stdout != "pod/kc-plain configured\n" {
		t.Errorf("label change after a globalDefault class: %s", r)
	}
	if r := e.apply(kcPod("kc-new", "1", "sleep 3600")); r.stdout != "pod/kc-new created\n" {
		t.Errorf("apply a new pod: %s", r)
	}
	if r := e.must("get", "pod", "kc-new", "-o", "jsonpath={.spec.priority}/{.spec.priorityClassName}"); r.stdout != "5/kc-default" {
		t.Errorf("a new pod's priority: %q", r.stdout)
	}
	e.must("delete", "pod", "kc-plain", "kc-new", "--grace-period=1")
	e.must("delete", "pc", "kc-default")
}

// test/e2e/kubectl/logs.go: a pod's logs filtered (--tail, --limit-bytes,
// --timestamps), its default container by annotation, --all-containers, and
// LogsOptions.Validate's refusals.
func TestKubectlLogsOptions(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: kc-logs
  annotations: {kubectl.kubernetes.io/default-container: c2}
spec:
  restartPolicy: Never
  containers:
  - {name: c1, image: busybox:1.28, command: ['sh', '-c', 'for i in $(seq 1 10); do echo one $i; done']}
  - {name: c2, image: busybox:1.28, command: ['sh', '-c', 'for i in $(seq 1 20); do echo two $i; done']}
`)
	e.waitPhase("kc-logs", "Succeeded", 60*time.Second)
	lines := func(out string) []string { return strings.Split(strings.TrimRight(out, "\n"), "\n") }
	if r := e.must("logs", "kc-logs", "-c", "c1"); len(lines(r.stdout)) != 10 {
		t.Errorf("logs -c c1: %s", r)
	}
	if r := e.must("logs", "kc-logs", "--all-containers"); len(lines(r.stdout)) != 30 {
		t.Errorf("logs --all-containers: %s", r)
	}
	if r := e.must("logs", "kc-logs"); len(lines(r.stdout)) != 20 || !strings.HasPrefix(r.stdout, "two 1\n") {
		t.Errorf("logs of the default container: %s", r)
	}
	if r := e.must("logs", "kc-logs", "c1", "--tail=1"); r.stdout != "one 10\n" {
		t.Errorf("logs --tail=1: %s", r)
	}
	if r := e.must("logs", "kc-logs", "c1", "--limit-bytes=1"); r.stdout != "o" {
		t.Errorf("logs --limit-bytes=1: %s", r)
	}
	r := e.must("logs", "kc-logs", "c1", "--tail=1", "--timestamps")
	if w := strings.Split(strings.TrimRight(r.stdout, "\n"), " "); len(lines(r.stdout)) != 1 || len(w) < 2 {
		t.Errorf("logs --tail=1 --timestamps: %s", r)
	} else if _, err := time.Parse(time.RFC3339Nano, w[0]); err != nil {
		t.Errorf("timestamp %q: %v", w[0], err)
	}
	if r := e.must("logs", "kc-logs", "c2", "-f", "--tail=2"); r.stdout != "two 19\ntwo 20\n" {
		t.Errorf("logs -f of a container that has ended: %s", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kc-logs", "-c", "c1", "--all-containers"}, "--all-containers=true should not be specified with container name c1"},
		{[]string{"kc-logs", "c1", "-c", "c2"}, "only one of -c or an inline [CONTAINER] arg is allowed"},
		{[]string{"kc-logs", "--limit-bytes=-1"}, "--limit-bytes must be greater than 0"},
		{[]string{"kc-logs", "--tail=-2"}, "--tail must be greater than or equal to -1"},
		{[]string{"kc-logs", "--since=1h", "--since-time=2026-01-01T00:00:00Z"}, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
	} {
		if r := e.podrun(append([]string{"logs"}, tc.args...)...); r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("logs %s: %s\nwant %q", strings.Join(tc.args, " "), r, tc.want)
		}
	}
}

// test/e2e/kubectl/logs.go "all pod logs": logs deploy/NAME takes one of
// its pods (saying which), --all-pods every one, prefixed [pod/NAME/C], with
// the default container or --all-containers; -f over more streams than
// --max-log-requests is refused.
func TestKubectlLogsOfDeployment(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: kc-dep}
spec:
  replicas: 2
  selector: {matchLabels: {app: kc-dep}}
  template:
    metadata:
      labels: {app: kc-dep}
      annotations: {kubectl.kubernetes.io/default-container: c2}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c1, image: busybox:1.28, command: ['sh', '-c', 'echo one; exec sleep 3600']}
      - {name: c2, image: busybox:1.28, command: ['sh', '-c', 'echo two; exec sleep 3600']}
`)
	e.must("rollout", "status", "deployment/kc-dep", "--timeout=90s")
	e.must("wait", "pod", "-l", "app=kc-dep", "--for=condition=Ready", "--timeout=60s")
	names := strings.Fields(e.must("get", "pods", "-l", "app=kc-dep", "-o", "jsonpath={.items[*].metadata.name}").stdout)
	if len(names) != 2 {
		t.Fatalf("pods of the deployment: %v", names)
	}
	r := e.must("logs", "deploy/kc-dep")
	if r.stdout != "two\n" || !strings.Contains(r.stderr, "Found 2 pods, using pod/") {
		t.Errorf("logs deploy/kc-dep: %s", r)
	}
	r = e.must("logs", "deploy/kc-dep", "--all-pods")
	for _, n := range names {
		if !strings.Contains(r.stdout, "[pod/"+n+"/c2] two\n") {
			t.Errorf("logs --all-pods: no line of %s: %s", n, r)
		}
	}
	if strings.Contains(r.stdout, "/c1]") || len(strings.Split(strings.TrimSpace(r.stdout), "\n")) != 2 {
		t.Errorf("logs --all-pods: %s", r)
	}
	r = e.must("logs", "deploy/kc-dep", "--all-pods", "--all-containers")
	for _, n := range names {
		for _, want := range []string{"[pod/" + n + "/c1] one\n", "[pod/" + n + "/c2] two\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("logs --all-pods --all-containers: no %q: %s", want, r)
			}
		}
	}
	if r := e.podrun("logs", "-l", "app=kc-dep", "-f", "--max-log-requests=1"); r.code != 1 || !strings.Contains(r.stderr, "you are attempting to follow 2 log streams, but maximum allowed concurrency is 1, use --max-log-requests to increase the limit") {
		t.Errorf("logs -f over --max-log-requests: %s", r)
	}
	if r := e.podrun("logs", "deploy/kc-none"); r.code != 1 || !strings.Contains(r.stderr, `deployments.apps "kc-none" not found`) {
		t.Errorf("logs of a missing deployment: %s", r)
	}
}

// test/e2e/kubectl/kubectl.go "Kubectl label": label a pod, see it with -L,
// remove it with KEY-; kubectl label's messages (labeled, not labeled,
// unlabeled, modified), --overwrite, and annotate likewise; a Service's
// endpoints follow a pod's new labels; a stored object is labelled too.
func TestKubectlLabelAnnotate(t *testing.T) {
	e := newEnv(t)
	e.apply(kcPod("kc-pause", "1", "sleep 3600"))
	e.must("wait", "pod/kc-pause", "--for=condition=Ready", "--timeout=60s")
	if r := e.must("label", "pods", "kc-pause", "testing-label=testing-label-value"); r.stdout != "pod/kc-pause labeled\n" {
		t.Errorf("label: %s", r)
	}
	if r := e.must("get", "pod", "kc-pause", "-L", "testing-label"); !strings.Contains(r.stdout, "testing-label-value") {
		t.Errorf("get -L after label: %s", r)
	}
	if r := e.podrun("label", "pod/kc-pause", "testing-label=other"); r.code != 1 || !strings.Contains(r.stderr, "'testing-label' already has a value (testing-label-value), and --overwrite is false") {
		t.Errorf("label without --overwrite: %s", r)
	}
	if r := e.must("label", "pod/kc-pause", "testing-label=testing-label-value"); r.stdout != "pod/kc-pause not labeled\n" {
		t.Errorf("label again: %s", r)
	}
	if r := e.must("label", "pod/kc-pause", "testing-label=other", "x=y", "--overwrite"); r.stdout != "pod/kc-pause labeled\n" {
		t.Errorf("label --overwrite: %s", r)
	}
	if r := e.must("label", "pods", "kc-pause", "x-", "z=1"); r.stdout != "pod/kc-pause modified\n" {
		t.Errorf("label x- z=1: %s", r)
	}
	if r := e.must("label", "pods", "kc-pause", "testing-label-"); r.stdout != "pod/kc-pause unlabeled\n" {
		t.Errorf("label testing-label-: %s", r)
	}
	if r := e.must("get", "pod", "kc-pause", "-L", "testing-label"); strings.Contains(r.stdout, "testing-label-value") || strings.Contains(r.stdout, "other") {
		t.Errorf("get -L after removal: %s", r)
	}
	if r := e.must("get", "pod", "kc-pause", "-o", "jsonpath={.metadata.labels}"); r.stdout != `{"app":"kc","z":"1"}` {
		t.Errorf("labels: %s", r)
	}
	// The pod is still the same running pod, and applying its manifest
	// again changes nothing (kubectl apply leaves what it did not set).
	if s := e.status("kc-pause"); s != "Running" {
		t.Errorf("pod after relabelling: %s", s)
	}
	if r := e.podrun("label", "pods", "kc-pause", "a=b", "a-"); r.code != 2 || !strings.Contains(r.stderr, "can not both modify and remove a label in the same command") {
		t.Errorf("modify and remove: %s", r)
	}
	if r := e.must("annotate", "pods", "kc-pause", "description=my pod"); r.stdout != "pod/kc-pause annotated\n" {
		t.Errorf("annotate: %s", r)
	}
	if r := e.podrun("annotate", "pods", "kc-pause", "description=other"); r.code != 1 || !strings.Contains(r.stderr, "--overwrite is false but found the following declared annotation(s): 'description' already has a value (my pod)") {
		t.Errorf("annotate without --overwrite: %s", r)
	}
	if r := e.must("get", "pod", "kc-pause", "-o", "jsonpath={.metadata.annotations.description}"); r.stdout != "my pod" {
		t.Errorf("annotation: %q", r.stdout)
	}
	e.must("annotate", "pod/kc-pause", "description-")
	if r := e.must("get", "pod", "kc-pause", "-o", "jsonpath={.metadata.annotations}"); strings.Contains(r.stdout, "description") {
		t.Errorf("annotation after removal: %q", r.stdout)
	}
	// A Service's endpoints follow the new labels.
	e.apply("apiVersion: v1\nkind: Service\nmetadata: {name: kc-svc}\nspec:\n  selector: {tier: web}\n  ports: [{port: 80}]\n")
	e.must("label", "pod", "kc-pause", "tier=web")
	ip := e.pod("kc-pause").Status.PodIP
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.must("get", "endpoints", "kc-svc")
		if strings.Contains(r.stdout, ip+":80") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("endpoints of kc-svc after labelling the pod: %q, want %q", r.stdout, ip)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kc-cm}\ndata: {a: b}\n")
	if r := e.must("label", "configmap", "kc-cm", "team=infra"); r.stdout != "configmap/kc-cm labeled\n" {
		t.Errorf("label configmap: %s", r)
	}
	if r := e.must("get", "cm", "-l", "team=infra", "-o", "name"); r.stdout != "configmap/kc-cm\n" {
		t.Errorf("get cm -l after label: %s", r)
	}
	if r := e.podrun("label", "pods", "kc-none", "a=b"); r.code != 1 || !strings.Contains(r.stderr, `pods "kc-none" not found`) {
		t.Errorf("label a missing pod: %s", r)
	}
}

// kubectl get's output options on every kind, not only pods: -o jsonpath and
// custom-columns for Services and Endpoints, --show-labels, -L and
// --no-headers on the tables of Services, ConfigMaps, Deployments and
// PriorityClasses (HumanReadablePrinter's label columns, LABELS last).
func TestKubectlGetOutputOtherKinds(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Service
metadata: {name: kc-svc, labels: {tier: web}}
spec: {selector: {app: kc}, ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-cm, labels: {team: infra}}
data: {k: v}
`)
	if r := e.must("get", "svc", "kc-svc", "-o", "jsonpath={.spec.ports[0].port}"); r.stdout != "80" {
		t.Errorf("get svc -o jsonpath: %s", r)
	}
	if r := e.must("get", "svc", "-o", "custom-columns=NAME:.metadata.name,PORT:.spec.ports[0].port"); r.stdout != "NAME     PORT\nkc-svc   80\n" {
		t.Errorf("get svc -o custom-columns: %q", r.stdout)
	}
	if r := e.must("get", "endpoints", "kc-svc", "-o", "jsonpath={.metadata.name}"); r.stdout != "kc-svc" {
		t.Errorf("get endpoints -o jsonpath: %s", r)
	}
	r := e.must("get", "svc", "--show-labels", "-L", "tier")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE TIER LABELS" || !strings.HasSuffix(lines[1], "web    tier=web") {
		t.Errorf("get svc --show-labels -L tier: %q", r.stdout)
	}
	if r := e.must("get", "cm", "kc-cm", "--show-labels", "--no-headers"); !strings.HasPrefix(r.stdout, "kc-cm ") || !strings.HasSuffix(r.stdout, "team=infra\n") || strings.Contains(r.stdout, "NAME") {
		t.Errorf("get cm --show-labels --no-headers: %q", r.stdout)
	}
	if r := e.must("get", "pc", "--no-headers"); strings.Contains(r.stdout, "NAME") || !strings.HasPrefix(r.stdout, "system-cluster-critical ") {
		t.Errorf("get pc --no-headers: %q", r.stdout)
	}
}

// kubectl exec's exit codes (the command's own; an unknown container is the
// API server's BadRequest, exit 1) and kubectl wait's timeout words
// ("timed out waiting for the condition on pods/NAME"; podrun exits 124).
func TestKubectlExecAndWaitErrors(t *testing.T) {
	e := newEnv(t)
	e.apply(kcPod("kc-exec", "1", "sleep 3600"))
	e.must("wait", "pod/kc-exec", "--for=condition=Ready", "--timeout=60s")
	if r := e.podrun("exec", "kc-exec", "--", "sh", "-c", "exit 3"); r.code != 3 {
		t.Errorf("exec exit 3: %s", r)
	}
	if r := e.podrun("exec", "kc-exec", "-c", "nope", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "container nope is not valid for pod kc-exec") {
		t.Errorf("exec -c nope: %s", r)
	}
	if r := e.podrun("wait", "pod/kc-exec", "--for=condition=Nope", "--timeout=1s"); r.code == 0 || !strings.Contains(r.stderr, "timed out waiting for the condition on pods/kc-exec") {
		t.Errorf("wait timeout: %s", r)
	}
	e.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kc-cm}\ndata: {a: b}\n")
	if r := e.podrun("wait", "configmap/kc-cm", "--for=delete", "--timeout=1s"); r.code == 0 || !strings.Contains(r.stderr, "timed out waiting for the condition on configmaps/kc-cm") {
		t.Errorf("wait --for=delete timeout: %s", r)
	}
}

// test/e2e/kubectl/kubectl.go "should check if kubectl describe prints
// relevant information for cronjob" (describe.go describeCronJob with
// describeJobTemplate).
func TestKubectlDescribeCronJob(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: batch/v1
kind: CronJob
metadata: {name: kc-cronjob}
spec:
  schedule: "*/1 * * * *"
  startingDeadlineSeconds: 30
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox:1.28, command: ["true"]}]
`)
	r := e.must("describe", "cronjob", "kc-cronjob")
	for _, want := range [][]string{
		{"Name:", "kc-cronjob"}, {"Namespace:", "default"}, {"Labels:"}, {"Annotations:"},
		{"Schedule:", "*/1 * * * *"}, {"Concurrency Policy:", "Allow"}, {"Suspend:", "True"},
		{"Successful Job History Limit:", "3"}, {"Failed Job History Limit:", "1"},
		{"Starting Deadline Seconds:", "30s"}, {"Selector:"}, {"Parallelism:"}, {"Completions:"},
	} {
		found := false
		for _, l := range strings.Split(r.stdout, "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(l, w)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("describe cronjob: no line with %q:\n%s", want, r.stdout)
		}
	}
	e.must("delete", "cronjob", "kc-cronjob")
}

// test/e2e/kubectl/kubectl.go "should check if kubectl describe prints
// relevant information for rc and pods", for a Deployment: the pod's
// "Controlled By: ReplicaSet/NAME" (printController), the Deployment's
// labels one a line and annotations as "key: value"
// (printLabelsMultiline, printAnnotationsMultiline).
func TestKubectlDescribeDeploymentAndPod(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: kc-web, labels: {app: agnhost, role: primary}}
spec:
  replicas: 1
  selector: {matchLabels: {app: kc-web}}
  template:
    metadata: {labels: {app: kc-web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox:1.28, command: [sleep, "3600"]}]
`)
	e.must("rollout", "status", "deployment/kc-web", "--timeout=90s")
	pod := strings.TrimSpace(e.must("get", "pods", "-l", "app=kc-web", "-o", "jsonpath={.items[0].metadata.name}").stdout)
	rs := strings.TrimSpace(e.must("get", "rs", "-l", "app=kc-web", "-o", "jsonpath={.items[0].metadata.name}").stdout)
	r := e.must("describe", "pod", pod)
	for _, want := range []string{"\nStatus:           Running\n", "\nControlled By:    ReplicaSet/" + rs + "\n", "QoS Class:        BestEffort", "State:          Running"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe pod: no %q:\n%s", want, r.stdout)
		}
	}
	r = e.must("describe", "deployment", "kc-web")
	if !regexp.MustCompile(`\nLabels: +app=agnhost\n +role=primary\nAnnotations: +deployment\.kubernetes\.io/revision: 1\n`).MatchString(r.stdout) {
		t.Errorf("describe deployment:\n%s", r.stdout)
	}
}
