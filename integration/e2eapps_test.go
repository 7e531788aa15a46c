package integration

// Scenarios of Kubernetes' test/e2e/apps (statefulset.go, daemon_set.go,
// job.go) run through podrun's CLI on one node.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const e2eStatefulSet = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ss}
spec:
  serviceName: ss
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: ss}}
  updateStrategy: STRATEGY
  template:
    metadata: {labels: {app: ss}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        env: [{name: VERSION, value: "@V@"}]
        command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
`

func e2eSet(strategy, version string) string {
	return strings.NewReplacer("STRATEGY", strategy, "@V@", version).Replace(e2eStatefulSet)
}

func (e *env) statefulSet(name string) *appsv1.StatefulSet {
	var s appsv1.StatefulSet
	e.getObject("sts", name, &s)
	return &s
}

// revisions reads `get controllerrevisions` as NAME CONTROLLER REVISION rows.
func (e *env) revisions() [][]string {
	e.t.Helper()
	var rows [][]string
	out := e.must("get", "controllerrevisions").stdout
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 {
			if strings.Join(f, " ") != "NAME CONTROLLER REVISION AGE" {
				e.t.Fatalf("get controllerrevisions header %q", line)
			}
			continue
		}
		rows = append(rows, f[:3])
	}
	return rows
}

// historyRevisions reads the REVISION column of `rollout history`.
func (e *env) historyRevisions(target string) string {
	e.t.Helper()
	out := e.must("rollout", "history", target).stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != strings.Replace(target, "/", ".apps/", 1) || strings.Join(strings.Fields(lines[1]), " ") != "REVISION CHANGE-CAUSE" {
		e.t.Fatalf("rollout history %s:\n%s", target, out)
	}
	var revs []string
	for _, l := range lines[2:] {
		revs = append(revs, strings.Fields(l)[0])
	}
	return strings.Join(revs, ",")
}

// waitSetPods waits until the set's pods are the given ordinals, Running,
// each with the revision label wanted (by ordinal).
func (e *env) waitSetRevisions(want map[string]string) {
	e.t.Helper()
	e.waitPods("app=ss", time.Minute, "pods at revisions "+strings.Join(mapPairs(want), " "), func(pods []corev1.Pod) bool {
		if len(pods) != len(want) {
			return false
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || want[p.Name] != p.Labels[appsv1.StatefulSetRevisionLabel] {
				return false
			}
		}
		return true
	})
}

func mapPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// statefulset.go "should perform rolling updates and roll backs of template
// modifications" and "should perform canary updates and phased rolling
// updates of template modifications", with kubectl's rollout commands:
// each template a ControllerRevision (`get controllerrevisions`), the pods'
// controller-revision-hash label the revision's name, status
// currentRevision/updateRevision/updatedReplicas, `rollout status`,
// `rollout history`, `rollout undo` (the old revision renumbered as the
// newest), and under a partition the ordinals below it kept — and made
// again when deleted — at the current revision.
func TestE2EAppsStatefulSetRollingUpdateRollbackAndPartition(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/ss")
	e.apply(e2eSet("{type: RollingUpdate}", "1"))
	if r := e.must("rollout", "status", "statefulset/ss", "--timeout", "1m"); !strings.Contains(r.stdout, "partitioned roll out complete: 2 new pods have been updated...") {
		t.Errorf("rollout status: %s", r)
	}
	s := e.statefulSet("ss")
	rev1 := s.Status.UpdateRevision
	if !strings.HasPrefix(rev1, "ss-") || s.Status.CurrentRevision != rev1 || s.Status.UpdatedReplicas != 2 || s.Status.ReadyReplicas != 2 || s.Status.CurrentReplicas != 2 || s.Status.ObservedGeneration != s.Generation {
		t.Errorf("status %+v", s.Status)
	}
	if revs := e.revisions(); len(revs) != 1 || revs[0][0] != rev1 || revs[0][1] != "statefulset.apps/ss" || revs[0][2] != "1" {
		t.Errorf("controller revisions %v, want %s statefulset.apps/ss 1", revs, rev1)
	}
	var cr appsv1.ControllerRevision
	e.getObject("controllerrevision", rev1, &cr)
	if ref := metav1.GetControllerOf(&cr); ref == nil || ref.UID != s.UID || ref.Kind != "StatefulSet" {
		t.Errorf("revision owner %+v", cr.OwnerReferences)
	}
	e.waitSetRevisions(map[string]string{"ss-0": rev1, "ss-1": rev1})
	// kubectl's template outputs on the workload kinds.
	if out := e.must("get", "sts", "ss", "-o", "jsonpath={.status.readyReplicas}/{.status.currentRevision}").stdout; out != "2/"+rev1 {
		t.Errorf("get sts -o jsonpath: %q", out)
	}
	if out := e.must("get", "controllerrevisions", "-o", "custom-columns=NAME:.metadata.name,REV:.revision", "--no-headers").stdout; strings.Join(strings.Fields(out), " ") != rev1+" 1" {
		t.Errorf("get controllerrevisions -o custom-columns: %q", out)
	}
	if out := e.must("get", "sts", "-o", "go-template={{range .items}}{{.metadata.name}}{{end}}").stdout; out != "ss" {
		t.Errorf("get sts -o go-template: %q", out)
	}

	// A template change rolls out, highest ordinal first.
	e.apply(e2eSet("{type: RollingUpdate}", "2"))
	e.must("rollout", "status", "statefulset/ss", "--timeout", "1m")
	s = e.statefulSet("ss")
	rev2 := s.Status.UpdateRevision
	if rev2 == rev1 || s.Status.CurrentRevision != rev2 || s.Status.UpdatedReplicas != 2 {
		t.Errorf("after the update: status %+v (first revision %s)", s.Status, rev1)
	}
	e.waitSetRevisions(map[string]string{"ss-0": rev2, "ss-1": rev2})
	if out := e.must("exec", "ss-0", "--", "sh", "-c", "echo $VERSION").stdout; out != "2\n" {
		t.Errorf("ss-0 VERSION %q after the update", out)
	}
	if h := e.historyRevisions("statefulset/ss"); h != "1,2" {
		t.Errorf("history revisions %s, want 1,2", h)
	}
	if r := e.must("rollout", "history", "statefulset/ss", "--revision", "1").stdout; !strings.Contains(r, "statefulset.apps/ss with revision #1") || !strings.Contains(r, "Pod Template:") || !strings.Contains(r, "app=ss") {
		t.Errorf("history --revision 1:\n%s", r)
	}

	// rollout undo: back to the first template, which becomes revision 3.
	if r := e.must("rollout", "undo", "statefulset/ss"); strings.TrimSpace(r.stdout) != "statefulset.apps/ss rolled back" {
		t.Errorf("undo: %s", r)
	}
	e.must("rollout", "status", "statefulset/ss", "--timeout", "1m")
	e.waitSetRevisions(map[string]string{"ss-0": rev1, "ss-1": rev1})
	if s = e.statefulSet("ss"); s.Status.UpdateRevision != rev1 || s.Status.CurrentRevision != rev1 {
		t.Errorf("after undo: status %+v", s.Status)
	}
	if h := e.historyRevisions("statefulset/ss"); h != "2,3" {
		t.Errorf("history after undo %s, want 2,3", h)
	}
	if r := e.must("rollout", "undo", "statefulset/ss", "--to-revision", "3"); !strings.Contains(r.stdout, "skipped rollback (current template already matches revision 3)") {
		t.Errorf("undo to the current revision: %s", r)
	}
	if r := e.podrun("rollout", "undo", "statefulset/ss", "--to-revision", "9"); r.code == 0 || !strings.Contains(r.stderr, "unable to find specified revision 9 in history") {
		t.Errorf("undo to an unknown revision: %s", r)
	}

	// Canary: partition 1 updates ss-1 only; the current revision stays.
	e.apply(e2eSet("{type: RollingUpdate, rollingUpdate: {partition: 1}}", "3"))
	e.waitPods("app=ss", time.Minute, "ss-1 updated", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Name == "ss-1" && p.Status.Phase == corev1.PodRunning && p.Labels[appsv1.StatefulSetRevisionLabel] != rev1 {
				return true
			}
		}
		return false
	})
	if r := e.must("rollout", "status", "statefulset/ss", "--timeout", "1m"); !strings.Contains(r.stdout, "partitioned roll out complete: 1 new pods have been updated...") {
		t.Errorf("rollout status under a partition: %s", r)
	}
	s = e.statefulSet("ss")
	rev3 := s.Status.UpdateRevision
	if s.Status.CurrentRevision != rev1 || rev3 == rev1 || s.Status.UpdatedReplicas != 1 || s.Status.CurrentReplicas != 1 {
		t.Errorf("canary status %+v (current should stay %s)", s.Status, rev1)
	}
	e.waitSetRevisions(map[string]string{"ss-0": rev1, "ss-1": rev3})
	// A pod below the partition deleted comes back at the current revision.
	old := e.pod("ss-0")
	e.must("delete", "pod", "ss-0")
	e.waitCreated("ss-0", time.Minute)
	back := e.waitFor("ss-0", time.Minute, "made again", func(p *corev1.Pod) bool { return p.UID != old.UID && p.Status.Phase == corev1.PodRunning })
	if back.Labels[appsv1.StatefulSetRevisionLabel] != rev1 {
		t.Errorf("ss-0 came back at revision %s, want the current %s", back.Labels[appsv1.StatefulSetRevisionLabel], rev1)
	}
	if out := e.must("exec", "ss-0", "--", "sh", "-c", "echo $VERSION").stdout; out != "1\n" {
		t.Errorf("ss-0 VERSION %q, want the current template's 1", out)
	}
	// Phased: partition 0 finishes the rollout and the current revision moves.
	e.apply(e2eSet("{type: RollingUpdate, rollingUpdate: {partition: 0}}", "3"))
	e.must("rollout", "status", "statefulset/ss", "--timeout", "1m")
	e.waitSetRevisions(map[string]string{"ss-0": rev3, "ss-1": rev3})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if s = e.statefulSet("ss"); s.Status.CurrentRevision == rev3 && s.Status.CurrentReplicas == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("current revision %s after the phased rollout, want %s", s.Status.CurrentRevision, rev3)
		}
	}
	// The set's deletion takes its revisions.
	e.must("delete", "sts", "ss")
	if r := e.must("get", "controllerrevisions"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("revisions left after the set's deletion:\n%s", r.stdout)
	}
}

const e2eOrphanSetPod = `
apiVersion: v1
kind: Pod
metadata:
  name: ss-0
  labels: {app: LABEL}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.28
    env: [{name: VERSION, value: "1"}]
    command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
`

// statefulset.go "should adopt matching orphans and release non-matching
// pods" and "should implement legacy replacement when the update strategy
// is OnDelete": a pod named as the set's ordinal 0 with its labels is
// adopted (not replaced), released when its labels stop matching, adopted
// again when they match again; under OnDelete a template change replaces no
// pod until one is deleted, which comes back at the update revision.
func TestE2EAppsStatefulSetAdoptionAndOnDelete(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/ss")
	e.deleteAtEnd("pod/ss-0")
	e.apply(strings.Replace(e2eOrphanSetPod, "LABEL", "ss", 1))
	orphan := e.waitPhase("ss-0", corev1.PodRunning, time.Minute)
	e.apply(strings.Replace(e2eSet("{type: OnDelete}", "1"), "replicas: 2", "replicas: 1", 1))
	s := e.statefulSet("ss")
	owned := func(want bool) *corev1.Pod {
		t.Helper()
		return e.waitFor("ss-0", 30*time.Second, "adopted="+map[bool]string{true: "true", false: "false"}[want], func(p *corev1.Pod) bool {
			ref := metav1.GetControllerOf(p)
			return want == (ref != nil && ref.UID == s.UID && ref.Kind == "StatefulSet" && ref.Name == "ss")
		})
	}
	if p := owned(true); p.UID != orphan.UID {
		t.Errorf("ss-0 was replaced, not adopted")
	}
	// Released: labels no longer match; the set cannot make ss-0 meanwhile.
	e.apply(strings.Replace(e2eOrphanSetPod, "LABEL", "other", 1))
	if p := owned(false); p.UID != orphan.UID {
		t.Errorf("the released ss-0 was replaced")
	}
	e.apply(strings.Replace(e2eOrphanSetPod, "LABEL", "ss", 1))
	if p := owned(true); p.UID != orphan.UID {
		t.Errorf("ss-0 was replaced, not adopted again")
	}
	if r := e.podrun("rollout", "status", "sts/ss"); r.code == 0 || !strings.Contains(r.stderr, "rollout status is only available for RollingUpdate strategy type") {
		t.Errorf("rollout status of an OnDelete set: %s", r)
	}

	// OnDelete: the adopted pod (no revision label) and the template
	// change leave ss-0 alone until it is deleted.
	e.apply(strings.Replace(e2eSet("{type: OnDelete}", "2"), "replicas: 2", "replicas: 1", 1))
	time.Sleep(3 * time.Second)
	s = e.statefulSet("ss")
	if p := e.pod("ss-0"); p.UID != orphan.UID || s.Status.UpdatedReplicas != 0 || s.Status.UpdateRevision == s.Status.CurrentRevision || s.Status.ObservedGeneration != s.Generation {
		t.Errorf("OnDelete: pod replaced=%v status %+v", p.UID != orphan.UID, s.Status)
	}
	e.must("delete", "pod", "ss-0")
	e.waitCreated("ss-0", time.Minute)
	back := e.waitFor("ss-0", time.Minute, "made again", func(p *corev1.Pod) bool { return p.UID != orphan.UID && p.Status.Phase == corev1.PodRunning })
	if back.Labels[appsv1.StatefulSetRevisionLabel] != s.Status.UpdateRevision {
		t.Errorf("ss-0 made again at %s, want the update revision %s", back.Labels[appsv1.StatefulSetRevisionLabel], s.Status.UpdateRevision)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if s = e.statefulSet("ss"); s.Status.UpdatedReplicas == 1 && s.Status.CurrentRevision == s.Status.UpdateRevision {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after the OnDelete replacement: %+v", s.Status)
		}
	}
}

const e2eDaemonSet = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  updateStrategy: {type: STRATEGY}
  template:
    metadata: {labels: {app: ds}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        env: [{name: VERSION, value: "@V@"}]
        command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
`

func e2eDS(strategy, version string) string {
	return strings.NewReplacer("STRATEGY", strategy, "@V@", version).Replace(e2eDaemonSet)
}

// daemon_set.go "should update pod when spec was updated and update strategy
// is RollingUpdate", "should not update pod when spec was updated and update
// strategy is OnDelete" and "should rollback without unnecessary restarts"
// with kubectl's rollout history/undo/restart of a DaemonSet: its
// ControllerRevisions named `<ds>-<controller-revision-hash>`.
func TestE2EAppsDaemonSetRevisionsUndoRestart(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("daemonset/ds")
	e.apply(e2eDS("RollingUpdate", "1"))
	e.must("rollout", "status", "daemonset/ds", "--timeout", "1m")
	pod := func() corev1.Pod {
		t.Helper()
		return e.waitPods("app=ds", time.Minute, "one running pod", running(1))[0]
	}
	p1 := pod()
	hash1 := p1.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if revs := e.revisions(); len(revs) != 1 || revs[0][0] != "ds-"+hash1 || revs[0][1] != "daemonset.apps/ds" || revs[0][2] != "1" {
		t.Errorf("revisions %v, want ds-%s daemonset.apps/ds 1", revs, hash1)
	}
	e.apply(e2eDS("RollingUpdate", "2"))
	e.must("rollout", "status", "daemonset/ds", "--timeout", "1m")
	p2 := e.waitPods("app=ds", time.Minute, "the updated pod", func(p []corev1.Pod) bool {
		return running(1)(p) && p[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash1
	})[0]
	if h := e.historyRevisions("daemonset/ds"); h != "1,2" {
		t.Errorf("history %s, want 1,2", h)
	}
	if r := e.must("rollout", "undo", "daemonset/ds"); strings.TrimSpace(r.stdout) != "daemonset.apps/ds rolled back" {
		t.Errorf("undo: %s", r)
	}
	e.must("rollout", "status", "daemonset/ds", "--timeout", "1m")
	p3 := e.waitPods("app=ds", time.Minute, "the rolled back pod", func(p []corev1.Pod) bool {
		return running(1)(p) && p[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash1
	})[0]
	if out := e.must("exec", p3.Name, "--", "sh", "-c", "echo $VERSION").stdout; out != "1\n" {
		t.Errorf("VERSION %q after undo", out)
	}
	if h := e.historyRevisions("daemonset/ds"); h != "2,3" {
		t.Errorf("history after undo %s, want 2,3", h)
	}
	// rollout restart: a new pod with the restartedAt annotation.
	if r := e.must("rollout", "restart", "ds/ds"); strings.TrimSpace(r.stdout) != "daemonset.apps/ds restarted" {
		t.Errorf("restart: %s", r)
	}
	e.must("rollout", "status", "daemonset/ds", "--timeout", "1m")
	p4 := e.waitPods("app=ds", time.Minute, "the restarted pod", func(p []corev1.Pod) bool {
		return running(1)(p) && p[0].UID != p3.UID
	})[0]
	if p4.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("restarted pod annotations %v", p4.Annotations)
	}
	// OnDelete: a template change replaces nothing.
	e.apply(e2eDS("OnDelete", "5"))
	time.Sleep(3 * time.Second)
	if p := pod(); p.UID != p4.UID {
		t.Errorf("OnDelete replaced the pod")
	}
	var ds appsv1.DaemonSet
	e.getObject("ds", "ds", &ds)
	if ds.Status.UpdatedNumberScheduled != 0 || ds.Status.ObservedGeneration != ds.Generation {
		t.Errorf("OnDelete status %+v", ds.Status)
	}
	_ = p2
}

// job.go "should adopt matching orphans and release non-matching pods": a
// pod the Job's selector matches and no controller owns is adopted (the Job
// makes no pod for it), one whose labels stop matching is released and
// replaced.
func TestE2EAppsJobAdoptsAndReleases(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("job/adopt")
	e.deleteAtEnd("pod/job-orphan")
	orphanPod := `
apiVersion: v1
kind: Pod
metadata:
  name: job-orphan
  labels: {app: LABEL}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - {name: c, image: busybox:1.28, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']}
`
	e.apply(strings.Replace(orphanPod, "LABEL", "adopt", 1))
	orphan := e.waitPhase("job-orphan", corev1.PodRunning, time.Minute)
	e.apply(`
apiVersion: batch/v1
kind: Job
metadata: {name: adopt}
spec:
  parallelism: 2
  completions: 4
  manualSelector: true
  selector: {matchLabels: {app: adopt}}
  template:
    metadata: {labels: {app: adopt}}
    spec:
      terminationGracePeriodSeconds: 1
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.28, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']}
`)
	job := e.job("adopt")
	e.waitFor("job-orphan", 30*time.Second, "adopted", func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == job.UID && ref.Kind == "Job"
	})
	pods := e.waitPods("app=adopt", time.Minute, "2 running", running(2))
	time.Sleep(2 * time.Second)
	if pods = e.podsOf("app=adopt"); len(pods) != 2 {
		t.Errorf("the job made %d pods beside the adopted one, want 1", len(pods)-1)
	}
	if j := e.job("adopt"); j.Status.Active != 2 {
		t.Errorf("active %d, want 2", j.Status.Active)
	}
	// Released: the Job replaces it.
	e.apply(strings.Replace(orphanPod, "LABEL", "released", 1))
	e.waitFor("job-orphan", 30*time.Second, "released", func(p *corev1.Pod) bool { return metav1.GetControllerOf(p) == nil && p.UID == orphan.UID })
	e.waitPods("app=adopt", time.Minute, "2 running", running(2))
	var list corev1.PodList
	if err := json.Unmarshal([]byte(e.must("get", "pods", "-l", batchv1.JobNameLabel+"=adopt", "-o", "json").stdout), &list); err == nil {
		for _, p := range list.Items {
			if p.Name == "job-orphan" {
				t.Errorf("the released pod still has the job's labels")
			}
		}
	}
}

// statefulset.go "should delete PVCs with a OnScaledown policy" and "should
// delete PVCs with a WhenDeleted policy" (persistentVolumeClaimRetentionPolicy):
// scaling down deletes the claims of the removed ordinals, deleting the set
// deletes the rest; the claims are owned by the set meanwhile.
func TestE2EAppsStatefulSetClaimRetentionPolicy(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/pvc")
	e.apply(`
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pvc}
spec:
  serviceName: pvc
  replicas: 3
  podManagementPolicy: Parallel
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}
  selector: {matchLabels: {app: pvc}}
  template:
    metadata: {labels: {app: pvc}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
`)
	e.waitPods("app=pvc", time.Minute, "3 running", running(3))
	set := e.statefulSet("pvc")
	claims := func() string {
		out := e.must("get", "pvc", "-o", "name").stdout
		return strings.Join(strings.Fields(out), " ")
	}
	waitClaims := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second * timeoutScale); claims() != want; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("claims %q, want %q", claims(), want)
			}
		}
	}
	waitClaims("persistentvolumeclaim/data-pvc-0 persistentvolumeclaim/data-pvc-1 persistentvolumeclaim/data-pvc-2")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var c corev1.PersistentVolumeClaim
		e.getObject("pvc", "data-pvc-0", &c)
		if len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == set.UID && c.OwnerReferences[0].Kind == "StatefulSet" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim owners %+v, want the set", c.OwnerReferences)
		}
	}
	e.must("scale", "sts/pvc", "--replicas=1")
	e.waitPods("app=pvc", time.Minute, "1 running", running(1))
	waitClaims("persistentvolumeclaim/data-pvc-0")
	e.must("delete", "sts", "pvc")
	waitClaims("")
}

