//go:build !podrun_lean

package podspec

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func mustLoadPod(t *testing.T, src string) *corev1.Pod {
	t.Helper()
	m, err := Load([]byte(src), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m.Pods[0]
}

func TestSetDefaults(t *testing.T) {
	pod := mustLoadPod(t, `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  serviceAccount: builder
  initContainers:
  - name: init
    image: busybox:1.28
    resources:
      limits: {cpu: 100m, memory: 64Mi}
  containers:
  - name: app
    image: nginx
    ports:
    - containerPort: 80
    env:
    - name: NODE
      valueFrom:
        fieldRef: {fieldPath: spec.nodeName}
    resources:
      limits: {cpu: "0.0001", memory: 1Gi}
      requests: {cpu: 50m}
    livenessProbe:
      httpGet: {port: 80}
    startupProbe:
      grpc: {port: 9000}
    lifecycle:
      preStop:
        httpGet: {port: 80}
  volumes:
  - name: scratch
  - name: cfg
    configMap: {name: cfg}
  - name: sec
    secret: {secretName: sec}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
  - name: proj
    projected:
      sources:
      - configMap: {name: cfg}
  - name: host
    hostPath: {path: /tmp}
`)
	spec := &pod.Spec
	app := &spec.Containers[0]
	init := &spec.InitContainers[0]
	q := resource.MustParse
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", pod.Namespace, "default"},
		{"restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *spec.EnableServiceLinks, true},
		{"securityContext", *spec.SecurityContext, corev1.PodSecurityContext{}},
		{"serviceAccountName from serviceAccount", spec.ServiceAccountName, "builder"},
		{"imagePullPolicy untagged", app.ImagePullPolicy, corev1.PullAlways},
		{"imagePullPolicy tagged", init.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", app.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", app.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", app.Ports[0].Protocol, corev1.ProtocolTCP},
		{"hostPort without hostNetwork", app.Ports[0].HostPort, int32(0)},
		{"fieldRef apiVersion", app.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"app request cpu kept", app.Resources.Requests.Cpu().String(), "50m"},
		{"app request memory from limit", app.Resources.Requests.Memory().String(), "1Gi"},
		{"limit rounded up to milli", app.Resources.Limits.Cpu().String(), "1m"},
		{"init requests from limits", init.Resources.Requests, corev1.ResourceList{"cpu": q("100m"), "memory": q("64Mi")}},
		{"probe timeout", app.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", app.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", app.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", app.LivenessProbe.FailureThreshold, int32(3)},
		{"probe httpGet", *app.LivenessProbe.HTTPGet, corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
		{"grpc service", *app.StartupProbe.GRPC.Service, ""},
		{"lifecycle httpGet", *app.Lifecycle.PreStop.HTTPGet, corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
		{"volume without source is emptyDir", spec.Volumes[0].EmptyDir != nil, true},
		{"configMap defaultMode", *spec.Volumes[1].ConfigMap.DefaultMode, int32(0644)},
		{"secret defaultMode", *spec.Volumes[2].Secret.DefaultMode, int32(0644)},
		{"downwardAPI defaultMode", *spec.Volumes[3].DownwardAPI.DefaultMode, int32(0644)},
		{"downwardAPI fieldRef apiVersion", spec.Volumes[3].DownwardAPI.Items[0].FieldRef.APIVersion, "v1"},
		{"projected defaultMode", *spec.Volumes[4].Projected.DefaultMode, int32(0644)},
		{"hostPath type", *spec.Volumes[5].HostPath.Type, corev1.HostPathUnset},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				if gq, ok := c.got.(corev1.ResourceList); ok && resourceListsEqual(gq, c.want.(corev1.ResourceList)) {
					return
				}
				t.Errorf("got %#v, want %#v", c.got, c.want)
			}
		})
	}

	t.Run("idempotent", func(t *testing.T) {
		again := pod.DeepCopy()
		SetDefaults(again)
		if !reflect.DeepEqual(again, pod) {
			t.Error("SetDefaults changed an already defaulted pod")
		}
	})
}

func resourceListsEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestSetDefaultsHostNetworkPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		HostNetwork:    true,
		InitContainers: []corev1.Container{{Name: "i", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}},
		Containers:     []corev1.Container{{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090, HostPort: 9091}}}},
	}}
	SetDefaults(pod)
	if got := pod.Spec.InitContainers[0].Ports[0].HostPort; got != 53 {
		t.Errorf("init hostPort = %d, want 53", got)
	}
	if got := pod.Spec.Containers[0].Ports[0].HostPort; got != 8080 {
		t.Errorf("hostPort = %d, want 8080", got)
	}
	if got := pod.Spec.Containers[0].Ports[1].HostPort; got != 9091 {
		t.Errorf("explicit hostPort = %d, want 9091 kept", got)
	}
}

func TestImagePullPolicyFor(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"busybox", corev1.PullAlways},
		{"busybox:latest", corev1.PullAlways},
		{"busybox:1.28", corev1.PullIfNotPresent},
		{"docker.io/library/busybox", corev1.PullAlways},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"registry.example.com:5000/team/app:v2", corev1.PullIfNotPresent},
		{"localhost/app:dev", corev1.PullIfNotPresent},
		{"busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		// A tag with a digest: the tag decides, as in the kubelet's parser.
		{"busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
		{"busybox:1.28@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		// References that do not parse get IfNotPresent.
		{"Busybox", corev1.PullIfNotPresent},
		{"busybox@sha256:short", corev1.PullIfNotPresent},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"", corev1.PullIfNotPresent},
		{"bad image", corev1.PullIfNotPresent},
		// An upper-case first element is a registry name.
		{"MyRegistry/app", corev1.PullAlways},
		{"[::1]:5000/app:1", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := ImagePullPolicyFor(tt.image); got != tt.want {
				t.Errorf("ImagePullPolicyFor(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}
