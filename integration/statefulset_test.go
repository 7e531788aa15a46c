package integration

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const statefulSetManifest = `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
        readinessProbe: {exec: {command: ['true']}, initialDelaySeconds: 2, periodSeconds: 1, timeoutSeconds: 10}
`

// waitCreated waits until a pod of that name exists.
func (e *env) waitCreated(name string, timeout time.Duration) {
	e.t.Helper()
	for deadline := time.Now().Add(timeout); e.podrun("get", "pod", name).code != 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("pod %s not created after %s", name, timeout)
		}
	}
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// A StatefulSet under OrderedReady: web-0, then web-1 once web-0 is Ready;
// pod-name/pod-index labels, hostname and subdomain; the name
// web-1.web.default.svc.cluster.local resolves from another pod; a deleted
// pod comes back with its name; scaling down deletes the highest ordinal.
func TestStatefulSetOrderStableNamesDNS(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/web")
	r := e.apply(strings.Replace(statefulSetManifest, "REPLICAS", "2", 1))
	if !strings.Contains(r.stdout, "statefulset.apps/web created") {
		t.Errorf("apply: %s", r)
	}
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - {name: c, image: busybox:1.28, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']}
`)
	e.waitCreated("web-1", time.Minute)
	e.waitFor("web-1", time.Minute, "ready", func(p *corev1.Pod) bool { return !readySince(p).IsZero() })
	web0, web1 := e.pod("web-0"), e.pod("web-1")
	if web1.CreationTimestamp.Time.Before(readySince(web0).Truncate(time.Second)) {
		t.Errorf("web-1 created at %s, before web-0 was Ready (%s)", web1.CreationTimestamp, readySince(web0))
	}
	if web1.Labels[appsv1.StatefulSetPodNameLabel] != "web-1" || web1.Labels[appsv1.PodIndexLabel] != "1" ||
		web1.Spec.Hostname != "web-1" || web1.Spec.Subdomain != "web" || len(web1.OwnerReferences) != 1 || web1.OwnerReferences[0].Kind != "StatefulSet" {
		t.Errorf("web-1 labels %v hostname %q subdomain %q owners %+v", web1.Labels, web1.Spec.Hostname, web1.Spec.Subdomain, web1.OwnerReferences)
	}
	if out := e.must("exec", "web-1", "--", "hostname").stdout; out != "web-1\n" {
		t.Errorf("hostname %q", out)
	}
	has := func(r result) bool { return strings.Contains(r.stdout, "Address: "+web1.Status.PodIP) }
	var res result
	for deadline := time.Now().Add(15 * time.Second); ; {
		res = e.podrun("exec", "client", "--", "nslookup", "web-1.web.default.svc.cluster.local")
		if has(res) || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !has(res) {
		t.Errorf("nslookup web-1.web.default.svc.cluster.local: %s; want %s", res, web1.Status.PodIP)
	}
	get := e.must("get", "sts").stdout
	if lines := strings.Split(strings.TrimSpace(get), "\n"); len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE" || strings.Fields(lines[1])[1] != "2/2" {
		t.Errorf("get sts:\n%s", get)
	}
	// A deleted pod comes back under its name, as a new pod.
	e.must("delete", "pod", "web-0", "--grace-period", "1")
	e.waitCreated("web-0", time.Minute)
	back := e.waitFor("web-0", time.Minute, "made again", func(p *corev1.Pod) bool { return p.UID != web0.UID && p.Status.Phase == corev1.PodRunning })
	if back.Spec.Hostname != "web-0" {
		t.Errorf("web-0 came back with hostname %q", back.Spec.Hostname)
	}
	// Scale down to 1: web-1 goes, web-0 stays.
	e.apply(strings.Replace(statefulSetManifest, "REPLICAS", "1", 1))
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r := e.podrun("get", "pod", "web-1"); r.code != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-1 still there after scaling to 1")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p := e.pod("web-0"); p.UID != back.UID {
		t.Errorf("web-0 replaced by the scale down")
	}
}

// Parallel: both pods made at once, without waiting for readiness.
func TestStatefulSetParallel(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/web")
	m := strings.Replace(strings.Replace(statefulSetManifest, "REPLICAS", "2", 1), "  serviceName: web\n", "  serviceName: web\n  podManagementPolicy: Parallel\n", 1)
	m = strings.Replace(m, "initialDelaySeconds: 2", "initialDelaySeconds: 5", 1)
	e.apply(m)
	e.waitCreated("web-1", 30*time.Second)
	if p := e.pod("web-0"); !readySince(p).IsZero() {
		t.Errorf("web-1 made only after web-0 was Ready: Parallel does not wait")
	}
}

// volumeClaimTemplates: one claim per template and ordinal, data-db-0, that
// outlives the pod and the StatefulSet: what web-0 wrote is there after the
// set is deleted and applied again.
func TestStatefulSetStoragePersists(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/db")
	t.Cleanup(func() { e.podrun("delete", "pvc", "data-db-0", "--ignore-not-found") })
	m := `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sh', '-c', 'echo "$(hostname) $$" >> /data/log; trap "exit 0" TERM; while true; do sleep 1; done']
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`
	e.apply(m)
	e.waitCreated("db-0", time.Minute)
	e.waitPhase("db-0", corev1.PodRunning, time.Minute)
	if out := e.must("get", "pvc", "data-db-0").stdout; !strings.Contains(out, "Bound") {
		t.Errorf("get pvc:\n%s", out)
	}
	e.must("delete", "statefulset", "db", "--grace-period", "1")
	if r := e.podrun("get", "pvc", "data-db-0"); r.code != 0 {
		t.Fatalf("the claim went with the StatefulSet: %s", r)
	}
	e.apply(m)
	e.waitCreated("db-0", time.Minute)
	e.waitPhase("db-0", corev1.PodRunning, time.Minute)
	var out string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out = e.podrun("exec", "db-0", "--", "cat", "/data/log").stdout
		if strings.Count(out, "db-0 ") == 2 {
			break
		}
	}
	if strings.Count(out, "db-0 ") != 2 {
		t.Errorf("/data/log = %q: want the lines of both runs", out)
	}
}
