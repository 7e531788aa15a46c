package integration

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// getObject reads one object as get -o json prints it into v.
func (e *env) getObject(kind, name string, v any) {
	e.t.Helper()
	r := e.must("get", kind, name, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		e.t.Fatalf("decoding %s %s: %v\n%s", kind, name, err, r.stdout)
	}
}

func (e *env) deploymentObj() *appsv1.Deployment {
	var d appsv1.Deployment
	e.getObject("deployment", "web", &d)
	return &d
}

func (e *env) replicaSets() []appsv1.ReplicaSet {
	e.t.Helper()
	var list appsv1.ReplicaSetList
	if err := json.Unmarshal([]byte(e.must("get", "rs", "-o", "json").stdout), &list); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func progressing(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

// The deployment controller's revisions and kubectl's rollout history and
// undo: each template a ReplicaSet with deployment.kubernetes.io/revision,
// the Deployment with its current one; undo makes the previous template the
// Deployment's again, under the next revision; undo to the current one is
// skipped; an unknown revision is an error.
func TestRolloutHistoryAndUndo(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/web")
	e.must("apply", "-f", e.manifest(deployment(1, "{type: RollingUpdate}", 8080)), "--wait", "--timeout", "2m")
	if d := e.deploymentObj(); d.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("deployment annotations %v, want revision 1", d.Annotations)
	}
	if r := e.must("apply", "-f", e.manifest(deployment(1, "{type: RollingUpdate}", 8080))); r.stdout != "deployment.apps/web unchanged\n" {
		t.Errorf("apply of the same manifest after the controller's revision annotation: %q", r.stdout)
	}
	e.apply(deployment(1, "{type: RollingUpdate}", 8081))
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	if d := e.deploymentObj(); d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("deployment annotations %v, want revision 2", d.Annotations)
	}
	revs := map[string]string{} // revision → the port of its template
	for _, rs := range e.replicaSets() {
		revs[rs.Annotations["deployment.kubernetes.io/revision"]] = rs.Spec.Template.Spec.Containers[0].Command[3]
		if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != "1" || rs.Annotations["deployment.kubernetes.io/max-replicas"] != "2" {
			t.Errorf("replica set %s annotations %v", rs.Name, rs.Annotations)
		}
	}
	if revs["1"] != "8080" || revs["2"] != "8081" {
		t.Errorf("revisions of the replica sets: %v", revs)
	}
	if r := e.must("rollout", "history", "deployment/web"); r.stdout != "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n" {
		t.Errorf("rollout history printed %q", r.stdout)
	}
	if r := e.must("rollout", "history", "deploy", "web", "--revision", "1"); !strings.HasPrefix(r.stdout, "deployment.apps/web with revision #1\nPod Template:\n") || !strings.Contains(r.stdout, "-p 8080") {
		t.Errorf("rollout history --revision 1 printed %q", r.stdout)
	}
	if r := e.podrun("rollout", "history", "deployment/web", "--revision", "7"); r.code != 1 || !strings.Contains(r.stderr, "unable to find the specified revision") {
		t.Errorf("history of a revision that is not: %s", r)
	}

	if r := e.must("rollout", "undo", "deployment/web"); r.stdout != "deployment.apps/web rolled back\n" {
		t.Errorf("rollout undo printed %q", r.stdout)
	}
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	newTemplatePods(t, e, 1, 8080)
	d := e.deploymentObj()
	if d.Annotations["deployment.kubernetes.io/revision"] != "3" || d.Spec.Template.Labels["pod-template-hash"] != "" {
		t.Errorf("after undo: annotations %v template labels %v", d.Annotations, d.Spec.Template.Labels)
	}
	// Revision 1's ReplicaSet is revision 3 now, with 1 in its history.
	rsets := e.replicaSets()
	if len(rsets) != 2 {
		t.Fatalf("%d replica sets after the undo, want the two templates'", len(rsets))
	}
	for _, rs := range rsets {
		port := rs.Spec.Template.Spec.Containers[0].Command[3]
		rev, hist := rs.Annotations["deployment.kubernetes.io/revision"], rs.Annotations["deployment.kubernetes.io/revision-history"]
		if (port == "8080" && (rev != "3" || hist != "1")) || (port == "8081" && rev != "2") {
			t.Errorf("replica set %s (port %s): revision %q history %q", rs.Name, port, rev, hist)
		}
	}
	if r := e.must("rollout", "history", "deployment/web"); !regexp.MustCompile(`\n2\s+<none>\n3\s+<none>\n\n$`).MatchString(r.stdout) || strings.Contains(r.stdout, "\n1 ") {
		t.Errorf("rollout history after undo printed %q", r.stdout)
	}
	if r := e.must("rollout", "undo", "deployment/web", "--to-revision=3"); r.stdout != "deployment.apps/web skipped rollback (current template already matches revision 3)\n" {
		t.Errorf("undo to the current revision printed %q", r.stdout)
	}
	if r := e.podrun("rollout", "undo", "deployment/web", "--to-revision=9"); r.code != 1 || !strings.Contains(r.stderr, "unable to find specified revision 9 in history") {
		t.Errorf("undo to an unknown revision: %s", r)
	}
	if r := e.must("rollout", "undo", "deployment/web", "--to-revision=2"); r.stdout != "deployment.apps/web rolled back\n" {
		t.Errorf("undo --to-revision=2 printed %q", r.stdout)
	}
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	newTemplatePods(t, e, 1, 8081)
}

