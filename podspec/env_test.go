//go:build !podrun_lean

package podspec

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const envManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: ci}
data: {A: "1", B: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec, namespace: ci}
stringData: {TOKEN: t0k3n}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: ci
  labels: {app: web, tier: front}
  annotations: {example.com/owner: team-a}
spec:
  serviceAccountName: builder
  containers:
  - name: app
    image: busybox
    resources:
      limits: {cpu: 250m, memory: 100Mi}
    envFrom:
    - prefix: CFG_
      configMapRef: {name: cfg}
    - secretRef: {name: sec}
    - configMapRef: {name: absent, optional: true}
    env:
    - {name: LITERAL, value: x}
    - {name: SEQ, value: "$(LITERAL)-y"}
    - {name: FWD, value: "$(LATER)"}
    - {name: LATER, value: z}
    - {name: ESC, value: "$$(LITERAL)"}
    - {name: FROM_CFG, value: "$(CFG_A)"}
    - {name: CFG_B, value: overridden}
    - {name: EMPTY}
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: OWNER, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['example.com/owner']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: CPU_MILLIS, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: CPUS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: TOKEN_COPY, valueFrom: {secretKeyRef: {name: sec, key: TOKEN}}}
    - {name: B_COPY, valueFrom: {configMapKeyRef: {name: cfg, key: B}}}
    - {name: OPTIONAL, valueFrom: {configMapKeyRef: {name: cfg, key: nope, optional: true}}}
    - {name: OPTIONAL_CM, valueFrom: {secretKeyRef: {name: nope, key: k, optional: true}}}
`

func envPlan(t *testing.T, src string) *Plan {
	t.Helper()
	m, err := Load([]byte(src), "env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plans()
	if err != nil {
		t.Fatal(err)
	}
	return plans[0]
}

var testRuntime = RuntimeInfo{
	PodIP: "10.88.0.7", PodIPs: []string{"10.88.0.7", "fd00::7"}, HostIP: "192.168.1.10",
	NodeName: "node-1", NodeAllocatable: rl("cpu=4", "memory=8Gi", "ephemeral-storage=100Gi"),
}

func TestPodEnv(t *testing.T) {
	p := envPlan(t, envManifest)
	got, err := p.PodEnv(&p.Pod.Spec.Containers[0], testRuntime)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CFG_A=1", "CFG_B=overridden", "TOKEN=t0k3n", // envFrom first; env overrides in place
		"LITERAL=x", "SEQ=x-y", "FWD=$(LATER)", "LATER=z", "ESC=$(LITERAL)", "FROM_CFG=1", "EMPTY=",
		"POD=web", "NS=ci", "APP=web", "OWNER=team-a", "NODE=node-1", "SA=builder",
		"POD_IP=10.88.0.7", "POD_IPS=10.88.0.7,fd00::7", "HOST_IP=192.168.1.10",
		"CPU_MILLIS=250", "CPUS=1", "MEM_MI=100", "TOKEN_COPY=t0k3n", "B_COPY=2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PodEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestContainerEnvMergesImageEnv(t *testing.T) {
	p := envPlan(t, podHead+`  - name: app
    image: busybox
    env:
    - {name: LANG, value: C.UTF-8}
    - {name: PATH, value: /opt/bin:/bin}
    - {name: NEW, value: "$(LANG)-$(HOME)"}
