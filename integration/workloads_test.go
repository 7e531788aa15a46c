package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod from the Kubernetes 1.5 init-container docs: its init containers live in the
// beta annotation. podrun runs them, as the 1.6–1.7 API servers did, and warns.
func TestInitContainerAnnotationOfOldDocsRuns(t *testing.T) {
	e := newEnv(t)
	r := e.apply(`
apiVersion: v1
kind: Pod
metadata:
  name: olddocs
  annotations:
    pod.beta.kubernetes.io/init-containers: '[
        {"name": "init-first", "image": "busybox:1.28", "command": ["sh", "-c", "echo first > /work/order"],
         "volumeMounts": [{"name": "work", "mountPath": "/work"}]},
        {"name": "init-second", "image": "busybox:1.28", "command": ["sh", "-c", "echo second >> /work/order"],
         "volumeMounts": [{"name": "work", "mountPath": "/work"}]}
      ]'
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.28
    command: ['cat', '/work/order']
    volumeMounts: [{name: work, mountPath: /work}]
  volumes:
  - name: work
    emptyDir: {}
`)
	if !strings.Contains(r.stderr, "metadata.annotations[pod.beta.kubernetes.io/init-containers]: run as spec.initContainers") ||
		!strings.Contains(r.stderr, "Kubernetes ≥ 1.8 ignores this annotation") {
		t.Errorf("apply did not warn about the annotation:\n%s", r)
	}
	p := e.waitPhase("olddocs", corev1.PodSucceeded, time.Minute)
	if out := e.must("logs", "olddocs", "-c", "app").stdout; out != "first\nsecond\n" {
		t.Fatalf("app printed %q, want the two init containers' lines in order", out)
	}
	if len(p.Status.InitContainerStatuses) != 2 || p.Status.InitContainerStatuses[1].Name != "init-second" {
		t.Errorf("initContainerStatuses = %+v", p.Status.InitContainerStatuses)
	}
	// What a user pastes: the pod as podrun runs it, with spec.initContainers.
	if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[0].Name != "init-first" {
		t.Errorf("spec.initContainers = %+v", p.Spec.InitContainers)
	}
}

