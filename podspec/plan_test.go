//go:build !podrun_lean

package podspec

import (
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func planErrLines(t *testing.T, src string) []string {
	t.Helper()
	m, err := Load([]byte(src), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plans()
	if err == nil {
		if len(plans) != len(m.Pods) {
			t.Fatalf("%d plans for %d pods", len(plans), len(m.Pods))
		}
		return nil
	}
	if plans != nil {
		t.Error("Plans returned plans with an error")
	}
	if !IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("%v holds no *ValidationError", err)
	}
	return strings.Split(err.Error(), "\n")
}

func TestPlansReportEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "all problems of a pod, in the API server's order",
			src:  mustRead(t, "testdata/invalid.yaml"),
			want: []string{
				`m.yaml: pod "Invalid_Name": metadata.name: Invalid value: "Invalid_Name": ` + dns1123Subdomain,
				`m.yaml: pod "Invalid_Name": spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`m.yaml: pod "Invalid_Name": spec.containers[0].volumeMounts[0].name: Not found: "missing"`,
				`m.yaml: pod "Invalid_Name": spec.initContainers[0].name: Duplicate value: "setup"`,
				`m.yaml: pod "Invalid_Name": spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
				`m.yaml: pod "Invalid_Name": spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`,
			},
		},
		{
			name: "a Job's errors name the paths in the Job",
			src: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  completionMode: Sideways
  template:
    metadata:
      labels: {tier: "bad value"}
    spec:
      containers:
      - name: Main
        image: busybox
`,
			want: []string{
				`m.yaml: job "j": spec.completionMode: Unsupported value: "Sideways": supported values: "NonIndexed", "Indexed"`,
				`m.yaml: job "j": spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`,
				`m.yaml: job "j": spec.template.metadata.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`m.yaml: job "j": spec.template.spec.containers[0].name: Invalid value: "Main": ` + dns1123Label,
			},
		},
		{
			name: "a Job's name is checked once",
			src: `apiVersion: batch/v1
kind: Job
metadata: {name: Bad_Job}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
`,
			want: []string{`m.yaml: job "Bad_Job": metadata.name: Invalid value: "Bad_Job": ` + dns1123Subdomain},
		},
		{
			name: "list items are named with their index",
			src:  `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}]}`,
			want: []string{`m.yaml: pod "a": items[0].spec.containers[0].image: Required value`},
		},
		{
			name: "duplicate objects",
			src: podHead + "  - {name: c, image: busybox}\n---\n" + podHead + "  - {name: c, image: busybox}\n---\n" +
				strings.Replace(podHead, "name: p", "name: p\n  namespace: other", 1) + "  - {name: c, image: busybox}\n",
			want: []string{`m.yaml: pod "p": metadata.name: Duplicate value: "p"`},
		},
		{
			name: "configmaps and secrets are validated",
			src: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {"bad key": x}
---
apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
stringData: {tls.crt: x}
---
` + podHead + "  - {name: c, image: busybox}\n",
			want: []string{
				`m.yaml: configmap "cfg": data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
				`m.yaml: secret "tls": data[tls.key]: Required value`,
			},
		},
		{name: "valid manifests", src: mustRead(t, "testdata/web.yaml")},
		{name: "valid job", src: mustRead(t, "testdata/job.yaml")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			matchErrors(t, planErrLines(t, tt.src), tt.want)
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlanContents(t *testing.T) {
	m, err := LoadFile("testdata/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plans()
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	if p.ConfigMaps["web-config"] == nil || p.Secrets["web-secret"] == nil {
		t.Errorf("plan ConfigMaps %v, Secrets %v", p.ConfigMaps, p.Secrets)
	}
	if p.QOS != corev1.PodQOSBurstable {
		t.Errorf("QOS = %s, want Burstable", p.QOS)
	}
	// init-db and log-shipper have no limits: the pod has none.
	if len(p.Limits) != 0 || p.CPULimitsDeclared || p.MemoryLimitsDeclared {
		t.Errorf("limits %v declared %v/%v, want none", p.Limits, p.CPULimitsDeclared, p.MemoryLimitsDeclared)
	}
	if got := rlString(p.Requests); got != "cpu=500m memory=128Mi" {
		t.Errorf("requests = %s", got)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings = %q", p.Warnings)
	}
}

func TestPlanWarnings(t *testing.T) {
	src := `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: -5
      containers:
      - name: c
        image: busybox
        resources:
          limits: {memory: 1.5}
        envFrom:
        - configMapRef: {name: absent}
        - secretRef: {name: absent-optional, optional: true}
        env:
        - {name: A, value: "1"}
        - {name: A, value: "2"}
        ports:
        - {containerPort: 80, hostPort: 8080}
        - {containerPort: 80}
      volumes:
      - name: s
        secret: {secretName: absent}
`
	m, err := Load([]byte(src), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plans(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
		`spec.template.spec.containers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.template.spec.containers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.template.spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply`,
		`spec.template.spec.containers[0].ports[1]: overlapping port definition with spec.template.spec.containers[0].ports[0]`,
		`spec.template.spec.containers[0].envFrom[0].configMapRef: configmap "absent" not found in namespace default`,
		`spec.template.spec.volumes[0].secret: secret "absent" not found in namespace default`,
	}
	matchErrors(t, m.Workloads[0].Warnings, want)
}
