//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestLoadDeploymentDefaults(t *testing.T) {
	m, err := Load([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: busybox:1.28}]
`), "d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plans(); err != nil {
		t.Fatal(err)
	}
	if len(m.Workloads) != 1 {
		t.Fatalf("workloads: %d", len(m.Workloads))
	}
	d := m.Workloads[0].Object.(*appsv1.Deployment)
	ru := d.Spec.Strategy.RollingUpdate
	if d.Namespace != "default" || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("defaults: %+v", d.Spec)
	}
	if d.Spec.Template.Spec.RestartPolicy != "Always" || d.Spec.Template.Spec.DNSPolicy != "ClusterFirst" {
		t.Errorf("the template is not defaulted: %+v", d.Spec.Template.Spec)
	}
}

// The API server's errors for a workload, with the paths the user wrote.
func TestValidateWorkloads(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox}]}`, "spec.template.metadata.labels: Invalid value"},
		{`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`, `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
		{`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: web}
spec:
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox}]}`, "spec.selector: Required value"},
		{`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox, ports: [{containerPort: 99999}]}]}`, "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": may not be 0 when `maxSurge` is 0"},
		{`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox, ports: [{containerPort: 99999}]}]}`, "spec.template.spec.containers[0].ports[0].containerPort"},
	} {
		m, err := Load([]byte(tc.doc), "w.yaml")
		if err == nil {
			_, err = m.Plans()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}