// statefulset.go "Scaling StatefulSetStartOrdinal": spec.ordinals.start
// names the pods from that ordinal (pod-index label too); raising it
// replaces the lowest pod by one past the end, lowering it back
// likewise.
func TestE2EAppsStatefulSetStartOrdinal(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/ss")
	m := strings.Replace(e2eSet("{type: RollingUpdate}", "1"), "  serviceName: ss\n", "  serviceName: ss\n  ordinals: {start: START}\n", 1)
	names := func(want ...string) {
		t.Helper()
		e.waitPods("app=ss", time.Minute, "pods "+strings.Join(want, ","), func(pods []corev1.Pod) bool {
			if !running(len(want))(pods) {
				return false
			}
			got := map[string]bool{}
			for _, p := range pods {
				got[p.Name] = true
			}
			for _, w := range want {
				if !got[w] {
					return false
				}
			}
			return true
		})
	}
	e.apply(strings.Replace(m, "START", "2", 1))
	names("ss-2", "ss-3")
	if p := e.pod("ss-3"); p.Labels[appsv1.PodIndexLabel] != "3" || p.Spec.Hostname != "ss-3" {
		t.Errorf("ss-3 labels %v hostname %q", p.Labels, p.Spec.Hostname)
	}
	e.apply(strings.Replace(m, "START", "3", 1))
	names("ss-3", "ss-4")
	e.apply(strings.Replace(m, "START", "0", 1))
	names("ss-0", "ss-1")
	// rollout restart replaces the pods; applying the manifest again keeps
	// the restartedAt annotation (kubectl apply's three-way merge).
	before := e.pod("ss-0")
	if r := e.must("rollout", "restart", "statefulset/ss"); strings.TrimSpace(r.stdout) != "statefulset.apps/ss restarted" {
		t.Errorf("restart: %s", r)
	}
	e.must("rollout", "status", "statefulset/ss", "--timeout", "1m")
	after := e.waitFor("ss-0", time.Minute, "restarted", func(p *corev1.Pod) bool {
		return p.UID != before.UID && p.Status.Phase == corev1.PodRunning && p.Annotations["kubectl.kubernetes.io/restartedAt"] != ""
	})
	if r := e.apply(strings.Replace(m, "START", "0", 1)); !strings.Contains(r.stdout, "statefulset.apps/ss unchanged") {
		t.Errorf("re-apply after restart: %s", r)
	}
	time.Sleep(time.Second)
	if p := e.pod("ss-0"); p.UID != after.UID {
		t.Errorf("the re-apply after restart replaced ss-0 again")
	}
	e.must("scale", "sts/ss", "--replicas=3")
	names("ss-0", "ss-1", "ss-2")
}