`)
	c := &p.Pod.Spec.Containers[0]
	tests := []struct {
		name     string
		imageEnv []string
		want     []string
	}{
		{
			name: "no image env",
			want: []string{"PATH=/opt/bin:/bin", "HOSTNAME=p", "LANG=C.UTF-8", "NEW=C.UTF-8-$(HOME)"},
		},
		{
			name:     "pod env overrides image env; image env is not used for expansion",
			imageEnv: []string{"PATH=/usr/bin", "LANG=en_US", "HOME=/root"},
			want:     []string{"PATH=/opt/bin:/bin", "HOSTNAME=p", "HOME=/root", "LANG=C.UTF-8", "NEW=C.UTF-8-$(HOME)"},
		},
		{
			name:     "image entry without = unsets a default",
			imageEnv: []string{"HOSTNAME", "X=1"},
			want:     []string{"PATH=/opt/bin:/bin", "X=1", "LANG=C.UTF-8", "NEW=C.UTF-8-$(HOME)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.ContainerEnv(c, tt.imageEnv, testRuntime)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ContainerEnv =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestContainerEnvHostnames(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"pod name", &corev1.Pod{ObjectMeta: objMeta("web")}, "HOSTNAME=web"},
		{"spec.hostname", &corev1.Pod{ObjectMeta: objMeta("web"), Spec: corev1.PodSpec{Hostname: "db-0"}}, "HOSTNAME=db-0"},
		{"long name cut to 63 without trailing dash", &corev1.Pod{ObjectMeta: objMeta(long)}, "HOSTNAME=" + strings.Repeat("a", 62)},
		{"hostnameOverride wins over spec.hostname", &corev1.Pod{ObjectMeta: objMeta("web"), Spec: corev1.PodSpec{Hostname: "db-0", Subdomain: "s", HostnameOverride: ptr("override.example.host")}}, "HOSTNAME=override.example.host"},
		{"hostnameOverride of 64 bytes cut to 63", &corev1.Pod{ObjectMeta: objMeta("web"), Spec: corev1.PodSpec{HostnameOverride: ptr(strings.Repeat("a", 62) + ".b")}}, "HOSTNAME=" + strings.Repeat("a", 62)},
		{"host network uses the node name", &corev1.Pod{ObjectMeta: objMeta("web"), Spec: corev1.PodSpec{HostNetwork: true}}, "HOSTNAME=node-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Pod: tt.pod}
			env, err := p.ContainerEnv(&corev1.Container{Name: "c"}, nil, testRuntime)
			if err != nil {
				t.Fatal(err)
			}
			if len(env) != 2 || env[0] != DefaultPathEnv || env[1] != tt.want {
				t.Errorf("ContainerEnv = %q, want [%s %s]", env, DefaultPathEnv, tt.want)
			}
		})
	}
}

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func TestPodEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		env  string
		want string
	}{
		{"missing configmap key", `    env: [{name: X, valueFrom: {configMapKeyRef: {name: cfg, key: nope}}}]`,
			`couldn't find key nope in ConfigMap default/cfg`},
		{"missing configmap", `    env: [{name: X, valueFrom: {configMapKeyRef: {name: other, key: A}}}]`,
			`configmap "other" not found`},
		{"missing secret key", `    env: [{name: X, valueFrom: {secretKeyRef: {name: sec, key: nope}}}]`,
			`couldn't find key nope in Secret default/sec`},
		{"missing secret", `    env: [{name: X, valueFrom: {secretKeyRef: {name: other, key: A}}}]`,
			`secret "other" not found`},
		{"missing envFrom configmap", `    envFrom: [{configMapRef: {name: other}}]`,
			`configmap "other" not found`},
		{"missing envFrom secret", `    envFrom: [{secretRef: {name: other}}]`,
			`secret "other" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := envPlan(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {A: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {A: "1"}
---
`+podHead+"  - name: app\n    image: busybox\n"+tt.env+"\n")
			_, err := p.ContainerEnv(&p.Pod.Spec.Containers[0], nil, testRuntime)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ContainerEnv error = %v, want %s", err, tt.want)
			}
			if len(p.Warnings) == 0 {
				t.Error("the plan has no warning about the missing reference")
			}
		})
	}
}

func TestPodEnvSkipsInvalidNames(t *testing.T) {
	// Keys the kubelet cannot use as names are skipped (a ConfigMap from the
	// manifest is validated, so this one is built by hand).
	p := &Plan{
		Pod:        &corev1.Pod{ObjectMeta: objMeta("p")},
		ConfigMaps: map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"OK": "1", "NOT=OK": "2", "": "3"}}},
	}
	c := &corev1.Container{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
	got, err := p.PodEnv(c, testRuntime)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"OK=1"}) {
		t.Errorf("PodEnv = %q, want [OK=1]", got)
	}
}