// podsOf lists the pods with a label selector, as `get pods -o json` prints them.
func (e *env) podsOf(selector string) []corev1.Pod {
	e.t.Helper()
	r := e.must("get", "pods", "-l", selector, "-o", "json")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		e.t.Fatalf("decoding pods: %v\n%s", err, r.stdout)
	}
	return list.Items
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPods waits until cond holds for the pods of selector.
func (e *env) waitPods(selector string, timeout time.Duration, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	e.t.Helper()
	deadline := time.Now().Add(timeout * timeoutScale)
	for {
		pods := e.podsOf(selector)
		if cond(pods) {
			return pods
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range pods {
				names = append(names, p.Name+" "+string(p.Status.Phase))
			}
			e.t.Fatalf("pods %s: not %s after %s: %v\n%s", selector, what, timeout, names, e.podrun("get", "all"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// running is n pods Running, none being deleted.
func running(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		c := 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				return false
			}
			if p.Status.Phase == corev1.PodRunning {
				c++
			}
		}
		return c == n && len(pods) == n
	}
}

var generatedSuffix = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)

func checkOwned(t *testing.T, p corev1.Pod, kind, name string, uid types.UID) {
	t.Helper()
	ref := metav1.GetControllerOf(&p)
	if ref == nil || ref.Kind != kind || ref.Name != name || ref.UID != uid || ref.APIVersion != "apps/v1" {
		t.Errorf("pod %s: controller ownerReference %+v, want %s %s (uid %s)", p.Name, ref, kind, name, uid)
	}
	if !strings.HasPrefix(p.Name, name+"-") || !generatedSuffix.MatchString(strings.TrimPrefix(p.Name, name+"-")) {
		t.Errorf("pod name %q is not %s-<5 generated characters>", p.Name, name)
	}
}

// replicaSet is the ReplicaSet rs of n sleeping pods labelled app=rs.
func replicaSet(n int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
spec:
  replicas: %d
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: busybox:1.28, command: [sleep, "3600"]}
`, n)
}

// A ReplicaSet keeps its replicas: a deleted pod is replaced by a new one;
// deleting the ReplicaSet deletes its pods (the leak check runs after).
func TestReplicaSetKeepsReplicas(t *testing.T) {
	e := newEnv(t)
	r := e.apply(replicaSet(2))
	if r.stdout != "replicaset.apps/rs created\n" {
		t.Errorf("apply printed %q", r.stdout)
	}
	pods := e.waitPods("app=rs", time.Minute, "2 running", running(2))
	var rs appsv1.ReplicaSet
	if err := json.Unmarshal([]byte(e.must("get", "rs", "rs", "-o", "json").stdout), &rs); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		checkOwned(t, p, "ReplicaSet", "rs", rs.UID)
	}
	e.must("delete", "pod", pods[0].Name)
	after := e.waitPods("app=rs", time.Minute, "2 running again", running(2))
	for _, p := range after {
		if p.Name == pods[0].Name {
			t.Errorf("the deleted pod %s is back", p.Name)
		}
		checkOwned(t, p, "ReplicaSet", "rs", rs.UID)
	}
	if out := e.must("get", "rs").stdout; !regexp.MustCompile(`(?m)^rs\s+2\s+2\s+[0-2]\s+\S+$`).MatchString(out) || !strings.HasPrefix(out, "NAME   DESIRED   CURRENT   READY   AGE") {
		t.Errorf("get rs printed\n%s", out)
	}
	r = e.must("delete", "rs", "rs")
	if !strings.Contains(r.stdout, `replicaset.apps "rs" deleted`) {
		t.Errorf("delete printed %q", r.stdout)
	}
	if r := e.podrun("get", "all"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("after delete rs, get all printed\n%s", r)
	}
}

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: REPLICAS
  strategy: STRATEGY
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: [httpd, -f, -p, "PORT"]
        readinessProbe:
          tcpSocket: {port: PORT}
          periodSeconds: 1
          timeoutSeconds: 5
`

func deployment(replicas int, strategy string, port int) string {
	return strings.NewReplacer("REPLICAS", fmt.Sprint(replicas), "STRATEGY", strategy, "PORT", fmt.Sprint(port)).Replace(deploymentYAML)
}

// A Deployment makes a ReplicaSet <name>-<pod-template-hash> and its pods
// <rs>-<5 chars> with the pod-template-hash label and ownerReferences; apply
// prints kubectl's lines; scale moves the replicas both ways; rollout status
// waits; deleting the Deployment leaves nothing.
func TestDeploymentPodsNamesLabelsOwnersAndScale(t *testing.T) {
	e := newEnv(t)
	f := e.manifest(deployment(2, "{type: RollingUpdate}", 8080))
	r := e.must("apply", "-f", f, "--wait", "--timeout", "2m")
	if r.stdout != "deployment.apps/web created\n" || !strings.Contains(r.stderr, `deployment "web" successfully rolled out`) {
		t.Errorf("apply --wait: %s", r)
	}
	if r := e.must("wait", "--for=condition=Available", "deployment/web"); r.stdout != "deployment.apps/web condition met\n" {
		t.Errorf("wait printed %q", r.stdout)
	}
	if r := e.must("apply", "-f", f); r.stdout != "deployment.apps/web unchanged\n" {
		t.Errorf("apply again printed %q", r.stdout)
	}
	var rsList appsv1.ReplicaSetList
	if err := json.Unmarshal([]byte(e.must("get", "rs", "-o", "json").stdout), &rsList); err != nil || len(rsList.Items) != 1 {
		t.Fatalf("replica sets: %v %+v", err, rsList.Items)
	}
	rs := rsList.Items[0]
	hash := rs.Labels["pod-template-hash"]
	if hash == "" || rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels["pod-template-hash"] != hash {
		t.Errorf("replica set %s: labels %v selector %v", rs.Name, rs.Labels, rs.Spec.Selector)
	}
	if ref := metav1.GetControllerOf(&rs); ref == nil || ref.Kind != "Deployment" || ref.Name != "web" {
		t.Errorf("replica set owner %+v", ref)
	}
	pods := e.waitPods("app=web", time.Minute, "2 running", running(2))
	for _, p := range pods {
		checkOwned(t, p, "ReplicaSet", rs.Name, rs.UID)
		if p.Labels["pod-template-hash"] != hash {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	if out := e.must("get", "deploy").stdout; !regexp.MustCompile(`(?m)^web\s+2/2\s+2\s+2\s+\S+$`).MatchString(out) {
		t.Errorf("get deploy printed\n%s", out)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal([]byte(e.must("get", "deployment", "web", "-o", "json").stdout), &d); err != nil {
		t.Fatal(err)
	}
	conds := map[appsv1.DeploymentConditionType]string{}
	for _, c := range d.Status.Conditions {
		conds[c.Type] = string(c.Status) + "/" + c.Reason
	}
	if conds[appsv1.DeploymentAvailable] != "True/MinimumReplicasAvailable" || conds[appsv1.DeploymentProgressing] != "True/NewReplicaSetAvailable" || d.Status.ObservedGeneration != d.Generation {
		t.Errorf("deployment status %+v", d.Status)
	}

	if r := e.must("scale", "deployment/web", "--replicas=3"); r.stdout != "deployment.apps/web scaled\n" {
		t.Errorf("scale printed %q", r.stdout)
	}
	e.must("rollout", "status", "deploy/web", "--timeout", "2m")
	e.waitPods("app=web", time.Minute, "3 running", running(3))
	e.must("scale", "deploy", "web", "--replicas", "1")
	e.waitPods("app=web", time.Minute, "1 running", running(1))
	// status.terminatingReplicas (DeploymentReplicaSetTerminatingReplicas):
	// the pods going away, 0 once they are gone, on the ReplicaSet and the
	// Deployment.
	for _, target := range []string{"deployment/web", "rs/" + rs.Name} {
		e.eventually("0", false, "get", target, "-o", "jsonpath={.status.terminatingReplicas}")
	}

	r = e.must("delete", "deployment", "web")
	if !strings.Contains(r.stdout, `deployment.apps "web" deleted`) {
		t.Errorf("delete printed %q", r.stdout)
	}
	if r := e.podrun("get", "all"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("after delete deployment, get all printed\n%s", r)
	}
}

// rolloutSamples applies the changed Deployment and samples the pods until
// `rollout status` says it is complete.
func rolloutSamples(t *testing.T, e *env, manifest string) [][]corev1.Pod {
	t.Helper()
	e.apply(manifest)
	done := make(chan result, 1)
	go func() { done <- e.podrun("rollout", "status", "deployment/web", "--timeout", "3m") }()
	var samples [][]corev1.Pod
	for {
		select {
		case r := <-done:
			if r.code != 0 || !strings.Contains(r.stdout, `deployment "web" successfully rolled out`) {
				t.Fatalf("rollout status: %s", r)
			}
			return append(samples, e.podsOf("app=web"))
		default:
		}
		samples = append(samples, e.podsOf("app=web"))
		time.Sleep(100 * time.Millisecond)
	}
}

func newTemplatePods(t *testing.T, e *env, want int, port int) {
	t.Helper()
	pods := e.waitPods("app=web", time.Minute, fmt.Sprintf("%d running", want), running(want))
	for _, p := range pods {
		if got := p.Spec.Containers[0].Command[3]; got != fmt.Sprint(port) {
			t.Errorf("pod %s runs the old template (port %s)", p.Name, got)
		}
	}
}

// A RollingUpdate with maxUnavailable 1 and maxSurge 1 keeps at least
// replicas-maxUnavailable pods Ready (not being deleted) throughout, never
// more than replicas+maxSurge pods that are not being deleted, and ends with
// every pod on the new template.
func TestDeploymentRollingUpdateKeepsReadyPods(t *testing.T) {
	e := newEnv(t)
	strategy := "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 1}}"
	e.must("apply", "-f", e.manifest(deployment(3, strategy, 8080)), "--wait", "--timeout", "2m")
	samples := rolloutSamples(t, e, deployment(3, strategy, 8081))
	for i, pods := range samples {
		ready, live := 0, 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				live++
				if podReady(&p) {
					ready++
				}
			}
		}
		if ready < 2 || live > 4 {
			t.Errorf("sample %d: %d Ready and %d live pods (want ≥ 2 Ready, ≤ 4 live)", i, ready, live)
		}
	}
	if len(samples) < 3 {
		t.Errorf("only %d samples during the rollout", len(samples))
	}
	newTemplatePods(t, e, 3, 8081)
	var rsList appsv1.ReplicaSetList
	if err := json.Unmarshal([]byte(e.must("get", "rs", "-o", "json").stdout), &rsList); err != nil || len(rsList.Items) != 2 {
		t.Fatalf("want the old replica set kept at 0 and the new one: %v %d", err, len(rsList.Items))
	}
}

// Recreate: every old pod is gone before a new one is made.
func TestDeploymentRecreate(t *testing.T) {
	e := newEnv(t)
	e.must("apply", "-f", e.manifest(deployment(2, "{type: Recreate}", 8080)), "--wait", "--timeout", "2m")
	samples := rolloutSamples(t, e, deployment(2, "{type: Recreate}", 8081))
	for i, pods := range samples {
		// An old pod whose containers have all stopped may still be listed
		// (Succeeded or Failed) while the new ones start, as on a cluster
		// (the controller's oldPodsRunning skips it).
		ports := map[string]bool{}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				ports[p.Spec.Containers[0].Command[3]] = true
			}
		}
		if len(ports) > 1 {
			var seen []string
			for _, p := range pods {
				seen = append(seen, fmt.Sprintf("%s %s %s deleting=%v", p.Name, p.Spec.Containers[0].Command[3], p.Status.Phase, p.DeletionTimestamp != nil))
			}
			t.Errorf("sample %d: old and new pods running at once: %v", i, seen)
		}
	}
	newTemplatePods(t, e, 2, 8081)
}

