//go:build !podrun_lean

package podspec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

const podHead = `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
`

// loadErrLines loads src and returns the error's lines (nil if it loaded).
func loadErrLines(t *testing.T, src string) []string {
	t.Helper()
	m, err := Load([]byte(src), "pod.yaml")
	if err == nil {
		if m == nil {
			t.Fatal("Load returned neither a manifest nor an error")
		}
		return nil
	}
	if m != nil {
		t.Errorf("Load returned a manifest with the error %v", err)
	}
	if !IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false, want true", err)
	}
	return strings.Split(err.Error(), "\n")
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // exact lines; an entry ending in "..." is a prefix
	}{
		{
			name: "misspelled field names file, line and path",
			src:  podHead + "  - name: c\n    imagee: busybox\n",
			want: []string{`pod.yaml:8: spec.containers[0].imagee: unknown field "imagee"`},
		},
		{
			name: "field names are case-sensitive",
			src:  podHead + "  - name: c\n    Image: busybox\n",
			want: []string{`pod.yaml:8: spec.containers[0].Image: unknown field "Image"`},
		},
		{
			name: "every unknown field is reported",
			src: `apiVersion: v1
kind: Pod
metadata:
  name: p
  lables: {a: b}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      limit: {cpu: 1}
  restartpolicy: Never
`,
			want: []string{
				`pod.yaml:5: metadata.lables: unknown field "lables"`,
				`pod.yaml:11: spec.containers[0].resources.limit: unknown field "limit"`,
				`pod.yaml:12: spec.restartpolicy: unknown field "restartpolicy"`,
			},
		},
		{
			name: "duplicate field",
			src:  podHead + "  - name: c\n    image: a\n    image: b\n",
			want: []string{`pod.yaml:9: spec.containers[0].image: duplicate field "image" (first defined at line 8)`},
		},
		{
			name: "number where a string is wanted",
			src:  podHead + "  - name: c\n    image: busybox\n    env:\n    - name: PORT\n      value: 8080\n",
			want: []string{`pod.yaml:11: spec.containers[0].env[0].value: cannot unmarshal number into a field of type string (quote the value)`},
		},
		{
			name: "YAML 1.1 boolean where a string is wanted",
			src:  podHead + "  - name: c\n    image: busybox\n    env:\n    - name: DEBUG\n      value: yes\n",
			want: []string{`pod.yaml:11: spec.containers[0].env[0].value: cannot unmarshal bool into a field of type string (quote the value)`},
		},
		{
			name: "string where an integer is wanted, with an unknown field too",
			src:  podHead + "  - name: c\n    image: busybox\n    ports:\n    - containerPort: \"80\"\n      hostport: 80\n",
			want: []string{
				`pod.yaml:10: spec.containers[0].ports[0].containerPort: cannot unmarshal string into a field of type integer`,
				`pod.yaml:11: spec.containers[0].ports[0].hostport: unknown field "hostport"`,
			},
		},
		{
			name: "malformed quantity",
			src:  podHead + "  - name: c\n    image: busybox\n    resources:\n      limits:\n        cpu: 1x\n",
			want: []string{`pod.yaml:11: spec.containers[0].resources.limits[cpu]: invalid quantity "1x": quantities must match the regular expression...`},
		},
		{
			name: "YAML syntax error has line and column",
			src:  "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p: q\n",
			want: []string{`pod.yaml:4:10: YAML syntax error: mapping values are not allowed in this context`},
		},
		{
			name: "tab indentation",
			src:  "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n",
			want: []string{`pod.yaml:4:1: YAML syntax error: found character that cannot start any token`},
		},
		{
			name: "bad indentation",
			src:  podHead + "  - name: c\n    image: busybox\n   command: [x]\n",
			want: []string{`pod.yaml:9:4: YAML syntax error: did not find expected key`},
		},
		{
			name: "unsupported kind",
			src:  "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: d\n",
			want: []string{`pod.yaml:2: kind: kind HorizontalPodAutoscaler is not supported`},
		},
		{
			name: "manual EndpointSlice",
			src:  "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: d\naddressType: IPv4\n",
			want: []string{`pod.yaml:2: kind: kind EndpointSlice is not supported: podrun computes a Service's EndpointSlices from its selector; a Service without a selector has no endpoints`},
		},
		{
			name: "wrong apiVersion",
			src:  "apiVersion: apps/v1\nkind: Pod\nmetadata:\n  name: d\n",
			want: []string{`pod.yaml:1: apiVersion: apiVersion "apps/v1" is not supported for kind Pod (want "v1")`},
		},
		{
			name: "kind and apiVersion missing",
			src:  "metadata:\n  name: d\n",
			want: []string{`pod.yaml:1: apiVersion not set, kind not set`},
		},
		{
			name: "not an object",
			src:  "- a\n- b\n",
			want: []string{`pod.yaml:1: expected an object with apiVersion and kind`},
		},
		{
			name: "only empty documents",
			src:  "---\n# nothing\n---\n",
			want: []string{`pod.yaml: no objects in the manifest`},
		},
		{
			name: "invalid document separator",
			src:  podHead + "  - name: c\n    image: busybox\n--- {}\n",
			want: []string{`pod.yaml:9:1: invalid YAML document separator: {} (document 2)`},
		},
		{
			name: "problems in several documents name the document",
			src: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: 1\n---\n" +
				podHead + "  - name: c\n    image: busybox\n    workdir: /x\n",
			want: []string{
				`pod.yaml:6: data[k]: cannot unmarshal number into a field of type string (quote the value) (document 1)`,
				`pod.yaml:16: spec.containers[0].workdir: unknown field "workdir" (document 2)`,
			},
		},
		{
			name: "secret data must be base64",
			src:  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: not-base64!\n---\n" + podHead + "  - name: c\n    image: busybox\n",
			want: []string{`pod.yaml:6: data[k]: invalid base64 data: illegal base64 data at input byte 3 (document 1)`},
		},
		{
			name: "list item of an unsupported kind",
			src: `apiVersion: v1
kind: List
items:
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: s}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec:
    containers:
    - {name: c, image: busybox, imagePullpolicy: Always}
`,
			want: []string{
				`pod.yaml:5: items[0].kind: kind HorizontalPodAutoscaler is not supported`,
				`pod.yaml:12: items[1].spec.containers[0].imagePullpolicy: unknown field "imagePullpolicy"`,
			},
		},
		{
			name: "JSON syntax error has line and column",
			src:  "{\n  \"apiVersion\": \"v1\",\n  \"kind\": ,\n}\n",
			want: []string{`pod.yaml:3:11: JSON syntax error: invalid character ',' looking for beginning of value`},
		},
		{
			name: "JSON duplicate and unknown fields",
			src:  `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a", "image": "b", "Name": "x"}]}}`,
			want: []string{
				`pod.yaml:1: spec.containers[0].image: duplicate field "image"`,
				`pod.yaml:1: spec.containers[0].Name: unknown field "Name"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErrLines(t, tt.src)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if w, prefix := strings.CutSuffix(tt.want[i], "..."); prefix {
					if !strings.HasPrefix(got[i], w) {
						t.Errorf("problem %d = %q, want prefix %q", i, got[i], w)
					}
				} else if got[i] != tt.want[i] {
					t.Errorf("problem %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLoadErrorStructure(t *testing.T) {
	_, err := Load([]byte(podHead+"  - name: c\n    imagee: busybox\n"), "x.yaml")
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("error %v is not a *LoadError", err)
	}
	want := LoadError{File: "x.yaml", Doc: 1, Docs: 1, Line: 8, Col: 5, Path: "spec.containers[0].imagee", Msg: `unknown field "imagee"`}
	if *le != want {
		t.Errorf("LoadError = %+v, want %+v", *le, want)
	}
}

func TestLoadTestdata(t *testing.T) {
	tests := []struct {
		file               string
		pods               []string // namespace/name
		configMaps, secret int
	}{
		{"web.yaml", []string{"default/web"}, 1, 1},
		{"seed-resources.yaml", []string{"default/seed"}, 0, 0},
		{"job.yaml", nil, 0, 0},
		{"list.json", []string{"default/one", "ci/two"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m, err := LoadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range m.Pods {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.pods, ",") {
				t.Errorf("pods = %v, want %v", got, tt.pods)
			}
			if len(m.ConfigMaps) != tt.configMaps || len(m.Secrets) != tt.secret {
				t.Errorf("got %d ConfigMaps and %d Secrets, want %d and %d", len(m.ConfigMaps), len(m.Secrets), tt.configMaps, tt.secret)
			}
			if len(m.Origins) != len(m.Pods) {
				t.Errorf("%d origins for %d pods", len(m.Origins), len(m.Pods))
			}
		})
	}
}

func TestLoadMultiDocumentAndEmptyDocuments(t *testing.T) {
	src := "---\n# leading comment only\n---\n" + podHead + "  - name: c\n    image: busybox\n---\n\n---   # trailing\n" +
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}` + "\n---\nnull\n"
	m, err := Load([]byte(src), "pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 2 || m.Pods[0].Name != "p" || m.Pods[1].Name != "q" {
		t.Fatalf("pods = %v", m.Pods)
	}
	if m.Origins[0].Line != 4 || m.Origins[1].Line != 15 {
		t.Errorf("origin lines = %d, %d; want 4, 15", m.Origins[0].Line, m.Origins[1].Line)
	}
}

func TestLoadJSONStream(t *testing.T) {
	src := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}}`
	m, err := Load([]byte(src), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 1 || len(m.ConfigMaps) != 1 || m.ConfigMaps[0].Data["k"] != "v" {
		t.Errorf("manifest = %+v", m)
	}
}

func TestLoadJob(t *testing.T) {
	m, err := LoadFile("testdata/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 0 || len(m.Workloads) != 1 {
		t.Fatalf("pods %d workloads %d: a Job is a workload object, its pods the controller's", len(m.Pods), len(m.Workloads))
	}
	w := m.Workloads[0]
	job := w.Object.(*batchv1.Job)
	if job.Name != "migrate" || job.Namespace != "default" {
		t.Errorf("job = %s/%s, want default/migrate", job.Namespace, job.Name)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy = %q, want the template's OnFailure", job.Spec.Template.Spec.RestartPolicy)
	}
	if *job.Spec.BackoffLimit != 2 || *job.Spec.Completions != 1 || *job.Spec.Parallelism != 1 || *job.Spec.CompletionMode != batchv1.NonIndexedCompletion {
		t.Errorf("defaults: %+v", job.Spec)
	}
	for k, v := range map[string]string{"app": "migrate", "batch.kubernetes.io/job-name": "migrate", "job-name": "migrate"} {
		if job.Spec.Template.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, job.Spec.Template.Labels[k], v)
		}
	}
	o := w.Origin
	if !o.Template || o.SourcePath("spec.containers[0].name") != "spec.template.spec.containers[0].name" ||
		o.SourcePath("metadata.name") != "metadata.name" || o.SourcePath("metadata.labels") != "spec.template.metadata.labels" {
		t.Errorf("origin = %+v", o)
	}
}

func TestLoadSecretStringDataAndConfigMapDefaults(t *testing.T) {
	src := `apiVersion: v1
kind: Secret
metadata: {name: s}
data:
  a: YQ==
  b: Yg==
stringData:
  b: from-string
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: ns}
---
` + podHead + "  - {name: c, image: busybox}\n"
	m, err := Load([]byte(src), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := m.Secrets[0]
	if string(s.Data["a"]) != "a" || string(s.Data["b"]) != "from-string" || s.StringData != nil || s.Type != corev1.SecretTypeOpaque || s.Namespace != "default" {
		t.Errorf("secret = %+v", s)
	}
	cm := m.ConfigMaps[0]
	if cm.Data == nil || cm.Namespace != "ns" {
		t.Errorf("configmap = %+v", cm)
	}
}

func TestLoadGenerateNameAndSystemFields(t *testing.T) {
	src := `apiVersion: v1