// rollout restart makes a new rollout (kubectl.kubernetes.io/restartedAt on
// the pod template); pause stops rolling out template changes (Progressing
// Unknown/DeploymentPaused, rollout status waiting with 0 updated), restart
// and undo are refused while paused, resume rolls out what was applied.
func TestRolloutRestartPauseResume(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/web")
	m := deployment(1, "{type: RollingUpdate}", 8080)
	e.must("apply", "-f", e.manifest(m), "--wait", "--timeout", "2m")
	before := e.waitPods("app=web", time.Minute, "1 running", running(1))

	if r := e.must("rollout", "restart", "deployment/web"); r.stdout != "deployment.apps/web restarted\n" {
		t.Errorf("rollout restart printed %q", r.stdout)
	}
	d := e.deploymentObj()
	if _, err := time.Parse(time.RFC3339, d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]); err != nil {
		t.Errorf("template annotations %v: want restartedAt in RFC 3339", d.Spec.Template.Annotations)
	}
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	after := e.waitPods("app=web", time.Minute, "1 running", running(1))
	if after[0].Name == before[0].Name || after[0].Labels["pod-template-hash"] == before[0].Labels["pod-template-hash"] {
		t.Errorf("restart did not replace the pod: %s then %s", before[0].Name, after[0].Name)
	}
	if d := e.deploymentObj(); d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("revision after restart %v", d.Annotations)
	}
	// kubectl apply keeps what rollout restart set (it is not in the manifest).
	if r := e.must("apply", "-f", e.manifest(m)); r.stdout != "deployment.apps/web unchanged\n" {
		t.Errorf("apply after restart printed %q", r.stdout)
	}

	if r := e.must("rollout", "pause", "deployment/web"); r.stdout != "deployment.apps/web paused\n" {
		t.Errorf("rollout pause printed %q", r.stdout)
	}
	if r := e.podrun("rollout", "pause", "deployment/web"); r.code != 1 || !strings.Contains(r.stderr, `deployments.apps "web" is already paused`) {
		t.Errorf("pause again: %s", r)
	}
	waitDeployment(t, e, "Progressing Unknown/DeploymentPaused", func(d *appsv1.Deployment) bool { return progressing(d) == "Unknown/DeploymentPaused" })
	if r := e.must("apply", "-f", e.manifest(deployment(1, "{type: RollingUpdate}", 8081))); r.stdout != "deployment.apps/web configured\n" {
		t.Errorf("apply while paused printed %q", r.stdout)
	}
	waitDeployment(t, e, "the change observed", func(d *appsv1.Deployment) bool { return d.Status.ObservedGeneration == d.Generation })
	time.Sleep(2 * time.Second)
	if pods := e.waitPods("app=web", time.Minute, "1 running", running(1)); pods[0].Name != after[0].Name {
		t.Errorf("a paused deployment rolled out: %s replaced by %s", after[0].Name, pods[0].Name)
	}
	if n := len(e.replicaSets()); n != 2 {
		t.Errorf("%d replica sets while paused, want no new one", n)
	}
	if r := e.must("rollout", "status", "deployment/web", "--watch=false"); r.stdout != "Waiting for deployment \"web\" rollout to finish: 0 out of 1 new replicas have been updated...\n" {
		t.Errorf("rollout status of a paused deployment printed %q", r.stdout)
	}
	if r := e.podrun("rollout", "restart", "deployment/web"); r.code != 1 || !strings.Contains(r.stderr, "can't restart paused deployment (run rollout resume first)") {
		t.Errorf("restart while paused: %s", r)
	}
	if r := e.podrun("rollout", "undo", "deployment/web"); r.code != 1 || !strings.Contains(r.stderr, "you cannot rollback a paused deployment") {
		t.Errorf("undo while paused: %s", r)
	}
	// apply keeps spec.paused, as kubectl apply does when the manifest has none.
	if d := e.deploymentObj(); !d.Spec.Paused {
		t.Errorf("apply unpaused the deployment")
	}

	if r := e.must("rollout", "resume", "deploy/web"); r.stdout != "deployment.apps/web resumed\n" {
		t.Errorf("rollout resume printed %q", r.stdout)
	}
	if r := e.podrun("rollout", "resume", "deploy/web"); r.code != 1 || !strings.Contains(r.stderr, `deployments.apps "web" is not paused`) {
		t.Errorf("resume again: %s", r)
	}
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	newTemplatePods(t, e, 1, 8081)
	if d := e.deploymentObj(); progressing(d) != "True/NewReplicaSetAvailable" || d.Annotations["deployment.kubernetes.io/revision"] != "3" {
		t.Errorf("after resume: progressing %s annotations %v", progressing(d), d.Annotations)
	}
}