// waitJobCondition waits until the Job has the condition (True).
func (e *env) waitJobCondition(name string, cond batchv1.JobConditionType, timeout time.Duration) *batchv1.Job {
	e.t.Helper()
	for deadline := time.Now().Add(timeout * timeoutScale); ; time.Sleep(200 * time.Millisecond) {
		j := e.job(name)
		if jobCond(j, cond) != nil {
			return j
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s: no %s condition after %s; status %+v", name, cond, timeout, j.Status)
		}
	}
}

const e2eIndexedJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: NAME}
spec:
  completionMode: Indexed
SPEC
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sh', '-c', 'SCRIPT']
`

func indexedJob(name, spec, script string) string {
	return strings.NewReplacer("NAME", name, "SPEC", spec, "SCRIPT", script).Replace(e2eIndexedJob)
}

// job.go "should execute all indexes despite some failing when using
// backoffLimitPerIndex", "should terminate job execution when the number of
// failed indexes exceeds maxFailedIndexes", "should mark indexes as failed
// when the FailIndex action is matched in podFailurePolicy", and the
// successPolicy ones ("succeededIndexes rule should succeeded even when some
// indexes remain pending", "succeededCount rule …"): the Jobs run side by
// side.
func TestE2EAppsJobPerIndexBackoffAndSuccessPolicy(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"per-index", "max-failed", "fail-index", "success-indexes", "success-count"} {
		e.deleteAtEnd("job/" + n)
	}
	oddFails := `if [ $((JOB_COMPLETION_INDEX % 2)) -eq 1 ]; then exit 1; fi`
	sleepUnlessZero := `trap "exit 0" TERM; if [ $JOB_COMPLETION_INDEX -eq 0 ]; then exit 0; fi; while true; do sleep 1; done`
	e.apply(strings.Join([]string{
		indexedJob("per-index", "  completions: 4\n  parallelism: 4\n  backoffLimitPerIndex: 1", oddFails),
		indexedJob("max-failed", "  completions: 4\n  parallelism: 2\n  backoffLimitPerIndex: 0\n  maxFailedIndexes: 0", "exit 1"),
		indexedJob("fail-index", "  completions: 2\n  parallelism: 2\n  backoffLimitPerIndex: 1\n  podFailurePolicy:\n    rules:\n    - {action: FailIndex, onExitCodes: {operator: In, values: [1]}}", "exit 1"),
		indexedJob("success-indexes", "  completions: 3\n  parallelism: 3\n  successPolicy:\n    rules:\n    - {succeededIndexes: \"0\"}", sleepUnlessZero),
		indexedJob("success-count", "  completions: 3\n  parallelism: 3\n  successPolicy:\n    rules:\n    - {succeededIndexes: \"0-1\", succeededCount: 1}", sleepUnlessZero),
	}, "---\n"))

	j := e.waitJobCondition("fail-index", batchv1.JobFailed, time.Minute)
	if c := jobCond(j, batchv1.JobFailed); c.Reason != "FailedIndexes" || c.Message != "Job has failed indexes" || j.Status.FailedIndexes == nil || *j.Status.FailedIndexes != "0,1" || j.Status.Failed != 2 {
		t.Errorf("fail-index: condition %+v status %+v", c, j.Status)
	}
	if n := len(e.jobPods("fail-index")); n != 2 {
		t.Errorf("fail-index: %d pods, want 2 (no retries after FailIndex)", n)
	}
	j = e.waitJobCondition("max-failed", batchv1.JobFailed, time.Minute)
	if c := jobCond(j, batchv1.JobFailed); c.Reason != "MaxFailedIndexesExceeded" || c.Message != "Job has exceeded the specified maximal number of failed indexes" || j.Status.FailedIndexes == nil || *j.Status.FailedIndexes == "" || j.Status.Active != 0 {
		t.Errorf("max-failed: condition %+v status %+v", c, j.Status)
	}
	if jobCond(j, batchv1.JobFailureTarget) == nil {
		t.Errorf("max-failed: no FailureTarget condition: %+v", j.Status.Conditions)
	}
	for _, n := range []string{"success-indexes", "success-count"} {
		j = e.waitJobCondition(n, batchv1.JobComplete, time.Minute)
		c, met := jobCond(j, batchv1.JobComplete), jobCond(j, batchv1.JobSuccessCriteriaMet)
		if c.Reason != "SuccessPolicy" || met == nil || met.Reason != "SuccessPolicy" || met.Message != "Matched rules at index 0" || j.Status.Succeeded != 1 || j.Status.CompletedIndexes != "0" || j.Status.Active != 0 {
			t.Errorf("%s: complete %+v criteria %+v status %+v", n, c, met, j.Status)
		}
	}
	j = e.waitJobCondition("per-index", batchv1.JobFailed, time.Minute)
	if c := jobCond(j, batchv1.JobFailed); c.Reason != "FailedIndexes" || j.Status.FailedIndexes == nil || *j.Status.FailedIndexes != "1,3" || j.Status.CompletedIndexes != "0,2" || j.Status.Failed != 4 || j.Status.Succeeded != 2 {
		t.Errorf("per-index: condition %+v status %+v", c, j.Status)
	}
	counts := map[string]int{}
	for _, p := range e.jobPods("per-index") {
		counts[p.Annotations[batchv1.JobCompletionIndexAnnotation]+"/"+p.Annotations["batch.kubernetes.io/job-index-failure-count"]]++
	}
	if counts["1/0"] != 1 || counts["1/1"] != 1 || counts["3/1"] != 1 || counts["0/0"] != 1 {
		t.Errorf("per-index pods by index/failure-count: %v", counts)
	}
	// The API server's validation of the new fields.
	r := e.podrun("apply", "-f", e.manifest(strings.Replace(indexedJob("bad", "  completions: 2\n  maxFailedIndexes: 3", "true"), "  completionMode: Indexed\n", "", 1)))
	if r.code == 0 || !strings.Contains(r.stderr, "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified") {
		t.Errorf("apply of maxFailedIndexes without backoffLimitPerIndex: %s", r)
	}
}

// statefulset.go "should perform rolling updates with maxUnavailable"
// (MaxUnavailableStatefulSet, beta and on since Kubernetes 1.37): an
// OrderedReady set of 4 with maxUnavailable 2 replaces two pods at a time,
// highest ordinals first, and never has more than two unavailable; the
// default is 1, as the API server fills it in.
func TestE2EAppsStatefulSetMaxUnavailable(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("statefulset/ss")
	set := func(version string) string {
		m := strings.Replace(e2eSet("{type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}", version), "  replicas: 2\n  podManagementPolicy: Parallel\n", "  replicas: 4\n", 1)
		return strings.Replace(m, "        command:", "        readinessProbe: {exec: {command: ['true']}, periodSeconds: 1}\n        command:", 1)
	}
	e.mustFail(failure{[]string{"apply", "-f", e.manifest(strings.Replace(set("1"), "maxUnavailable: 2", "maxUnavailable: 0", 1))}, 2,
		"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": cannot be 0"})
	e.apply(set("1"))
	e.must("rollout", "status", "statefulset/ss", "--timeout", "2m")
	rev1 := e.statefulSet("ss").Status.UpdateRevision
	e.apply(set("2"))
	// Watch the rollout: at most 2 pods unavailable at any time, and 2 at once.
	most := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods := e.podsOf("app=ss")
		unavailable, updated := 4-len(pods), 0
		for _, p := range pods {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}
			if !ready || p.DeletionTimestamp != nil {
				unavailable++
			} else if p.Labels[appsv1.StatefulSetRevisionLabel] != rev1 {
				updated++
			}
		}
		most = max(most, unavailable)
		if updated == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout not done after 2m: %d updated", updated)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if most > 2 {
		t.Errorf("%d pods unavailable at once, maxUnavailable is 2", most)
	}
	if most < 2 {
		t.Errorf("at most %d pod unavailable at once: the update did not use maxUnavailable 2", most)
	}
	s := e.statefulSet("ss")
	if s.Status.UpdatedReplicas != 4 || s.Status.CurrentRevision != s.Status.UpdateRevision {
		t.Errorf("status %+v", s.Status)
	}
	if got := e.must("get", "sts", "ss", "-o", "jsonpath={.spec.updateStrategy.rollingUpdate.maxUnavailable}").stdout; got != "2" {
		t.Errorf("maxUnavailable %q", got)
	}
	e.apply(strings.Replace(set("2"), "{type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}", "{type: RollingUpdate}", 1))
	if got := e.must("get", "sts", "ss", "-o", "jsonpath={.spec.updateStrategy.rollingUpdate.maxUnavailable}").stdout; got != "1" {
		t.Errorf("defaulted maxUnavailable %q, want 1", got)
	}
}