kind: Pod
metadata:
  generateName: web-
  uid: "1234"
  resourceVersion: "9"
spec:
  containers: [{name: c, image: busybox}]
status:
  phase: Running
`
	m, err := Load([]byte(src), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := m.Pods[0]
	if !strings.HasPrefix(p.Name, "web-") || len(p.Name) != len("web-")+5 {
		t.Errorf("name = %q, want web- and 5 random characters", p.Name)
	}
	if p.UID != "" || p.ResourceVersion != "" || p.Status.Phase != "" {
		t.Errorf("system fields kept: uid %q, resourceVersion %q, phase %q", p.UID, p.ResourceVersion, p.Status.Phase)
	}
}

func TestLoadFileStdinAndMissing(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "absent.yaml")); err == nil || IsInvalid(err) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(absent) = %v, want a not-exist I/O error that is not IsInvalid", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old; r.Close() })
	go func() {
		w.WriteString(podHead + "  - {name: c, image: busybox}\n")
		w.Close()
	}()
	m, err := LoadFile("-")
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "-" || m.Pods[0].Name != "p" {
		t.Errorf("manifest from stdin = %+v", m)
	}
}

func TestIsInvalid(t *testing.T) {
	if IsInvalid(errors.New("disk on fire")) || IsInvalid(nil) {
		t.Error("IsInvalid is true for an unrelated error")
	}
	if !IsInvalid(&ValidationError{File: "f", Kind: "pod", Name: "p"}) {
		t.Error("IsInvalid(ValidationError) = false")
	}
	wrapped := errors.Join(errors.New("context"), ErrorList{&LoadError{File: "f", Msg: "m"}})
	if !IsInvalid(wrapped) {
		t.Error("IsInvalid(wrapped ErrorList) = false")
	}
}

func TestLoadErrorPositions(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown key with dots", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  foo.bar: x\nspec:\n  containers: [{name: c, image: busybox}]\n",
			`pod.yaml:5: metadata.foo.bar: unknown field "foo.bar"`},
		{"label value of the wrong type", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    app.kubernetes.io/version: 1.0\nspec:\n  containers: [{name: c, image: busybox}]\n",
			`pod.yaml:6: metadata.labels[app.kubernetes.io/version]: cannot unmarshal number into a field of type string (quote the value)`},
		{"object where a list is wanted", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: {name: c}\n",
			`pod.yaml:5: spec.containers: cannot unmarshal object into a field of type array`},
		{"anchors and aliases", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - &c {name: c, image: busybox, port: 1}\n",
			`pod.yaml:6: spec.containers[0].port: unknown field "port"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErrLines(t, tt.src)
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("errors = %q, want [%s]", got, tt.want)
			}
		})
	}
}

func TestScalarKindIsYAML11(t *testing.T) {
	tests := map[string]string{
		"yes": "bool", "Off": "bool", "y": "bool", "TRUE": "bool", "~": "null", "null": "null", "": "null",
		"12": "number", "-1_000": "number", "0x1F": "number", "0o17": "number", "017": "number", "1.5e3": "number",
		".5": "number", ".inf": "number", "-.INF": "number", ".NaN": "number", "0b101": "number", "+12": "number",
		"1.2.3": "string", "1e": "string", "0xZZ": "string", "abc": "string", "2024-01-01": "string", "-x": "string",
		`"12"`: "string", "'yes'": "string", "!!str 12": "string", "!!int '12'": "number", "|\n  12": "string",
	}
	for src, want := range tests {
		n, err := parseV3([]byte(src))
		if err != nil {
			t.Fatalf("parsing %q: %v", src, err)
		}
		if n == nil {
			n = &yaml.Node{Kind: yaml.ScalarNode}
		}
		if got := scalarKind(n); got != want {
			t.Errorf("scalarKind(%q) = %s, want %s", src, got, want)
		}
	}
}