// A DaemonSet runs one pod on this node, replaced when deleted, and a
// changed template replaces it.
func TestDaemonSetOnePod(t *testing.T) {
	e := newEnv(t)
	ds := `
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: busybox:1.28, command: [sleep, "SECONDS"]}
`
	r := e.apply(strings.Replace(ds, "SECONDS", "3600", 1), "--wait", "--timeout", "2m")
	if !strings.HasPrefix(r.stdout, "daemonset.apps/agent created") {
		t.Errorf("apply printed %q", r.stdout)
	}
	pods := e.waitPods("app=agent", time.Minute, "1 running", running(1))
	var d appsv1.DaemonSet
	if err := json.Unmarshal([]byte(e.must("get", "ds", "agent", "-o", "json").stdout), &d); err != nil {
		t.Fatal(err)
	}
	checkOwned(t, pods[0], "DaemonSet", "agent", d.UID)
	if out := e.must("get", "ds").stdout; !regexp.MustCompile(`(?m)^agent\s+1\s+1\s+1\s+1\s+1\s+<none>\s+\S+$`).MatchString(out) {
		t.Errorf("get ds printed\n%s", out)
	}
	e.must("delete", "pod", pods[0].Name, "--grace-period", "1")
	again := e.waitPods("app=agent", time.Minute, "1 running again", running(1))
	if again[0].Name == pods[0].Name {
		t.Errorf("the deleted pod is back")
	}
	e.apply(strings.Replace(ds, "SECONDS", "3601", 1))
	e.must("rollout", "status", "ds/agent", "--timeout", "2m")
	last := e.waitPods("app=agent", time.Minute, "1 running on the new template", func(p []corev1.Pod) bool {
		return running(1)(p) && p[0].Spec.Containers[0].Command[1] == "3601"
	})
	if last[0].Name == again[0].Name {
		t.Errorf("the pod was not replaced")
	}
	e.must("delete", "ds", "agent")
	if r := e.podrun("get", "all"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("after delete ds, get all printed\n%s", r)
	}
}

