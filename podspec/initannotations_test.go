//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The pod of the Kubernetes 1.5 init-container docs, as users still find it.
const annotatedPod = `apiVersion: v1
kind: Pod
metadata:
  name: myapp-pod
  annotations:
    pod.beta.kubernetes.io/init-containers: '[
        {"name": "init-myservice", "image": "busybox", "command": ["sh", "-c", "echo one"]},
        {"name": "init-mydb", "image": "busybox", "command": ["sh", "-c", "echo two"]}
      ]'
spec:
  containers:
  - name: myapp-container
    image: busybox
    command: ['sh', '-c', 'echo The app is running! && sleep 3600']
`

func TestInitContainerAnnotations(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		wantInits []string
		wantFrom  string
		warning   string // substring of the one warning about the annotation; "" for none
	}{
		{"beta annotation becomes spec.initContainers", annotatedPod,
			[]string{"init-myservice", "init-mydb"}, initContainersBetaAnnotation, "Kubernetes ≥ 1.8 ignores this annotation"},
		{"alpha annotation", strings.Replace(annotatedPod, "pod.beta.", "pod.alpha.", 1),
			[]string{"init-myservice", "init-mydb"}, initContainersAlphaAnnotation, "run as spec.initContainers"},
		{"beta wins over alpha", strings.Replace(annotatedPod, "  annotations:\n", "  annotations:\n    pod.alpha.kubernetes.io/init-containers: '[{\"name\": \"alpha\", \"image\": \"busybox\"}]'\n", 1),
			[]string{"init-myservice", "init-mydb"}, initContainersBetaAnnotation, "run as spec.initContainers"},
		{"spec.initContainers wins", strings.Replace(annotatedPod, "spec:\n", "spec:\n  initContainers:\n  - name: real\n    image: busybox\n", 1),
			[]string{"real"}, "", "ignored: spec.initContainers is set"},
		{"no annotation", strings.Replace(annotatedPod, "pod.beta.kubernetes.io/init-containers", "example.com/other", 1),
			nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load([]byte(tc.src), "pod.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range m.Pods[0].Spec.InitContainers {
				got = append(got, c.Name)
				if c.TerminationMessagePath == "" || c.ImagePullPolicy == "" {
					t.Errorf("init container %s not defaulted: %+v", c.Name, c)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.wantInits, ",") {
				t.Errorf("init containers = %v, want %v", got, tc.wantInits)
			}
			if m.Origins[0].InitFromAnnotation != tc.wantFrom {
				t.Errorf("InitFromAnnotation = %q, want %q", m.Origins[0].InitFromAnnotation, tc.wantFrom)
			}
			plans, err := m.Plans()
			if err != nil {
				t.Fatal(err)
			}
			var ws []string
			for _, w := range plans[0].Warnings {
				if strings.Contains(w, "init-containers]") {
					ws = append(ws, w)
				}
			}
			switch {
			case tc.warning == "" && len(ws) != 0:
				t.Errorf("warnings = %q, want none", ws)
			case tc.warning != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.warning)):
				t.Errorf("warnings = %q, want one containing %q", ws, tc.warning)
			}
		})
	}
}

func TestInitContainerAnnotationNotAList(t *testing.T) {
	src := strings.Replace(annotatedPod, "'[\n", "'{\n", 1)
	lines := loadErrLines(t, src)
	if len(lines) != 1 || !strings.Contains(lines[0], "pod.yaml:6: metadata.annotations[pod.beta.kubernetes.io/init-containers]: must be a JSON list of containers") {
		t.Errorf("error = %q", lines)
	}
}

func TestInitContainerAnnotationInJobTemplate(t *testing.T) {
	src := `apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  template:
    metadata:
      annotations:
        pod.alpha.kubernetes.io/init-containers: '[{"name": "prep", "image": "busybox"}]'
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
`
	m, err := Load([]byte(src), "job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ic := Template(m.Workloads[0].Object).Spec.InitContainers; len(ic) != 1 || ic[0].Name != "prep" || ic[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("init containers = %+v", ic)
	}
	if _, err := m.Plans(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range m.Workloads[0].Warnings {
		found = found || strings.HasPrefix(w, "spec.template.metadata.annotations[pod.alpha.kubernetes.io/init-containers]: run as")
	}
	if !found {
		t.Errorf("warnings = %q", m.Workloads[0].Warnings)
	}
}
