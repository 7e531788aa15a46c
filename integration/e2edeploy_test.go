package integration

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testProportionalScalingDeployment of test/e2e/apps/deployment.go (with
// smaller sizes): a rollout stuck midway (the new pods never Ready) leaves
// two active ReplicaSets; scaling the Deployment shares the new replicas
// among them in proportion to their sizes (the deployment controller's
// scale and GetReplicaSetProportion), and so does scaling it down while it
// is paused.
func TestE2EDeployProportionalScaling(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/wl-prop")
	manifest := func(probe string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: wl-prop}
spec:
  replicas: 5
  selector: {matchLabels: {app: wl-prop}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 3, maxUnavailable: 2}
  template:
    metadata: {labels: {app: wl-prop}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sleep', '3600']
` + probe
	}
	e.applyStdin(manifest(""))
	e.waitDeploy("wl-prop", 120*time.Second, "5 available", func(d *appsv1.Deployment, _ map[string]*appsv1.ReplicaSet) bool {
		return d.Status.AvailableReplicas == 5 && d.Status.UpdatedReplicas == 5
	})
	// A new template whose pods never become Ready: the rollout stops with
	// the old ReplicaSet at 5-2=3 and the new one at 5+3-3=5.
	e.applyStdin(manifest("        readinessProbe: {exec: {command: ['false']}, periodSeconds: 5}\n"))
	e.waitDeploy("wl-prop", 120*time.Second, "old 3, new 5", rsSizes(3, 5, 5))
	// Scaled to 10 (max 13): 5 more, shared 3 (new, 5 of 8) and 2 (old).
	e.must("scale", "deployment/wl-prop", "--replicas=10")
	e.waitDeploy("wl-prop", 60*time.Second, "old 5, new 8", rsSizes(5, 8, 10))
	// Paused, then scaled to 4 (max 7): 6 fewer, the larger one first.
	e.must("rollout", "pause", "deployment/wl-prop")
	e.must("scale", "deployment/wl-prop", "--replicas=4")
	e.waitDeploy("wl-prop", 60*time.Second, "old 3, new 4", rsSizes(3, 4, 4))
}

// rsSizes: the revision 1 and revision 2 ReplicaSets have these replicas,
// both annotated with the Deployment's desired and max replicas.
func rsSizes(old, new, desired int32) func(*appsv1.Deployment, map[string]*appsv1.ReplicaSet) bool {
	return func(d *appsv1.Deployment, rss map[string]*appsv1.ReplicaSet) bool {
		o, n := rss["1"], rss["2"]
		if o == nil || n == nil || *o.Spec.Replicas != old || *n.Spec.Replicas != new {
			return false
		}
		for _, rs := range []*appsv1.ReplicaSet{o, n} {
			if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != fmt.Sprint(desired) ||
				rs.Annotations["deployment.kubernetes.io/max-replicas"] != fmt.Sprint(desired+3) {
				return false
			}
		}
		return true
	}
}

// waitDeploy polls the Deployment and its ReplicaSets (by revision).
func (e *env) waitDeploy(name string, timeout time.Duration, what string, cond func(*appsv1.Deployment, map[string]*appsv1.ReplicaSet) bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout * timeoutScale)
	for {
		var d appsv1.Deployment
		e.getObject("deployment", name, &d)
		rss := map[string]*appsv1.ReplicaSet{}
		for _, rs := range e.replicaSets() {
			if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
				rs := rs
				rss[rs.Annotations["deployment.kubernetes.io/revision"]] = &rs
			}
		}
		if cond(&d, rss) {
			return
		}
		if time.Now().After(deadline) {
			var sizes []string
			for r, rs := range rss {
				sizes = append(sizes, fmt.Sprintf("rev %s %s: spec %d available %d", r, rs.Name, *rs.Spec.Replicas, rs.Status.AvailableReplicas))
			}
			e.t.Fatalf("deployment %s: not %s after %s\nstatus %+v\n%v", name, what, timeout, d.Status, sizes)
		}
		time.Sleep(time.Second)
	}
}

// testDeploymentCleanUpPolicy and the Deployment's conditions: with
// revisionHistoryLimit 0 the old ReplicaSet goes once the rollout is
// complete (Progressing True NewReplicaSetAvailable, Available True
// MinimumReplicasAvailable); a rollout whose pods never become Ready is
// Progressing False ProgressDeadlineExceeded after progressDeadlineSeconds
// while the old pods keep it Available.
func TestE2EDeployCleanUpPolicyAndConditions(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/wl-cond")
	manifest := func(v, probe string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: wl-cond}
spec:
  replicas: 2
  revisionHistoryLimit: 0
  progressDeadlineSeconds: 6
  selector: {matchLabels: {app: wl-cond}}
  template:
    metadata: {labels: {app: wl-cond}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sleep', '3600']
        env: [{name: V, value: "` + v + `"}]
` + probe
	}
	conds := func(d *appsv1.Deployment) map[appsv1.DeploymentConditionType]string {
		m := map[appsv1.DeploymentConditionType]string{}
		for _, c := range d.Status.Conditions {
			m[c.Type] = string(c.Status) + "/" + c.Reason + "/" + c.Message
		}
		return m
	}
	complete := func(rev string) func(*appsv1.Deployment, map[string]*appsv1.ReplicaSet) bool {
		return func(d *appsv1.Deployment, rss map[string]*appsv1.ReplicaSet) bool {
			rs := rss[rev]
			c := conds(d)
			return rs != nil && len(rss) == 1 && d.Status.AvailableReplicas == 2 && d.Status.UpdatedReplicas == 2 && d.Status.Replicas == 2 &&
				c[appsv1.DeploymentProgressing] == fmt.Sprintf("True/NewReplicaSetAvailable/ReplicaSet %q has successfully progressed.", rs.Name) &&
				c[appsv1.DeploymentAvailable] == "True/MinimumReplicasAvailable/Deployment has minimum availability."
		}
	}
	e.applyStdin(manifest("1", ""))
	e.waitDeploy("wl-cond", 120*time.Second, "complete at revision 1", complete("1"))
	e.applyStdin(manifest("2", ""))
	e.waitDeploy("wl-cond", 120*time.Second, "complete at revision 2, revision 1 removed", complete("2"))
	e.applyStdin(manifest("3", "        readinessProbe: {exec: {command: ['false']}, periodSeconds: 5}\n"))
	e.waitDeploy("wl-cond", 120*time.Second, "ProgressDeadlineExceeded", func(d *appsv1.Deployment, rss map[string]*appsv1.ReplicaSet) bool {
		rs := rss["3"]
		c := conds(d)
		return rs != nil && rss["2"] != nil && c[appsv1.DeploymentProgressing] == fmt.Sprintf("False/ProgressDeadlineExceeded/ReplicaSet %q has timed out progressing.", rs.Name) &&
			c[appsv1.DeploymentAvailable] == "True/MinimumReplicasAvailable/Deployment has minimum availability."
	})
}

// testRolloverDeployment: a Deployment adopts a bare ReplicaSet of its
// selector (an old one: another template), starts a rollout whose pods
// never become Ready, and is then updated again: the stuck ReplicaSet is
// scaled down at once (rolled over), the newest one comes up after
// minReadySeconds, and every old ReplicaSet ends at 0.
func TestE2EDeployRollover(t *testing.T) {
	e := newEnv(t)
	e.deleteAtEnd("deployment/wl-roll")
	e.deleteAtEnd("rs/wl-roll-controller")
	e.applyStdin(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: wl-roll-controller, labels: {name: wl-roll-pod}}
spec:
  replicas: 1
  selector: {matchLabels: {name: wl-roll-pod}}
  template:
    metadata: {labels: {name: wl-roll-pod, pod: httpd}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: httpd, image: busybox:1.28, command: ['sleep', '3600']}]
`)
	e.waitPods("name=wl-roll-pod", time.Minute, "1 running", running(1))
	dep := func(v, probe string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: wl-roll}
spec:
  replicas: 1
  minReadySeconds: 3
  selector: {matchLabels: {name: wl-roll-pod}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  template:
    metadata: {labels: {name: wl-roll-pod}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:1.28
        command: ['sleep', '3600']
        env: [{name: V, value: "` + v + `"}]
` + probe
	}
	e.applyStdin(dep("bad", "        readinessProbe: {exec: {command: ['false']}, periodSeconds: 5}\n"))
	e.waitDeploy("wl-roll", time.Minute, "a stuck rollout beside the adopted ReplicaSet", func(d *appsv1.Deployment, rss map[string]*appsv1.ReplicaSet) bool {
		var adopted, stuck *appsv1.ReplicaSet
		for _, rs := range rss {
			if rs.Name == "wl-roll-controller" {
				adopted = rs
			} else {
				stuck = rs
			}
		}
		return len(rss) == 2 && adopted != nil && stuck != nil && *adopted.Spec.Replicas == 1 && *stuck.Spec.Replicas == 1 && d.Status.AvailableReplicas == 1
	})
	var d appsv1.Deployment
	e.getObject("deployment", "wl-roll", &d)
	stuckRev := d.Annotations["deployment.kubernetes.io/revision"]
	e.applyStdin(dep("good", ""))
	e.waitDeploy("wl-roll", 2*time.Minute, "rolled over", func(d *appsv1.Deployment, rss map[string]*appsv1.ReplicaSet) bool {
		if len(rss) != 3 || d.Status.AvailableReplicas != 1 || d.Status.UpdatedReplicas != 1 || d.Status.Replicas != 1 {
			return false
		}
		rev := d.Annotations["deployment.kubernetes.io/revision"]
		for r, rs := range rss {
			if (r == rev) != (*rs.Spec.Replicas == 1) {
				return false
			}
		}
		return rss[rev] != nil && rev != stuckRev && *rss[stuckRev].Spec.Replicas == 0 && rss[rev].Status.AvailableReplicas == 1
	})
}