// rollout status gives up after --timeout with exit 124 while the pods are
// not Ready.
func TestRolloutStatusTimeout(t *testing.T) {
	e := newEnv(t)
	// The probe asks a port nothing listens on.
	e.apply(strings.Replace(deployment(1, "{type: RollingUpdate}", 8080), "tcpSocket: {port: 8080}", "tcpSocket: {port: 9}", 1))
	r := e.podrun("rollout", "status", "deployment/web", "--timeout", "3s")
	if r.code != 124 || !strings.Contains(r.stdout, `Waiting for deployment "web" rollout to finish`) {
		t.Errorf("rollout status: %s", r)
	}
}

// The controllers process killed, the next `get` starts it again and the
// replica count is kept again, as pods' supervisors are revived.
func TestControllersRevivedAfterCrash(t *testing.T) {
	e := newEnv(t)
	e.apply(replicaSet(1))
	pods := e.waitPods("app=rs", time.Minute, "1 running", running(1))
	data, err := os.ReadFile(filepath.Join(e.runRoot, "controllers", "owner.pid"))
	if err != nil {
		t.Fatalf("reading the controllers' pid: %v", err)
	}
	pid := strings.TrimSpace(string(data))
	if err := syscall.Kill(atoi(t, pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	e.must("delete", "pod", pods[0].Name)
	// get (in waitPods) starts the controllers again, which make a new replica.
	again := e.waitPods("app=rs", time.Minute, "1 running again", running(1))
	if again[0].Name == pods[0].Name {
		t.Errorf("the deleted pod is back")
	}
	data, _ = os.ReadFile(filepath.Join(e.runRoot, "controllers", "owner.pid"))
	if strings.TrimSpace(string(data)) == pid {
		t.Errorf("no new controllers process")
	}
}