func TestFieldRefValue(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ci", UID: types.UID("1234-abcd"),
			Labels:      map[string]string{"b": "2", "a": "x\"y"},
			Annotations: map[string]string{"Example.com/Owner": "team"}},
		Spec: corev1.PodSpec{NodeName: "scheduled-node", ServiceAccountName: "sa"},
	}
	tests := []struct {
		path    string
		rt      RuntimeInfo
		want    string
		wantErr string
	}{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "ci"},
		{path: "metadata.uid", want: "1234-abcd"},
		{path: "metadata.labels", want: "a=\"x\\\"y\"\nb=\"2\""},
		{path: "metadata.annotations", want: "Example.com/Owner=\"team\""},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['Example.com/Owner']", want: "team"},
		{path: "metadata.labels['a b']", wantErr: "invalid key subscript in metadata.labels['a b']"},
		{path: "metadata.name['x']", wantErr: `fieldPath "metadata.name['x']" does not support subscript`},
		{path: "spec.nodeName", rt: RuntimeInfo{NodeName: "node-1"}, want: "node-1"},
		{path: "spec.nodeName", want: "scheduled-node"},
		{path: "spec.host", rt: RuntimeInfo{NodeName: "node-1"}, want: "node-1"},
		{path: "spec.serviceAccountName", want: "sa"},
		{path: "status.podIP", rt: RuntimeInfo{PodIP: "10.0.0.1"}, want: "10.0.0.1"},
		{path: "status.podIP", rt: RuntimeInfo{PodIP: "10.0.0.1", PodIPs: []string{"fd00::1", "10.0.0.1"}}, want: "fd00::1"},
		{path: "status.podIPs", rt: RuntimeInfo{PodIP: "10.0.0.1"}, want: "10.0.0.1"},
		{path: "status.podIP", want: ""},
		{path: "status.hostIP", rt: RuntimeInfo{HostIP: "192.168.0.2"}, want: "192.168.0.2"},
		{path: "status.hostIPs", rt: RuntimeInfo{HostIP: "192.168.0.2", HostIPs: []string{"192.168.0.2", "fd00::2"}}, want: "192.168.0.2,fd00::2"},
		{path: "status.hostIP", wantErr: "resolving status.hostIP: the host IP is not known"},
		{path: "spec.restartPolicy", wantErr: "unsupported fieldPath: spec.restartPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := FieldRefValue(pod, tt.path, tt.rt)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("FieldRefValue = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FieldRefValue = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestResourceFieldRefValue(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{ctr("init", rl("cpu=1500m"), rl("cpu=1500m"))},
		Containers: []corev1.Container{
			ctr("app", rl("cpu=250m", "memory=64Mi", "ephemeral-storage=1Gi", "hugepages-2Mi=4Mi"),
				rl("cpu=500m", "memory=100Mi", "hugepages-2Mi=4Mi")),
			ctr("bare", nil, rl("cpu=0")),
		},
	}}
	app, bare := &pod.Spec.Containers[0], &pod.Spec.Containers[1]
	q := resource.MustParse
	tests := []struct {
		name     string
		c        *corev1.Container
		ref      corev1.ResourceFieldSelector
		want     string
		wantErr  bool
		noAlloct bool
	}{
		{name: "cpu limit in cores, rounded up", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "1"},
		{name: "cpu limit in millicores", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: q("1m")}, want: "500"},
		{name: "cpu request", c: app, ref: corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: q("1m")}, want: "250"},
		{name: "memory limit in bytes", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.memory"}, want: "104857600"},
		{name: "memory limit in Mi", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Mi")}, want: "100"},
		{name: "memory limit in Gi rounds up", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Gi")}, want: "1"},
		{name: "memory request in k", c: app, ref: corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: q("1k")}, want: "67109"},
		{name: "missing ephemeral-storage limit is node allocatable", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: q("1Gi")}, want: "100"},
		{name: "ephemeral-storage request", c: app, ref: corev1.ResourceFieldSelector{Resource: "requests.ephemeral-storage", Divisor: q("1Mi")}, want: "1024"},
		{name: "hugepages limit", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: q("1Mi")}, want: "4"},
		{name: "hugepages request", c: app, ref: corev1.ResourceFieldSelector{Resource: "requests.hugepages-2Mi"}, want: "4194304"},
		{name: "zero cpu limit is node allocatable", c: bare, ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "4"},
		{name: "missing memory limit is node allocatable", c: bare, ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Gi")}, want: "8"},
		{name: "missing request is zero", c: bare, ref: corev1.ResourceFieldSelector{Resource: "requests.memory"}, want: "0"},
		{name: "missing limit without allocatable is zero", c: bare, ref: corev1.ResourceFieldSelector{Resource: "limits.memory"}, want: "0", noAlloct: true},
		{name: "another container by name", c: bare, ref: corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: q("1m")}, want: "500"},
		{name: "an init container by name", c: bare, ref: corev1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.cpu"}, want: "2"},
		{name: "unknown container", c: bare, ref: corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, wantErr: true},
		{name: "unknown resource", c: app, ref: corev1.ResourceFieldSelector{Resource: "limits.gpu"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := testRuntime
			if tt.noAlloct {
				rt.NodeAllocatable = nil
			}
			got, err := ResourceFieldRefValue(pod, tt.c, &tt.ref, rt)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ResourceFieldRefValue = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ResourceFieldRefValue = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, ok := app.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		t.Error("ResourceFieldRefValue changed the container's limits")
	}
}