func waitDeployment(t *testing.T, e *env, what string, cond func(*appsv1.Deployment) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second * timeoutScale)
	for {
		d := e.deploymentObj()
		if cond(d) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment: not %s: %+v", what, d.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scale of a StatefulSet, with kubectl's --current-replicas precondition;
// the scale-down deletes the highest ordinal.
func TestRolloutScaleStatefulSet(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/web")
	e.apply(strings.Replace(statefulSetManifest, "REPLICAS", "1", 1))
	e.waitPhase("web-0", corev1.PodRunning, time.Minute)
	if r := e.must("scale", "statefulset/web", "--replicas=2"); r.stdout != "statefulset.apps/web scaled\n" {
		t.Errorf("scale printed %q", r.stdout)
	}
	e.waitPods("app=web", time.Minute, "2 running", running(2))
	if r := e.podrun("scale", "sts", "web", "--current-replicas=3", "--replicas=1"); r.code != 1 || !strings.Contains(r.stderr, "Expected replicas to be 3, was 2") {
		t.Errorf("scale with a wrong --current-replicas: %s", r)
	}
	var set appsv1.StatefulSet
	e.getObject("statefulset", "web", &set)
	if *set.Spec.Replicas != 2 {
		t.Errorf("a refused scale changed the replicas to %d", *set.Spec.Replicas)
	}
	e.must("scale", "sts", "web", "--current-replicas=2", "--replicas=1")
	pods := e.waitPods("app=web", time.Minute, "1 running", running(1))
	if pods[0].Name != "web-0" {
		t.Errorf("scale-down kept %s, want web-0", pods[0].Name)
	}
}

// A Job's pod deleted while it runs counts as failed (the Job controller's
// pod tracking, Kubernetes >= 1.26) and is replaced; the Job runs on within
// its backoffLimit.
func TestJobDeletedPodCountsAsFailed(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/long")
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: long}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: busybox:1.28, command: [sleep, "3600"]}
`)
	first := e.waitPods("job-name=long", time.Minute, "1 running", running(1))[0]
	e.must("delete", "pod", first.Name)
	deadline := time.Now().Add(time.Minute * timeoutScale)
	for {
		j := e.job("long")
		pods := e.jobPods("long")
		var replacement *corev1.Pod
		for i := range pods {
			if pods[i].Name != first.Name && pods[i].DeletionTimestamp == nil {
				replacement = &pods[i]
			}
		}
		if j.Status.Failed == 1 && replacement != nil && j.Status.Active == 1 {
			if jobCond(j, batchv1.JobFailed) != nil {
				t.Fatalf("the Job failed: %+v", j.Status)
			}
			break
		}
		if time.Now().After(deadline) || j.Status.Failed > 1 {
			t.Fatalf("after deleting %s: status %+v, pods %d", first.Name, j.Status, len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Counted once: still 1 a few passes later.
	time.Sleep(2 * time.Second)
	if j := e.job("long"); j.Status.Failed != 1 {
		t.Errorf("failed = %d after the pod was gone, want 1", j.Status.Failed)
	}
}

const orphanPod = `
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  labels: {app: LABEL}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox:1.28, command: [sleep, "3600"]}
`

func orphan(name, label string) string {
	return strings.NewReplacer("NAME", name, "LABEL", label).Replace(orphanPod)
}

// ReplicaSet adoption as ControllerRefManager.ClaimPods: a pod with the
// selector's labels and no controller is adopted (no new pod is made for
// it), a pod whose labels stop matching is released and replaced, and an
// extra adopted pod is deleted by the scale-down (test/e2e/apps
// replica_set.go "should adopt matching pods on creation and release no
// longer matching pods").
func TestReplicaSetAdoptsAndReleasesPods(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("rs/rs")
	e.apply(orphan("pod-adoption-release", "rs"))
	e.waitPhase("pod-adoption-release", corev1.PodRunning, time.Minute)
	e.apply(replicaSet(1))
	var rs appsv1.ReplicaSet
	e.getObject("rs", "rs", &rs)
	waitOwner := func(name string, want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second * timeoutScale)
		for {
			ref := metav1.GetControllerOf(e.pod(name))
			if (ref != nil && ref.UID == rs.UID && ref.Kind == "ReplicaSet" && ref.Name == "rs") == want && (want || ref == nil) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s: controller %+v, want adopted=%v", name, ref, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitOwner("pod-adoption-release", true)
	time.Sleep(time.Second)
	if pods := e.waitPods("app=rs", time.Minute, "1 running", running(1)); pods[0].Name != "pod-adoption-release" {
		t.Errorf("the replica set made %s beside the adopted pod", pods[0].Name)
	}

	// Released: its labels no longer match; a new replica replaces it.
	e.apply(orphan("pod-adoption-release", "released"))
	waitOwner("pod-adoption-release", false)
	pods := e.waitPods("app=rs", time.Minute, "1 running", running(1))
	checkOwned(t, pods[0], "ReplicaSet", "rs", rs.UID)
	if p := e.pod("pod-adoption-release"); p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		t.Errorf("the released pod is %s (deleting %v)", p.Status.Phase, p.DeletionTimestamp)
	}

	// An extra matching orphan is adopted, then the newest is scaled down.
	e.apply(orphan("extra", "rs"))
	e.waitPods("app=rs", time.Minute, "1 running after the scale-down", func(p []corev1.Pod) bool {
		return running(1)(p) && p[0].Name == pods[0].Name
	})
	e.must("delete", "pod", "pod-adoption-release")
}

// A Deployment adopts an orphan ReplicaSet its selector matches
// (ClaimReplicaSets; test/e2e/apps deployment.go "ReplicaSet orphaning and
// adoption regarding controllerRef"): with the Deployment's template it is
// the new ReplicaSet, revision 1, and its pod is kept.
func TestDeploymentAdoptsOrphanReplicaSet(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/web")
	e.deleteAtEnd("rs/web-orphan")
	m := deployment(1, "{type: RollingUpdate}", 8080)
	rsManifest := strings.NewReplacer("kind: Deployment", "kind: ReplicaSet", "  name: web\n", "  name: web-orphan\n  labels: {app: web}\n", "  strategy: {type: RollingUpdate}\n", "").Replace(m)
	e.apply(rsManifest)
	pods := e.waitPods("app=web", time.Minute, "1 running", running(1))
	e.apply(m)
	e.must("rollout", "status", "deployment/web", "--timeout", "2m")
	rsets := e.replicaSets()
	d := e.deploymentObj()
	if len(rsets) != 1 || rsets[0].Name != "web-orphan" {
		t.Fatalf("replica sets %d (want the adopted one only)", len(rsets))
	}
	if ref := metav1.GetControllerOf(&rsets[0]); ref == nil || ref.UID != d.UID || rsets[0].Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("replica set controller %+v annotations %v", ref, rsets[0].Annotations)
	}
	if after := e.waitPods("app=web", time.Minute, "1 running", running(1)); after[0].Name != pods[0].Name {
		t.Errorf("the adopted replica set's pod %s was replaced by %s", pods[0].Name, after[0].Name)
	}
}

// kubectl apply's three-way merge: a manifest that says `paused: false`
// resumes a Deployment paused by `rollout pause`; one without the field
// leaves it paused.
func TestRolloutPausedResumedByApply(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/web")
	m := func(paused string) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0` + paused + `
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: busybox:1.28, command: ['sleep', '3600']}
`
	}
	e.must("apply", "-f", e.manifest(m("")))
	e.must("rollout", "pause", "deployment/web")
	if r := e.must("apply", "-f", e.manifest(m(""))); r.stdout != "deployment.apps/web unchanged\n" || !e.deploymentObj().Spec.Paused {
		t.Errorf("apply without spec.paused: %q, paused %v; want unchanged, paused", r.stdout, e.deploymentObj().Spec.Paused)
	}
	if r := e.must("apply", "-f", e.manifest(m("\n  paused: false"))); r.stdout != "deployment.apps/web configured\n" || e.deploymentObj().Spec.Paused {
		t.Errorf("apply of paused: false: %q, paused %v; want configured, resumed", r.stdout, e.deploymentObj().Spec.Paused)
	}
}
