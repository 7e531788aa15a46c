//go:build !podrun_lean

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func ptr[T any](v T) *T { return &v }

func execProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
}

func volumeMount(name, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: path}
}

func emptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

const (
	dns1123Label     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	dns1123Subdomain = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	envFieldPaths    = `supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`
)

// matchErrors compares error strings; a want ending in "..." is a prefix,
// one starting with "~" a substring.
func matchErrors(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range got {
		w := want[i]
		switch {
		case strings.HasSuffix(w, "..."):
			if !strings.HasPrefix(got[i], strings.TrimSuffix(w, "...")) {
				t.Errorf("error %d = %q, want prefix %q", i, got[i], strings.TrimSuffix(w, "..."))
			}
		case strings.HasPrefix(w, "~"):
			if !strings.Contains(got[i], w[1:]) {
				t.Errorf("error %d = %q, want it to contain %q", i, got[i], w[1:])
			}
		case got[i] != w:
			t.Errorf("error %d = %q, want %q", i, got[i], w)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(p *corev1.Pod)
		noDefaults bool
		want       []string
	}{
		{name: "valid pod", mutate: func(p *corev1.Pod) {}},

		// Names.
		{name: "pod name must be a DNS subdomain", mutate: func(p *corev1.Pod) { p.Name = "Bad_Name" },
			want: []string{`metadata.name: Invalid value: "Bad_Name": ` + dns1123Subdomain}},
		{name: "pod name is required", mutate: func(p *corev1.Pod) { p.Name = "" },
			want: []string{`metadata.name: Required value: name or generateName is required`}},
		{name: "container name must be a DNS label", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App" },
			want: []string{`spec.containers[0].name: Invalid value: "App": ` + dns1123Label}},
		{name: "container name is required", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			want: []string{`spec.containers[0].name: Required value`}},
		{name: "container names unique among app containers", mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "app", Image: "busybox"})
		}, want: []string{`spec.containers[1].name: Duplicate value: "app"`}},
		{name: "container names unique across init and app containers", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}, {Name: "app", Image: "busybox"}, {Name: "init", Image: "busybox"}}
		}, want: []string{`spec.initContainers[1].name: Duplicate value: "app"`, `spec.initContainers[2].name: Duplicate value: "init"`}},
		{name: "at least one app container", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
		}, want: []string{`spec.containers: Required value`}},

		// Images.
		{name: "image is required", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			want: []string{`spec.containers[0].image: Required value`}},
		{name: "image without surrounding spaces", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox " },
			want: []string{`spec.containers[0].image: Invalid value: "busybox ": must not have leading or trailing whitespace`}},
		{name: "image pull policy values", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			want: []string{`spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`}},
		{name: "termination message policy values", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Never" },
			want: []string{`spec.containers[0].terminationMessagePolicy: Unsupported value: "Never": supported values: "File", "FallbackToLogsOnError"`}},

		// Ports.
		{name: "port numbers", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 0}, {ContainerPort: 65536}, {ContainerPort: 80, HostPort: 70000}, {ContainerPort: 81, HostPort: 65535}}
		}, want: []string{
			`spec.containers[0].ports[0].containerPort: Required value`,
			`spec.containers[0].ports[1].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive`,
			`spec.containers[0].ports[2].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		}},
		{name: "port names are IANA service names, unique", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "http", ContainerPort: 81},
				{Name: "a_b", ContainerPort: 82}, {Name: "a-very-long-port-name", ContainerPort: 83}, {Name: "8080", ContainerPort: 84}}
		}, want: []string{
			`spec.containers[0].ports[1].name: Duplicate value: "http"`,
			`spec.containers[0].ports[2].name: Invalid value: "a_b": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			`spec.containers[0].ports[3].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters`,
			`spec.containers[0].ports[4].name: Invalid value: "8080": must contain at least one letter (a-z)`,
		}},
		{name: "port protocols", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "ICMP"}, {ContainerPort: 81, Protocol: corev1.ProtocolSCTP}}
		}, want: []string{`spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`}},
		{name: "host ports conflict across app containers", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolUDP}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "busybox",
				Ports: []corev1.ContainerPort{{ContainerPort: 82, HostPort: 8080}, {ContainerPort: 83, HostPort: 8080, HostIP: "127.0.0.1"}}})
		}, want: []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`}},
		{name: "host ports of init containers are checked one by one", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "i1", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}},
				{Name: "i2", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 8080}}},
			}
			// The API server checks each init container as a list of one, so
			// the path names index 0 whichever init container it is.
		}, want: []string{`spec.initContainers[0].ports[1].hostPort: Duplicate value: "TCP//8080"`}},
		{name: "host network needs host port equal to container port", mutate: func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 9090}}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 82, HostPort: 9091}}}}
		}, want: []string{"spec.containers[0].ports[1].hostPort: Invalid value: 9090: must match `containerPort` when `hostNetwork` is true"}},

		// Environment.
		{name: "env names", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: ""}, {Name: "A=B"}, {Name: "1-my.var"}, {Name: "naïve"}}
		}, want: []string{
			`spec.containers[0].env[0].name: Required value`,
			`spec.containers[0].env[1].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			`spec.containers[0].env[3].name: Invalid value: "naïve": a valid environment variable name must consist only of printable ASCII characters other than '='`,
		}},
		{name: "env valueFrom needs exactly one source", mutate: func(p *corev1.Pod) {
			cm := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "NONE", ValueFrom: &corev1.EnvVarSource{}},
				{Name: "TWO", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cm, SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
				{Name: "BOTH", Value: "x", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cm}},
			}
		}, want: []string{
			"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
			"spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
			"spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
		}},
		{name: "env fileKeyRef fields", mutate: func(p *corev1.Pod) {
			ref := func(vol, path, key string) *corev1.EnvVarSource {
				return &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: vol, Path: path, Key: key}}
			}
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("config")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{volumeMount("config", "/data")}
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "OK", ValueFrom: ref("config", "config.env", "A.b-c")},
				{Name: "ABS", ValueFrom: ref("config", "/dir/config.env", "K")}, // only ".." is checked
				{Name: "NOKEY", ValueFrom: ref("config", "config.env", "")},
				{Name: "BADKEY", ValueFrom: ref("config", "config.env", "A=B")},
				{Name: "NOVOL", ValueFrom: ref("", "config.env", "K")},
				{Name: "BADVOL", ValueFrom: ref("Config", "config.env", "K")},
				{Name: "NOPATH", ValueFrom: ref("config", "", "K")},
				{Name: "UP", ValueFrom: ref("config", "../config.env", "K")},
				{Name: "TWO", ValueFrom: &corev1.EnvVarSource{FileKeyRef: ref("config", "c.env", "K").FileKeyRef, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			}
		}, want: []string{
			`spec.containers[0].env[2].valueFrom.fileKeyRef.key: Required value`,
			`spec.containers[0].env[3].valueFrom.fileKeyRef.key: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			`spec.containers[0].env[4].valueFrom.fileKeyRef.volumeName: Required value`,
			`spec.containers[0].env[5].valueFrom.fileKeyRef.volumeName: Invalid value: "Config": ` + dns1123Label,
			`spec.containers[0].env[6].valueFrom.fileKeyRef.path: Required value`,
			`spec.containers[0].env[7].valueFrom.fileKeyRef.path: Invalid value: "../config.env": must not contain '..'`,
			`spec.containers[0].env[8].valueFrom: Invalid value: "": may not have more than one field specified at a time`,
			// validateFileKeyRefVolumes, ValidatePodSpec's last check.
			`spec.containers[0].env[4].valueFrom.fileKeyRef.volumeName: Not found: ""`,
			`spec.containers[0].env[5].valueFrom.fileKeyRef.volumeName: Not found: "Config"`,
		}},
		{name: "env fileKeyRef volumes must be the pod's emptyDirs", mutate: func(p *corev1.Pod) {
			// The e2e tests' "volumeName does not exist", "volume is not
			// emptyDir" and "initContainer ... from non-emptyDir volume".
			ref := func(vol string) []corev1.EnvVar {
				return []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: vol, Path: "config.env", Key: "K"}}}}
			}
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("config"),
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
				{Name: "memory", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
			}
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Env: ref("host")}, {Name: "ok", Image: "busybox", Env: ref("memory")}}
			p.Spec.Containers[0].Env = append(ref("nonexistent-volume"), ref("secret")...)
			p.Spec.Containers[0].Env[1].Name = "W"
		}, want: []string{
			`spec.initContainers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "host": referenced volume must be of type emptyDir`,
			`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "nonexistent-volume"`,
			`spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Invalid value: "secret": referenced volume must be of type emptyDir`,
		}},
		{name: "env fieldRef paths", mutate: func(p *corev1.Pod) {
			ref := func(path string) *corev1.EnvVarSource {
				return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
			}
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "OK", ValueFrom: ref("status.podIPs")},
				{Name: "LABEL", ValueFrom: ref("metadata.labels['app.kubernetes.io/name']")},
				{Name: "LABELS", ValueFrom: ref("metadata.labels")},
				{Name: "PHASE", ValueFrom: ref("status.phase")},
				{Name: "BAD", ValueFrom: ref("spec.containers")},
				{Name: "BADKEY", ValueFrom: ref("metadata.labels['a b']")},
			}
		}, want: []string{
			`spec.containers[0].env[2].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels": ` + envFieldPaths,
			`spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": ` + envFieldPaths,
			`spec.containers[0].env[4].valueFrom.fieldRef.fieldPath: Invalid value: "spec.containers": error converting fieldPath: field label not supported: spec.containers`,
			`spec.containers[0].env[5].valueFrom.fieldRef: Invalid value: "a b": name part must consist of alphanumeric characters...`,
		}},
		{name: "env resourceFieldRef", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "GPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("2m")}}},
				{Name: "HP", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}}},
			}
		}, want: []string{
			`spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
			`spec.containers[0].env[1].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
		}},
		{name: "env key references", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "bad key"}}},
			}
		}, want: []string{
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.name: Invalid value: "": ` + dns1123Subdomain,
			`spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
		}},
		{name: "envFrom", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
				{Prefix: "A=", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
				{},
			}
		}, want: []string{
			`spec.containers[0].envFrom[0].prefix: Invalid value: "A=": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			"spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
		}},

		// Volumes and mounts.
		{name: "volume names are unique DNS labels", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data"), emptyDirVolume("data"), emptyDirVolume("Data"), emptyDirVolume("")}
		}, want: []string{
			`spec.volumes[1].name: Duplicate value: "data"`,
			`spec.volumes[2].name: Invalid value: "Data": ` + dns1123Label,
			`spec.volumes[3].name: Required value`,
		}},
		{name: "exactly one volume source", mutate: func(p *corev1.Pod) {
			v := emptyDirVolume("two")
			v.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"}
			p.Spec.Volumes = []corev1.Volume{v, {Name: "none"}}
		}, noDefaults: true, want: []string{
			// Without defaults, the fields the API server defaults are missing too.
			`spec.terminationGracePeriodSeconds: Required value`,
			`spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type`,
			`spec.volumes[1]: Required value: must specify a volume type`,
			`spec.containers[0].terminationMessagePolicy: Required value`,
			`spec.containers[0].imagePullPolicy: Required value`,
			`spec.restartPolicy: Required value`,
			`spec.dnsPolicy: Required value`,
		}},
		{name: "volume sources", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr(int32(01000))}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "k", Path: "../x"}}}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x", Type: ptr(corev1.HostPathType("Weird"))}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("-1"))}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}}},
			}
		}, want: []string{
			`spec.volumes[0].configMap.name: Required value`,
			`spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`,
			`spec.volumes[1].secret.secretName: Required value`,
			`spec.volumes[1].secret.items[0].path: Invalid value: "../x": must not contain '..'`,
			`spec.volumes[2].hostPath.type: Unsupported value: "Weird": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`,
			`spec.volumes[3].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity`,
			`spec.volumes[4].downwardAPI.resourceFieldRef.containerName: Required value`,
		}},
		{name: "mounts name a defined volume at a unique path", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data"), {Name: "Bad", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{volumeMount("data", "/data"), volumeMount("nope", "/data"), volumeMount("Bad", "/bad"), volumeMount("data", "")}
		}, want: []string{
			`spec.volumes[1].name: Invalid value: "Bad": ` + dns1123Label,
			`spec.containers[0].volumeMounts[1].name: Not found: "nope"`,
			`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`,
			`spec.containers[0].volumeMounts[2].name: Not found: "Bad"`,
			`spec.containers[0].volumeMounts[3].mountPath: Required value`,
		}},
		{name: "subPath is relative without ..", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "data", MountPath: "/a", SubPath: "../etc"}, {Name: "data", MountPath: "/b", SubPath: "/etc"}, {Name: "data", MountPath: "/c", SubPath: "x/y"},
				{Name: "data", MountPath: "/d", SubPath: "x", SubPathExpr: "$(POD)"},
			}
		}, want: []string{
			`spec.containers[0].volumeMounts.subPath: Invalid value: "../etc": must not contain '..'`,
			`spec.containers[0].volumeMounts.subPath: Invalid value: "/etc": must be a relative path`,
			`spec.containers[0].volumeMounts[3].subPathExpr: Invalid value: "$(POD)": subPathExpr and subPath are mutually exclusive`,
		}},
		{name: "bidirectional propagation needs privilege", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/a", MountPropagation: ptr(corev1.MountPropagationBidirectional)}}
		}, want: []string{`spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers`}},

		// Image volumes (validateImageVolumeSource, ValidateVolumeMounts).
		{name: "image volume mounted with subPath, subPathExpr, readOnly and recursiveReadOnly", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox:1.28", PullPolicy: corev1.PullNever}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "img", MountPath: "/a"}, {Name: "img", MountPath: "/b", SubPath: "etc"}, {Name: "img", MountPath: "/c", SubPathExpr: "$(POD)"},
				{Name: "img", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyIfPossible)},
				{Name: "img", MountPath: "/e", MountPropagation: ptr(corev1.MountPropagationHostToContainer)},
			}
		}},
		{name: "image volume source", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: "Sometimes"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, Image: &corev1.ImageVolumeSource{Reference: "busybox"}}},
			}
		}, want: []string{
			`spec.volumes[0].image.reference: Required value`,
			`spec.volumes[1].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
			`spec.volumes[2].image: Forbidden: may not specify more than 1 volume type`,
		}},
		{name: "image volume mounts take no bindMountOptions", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox:1.28"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/a", BindMountOptions: []string{"noexec"}}}
		}, want: []string{`spec.containers[0].volumeMounts[0].bindMountOptions: Invalid value: ["noexec"]: bindMountOptions may not be used with image volumes`}},

		// Restart policies, init containers and sidecars.
		{name: "pod restartPolicy values", mutate: func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			want: []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{name: "container restart policies and rules (ContainerRestartRules)", mutate: func(p *corev1.Pod) {
			in42 := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "i", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyOnFailure)},
				{Name: "s", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), RestartPolicyRules: in42},
				{Name: "bad", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicy("Sometimes"))},
			}
			p.Spec.Containers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = append(in42, corev1.ContainerRestartRule{Action: "Stop"},
				corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "Between"}})
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "nopolicy", Image: "busybox", RestartPolicyRules: in42})
		}, want: []string{
			`spec.containers[0].restartPolicyRules[1].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"`,
			`spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified`,
			`spec.containers[0].restartPolicyRules[2].exitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn"`,
			`spec.containers[1].restartPolicy: Required value: must specify restartPolicy when restart rules are used`,
			`spec.initContainers[2].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
		}},
		{name: "probes and lifecycle forbidden on plain init containers", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i0", Image: "busybox"}, {Name: "i1", Image: "busybox",
				LivenessProbe: execProbe(), ReadinessProbe: execProbe(), StartupProbe: execProbe(),
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}, want: []string{
			`spec.initContainers[1].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[1].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[1].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[1].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
		}},
		{name: "sidecars may have probes and lifecycle, which are validated", mutate: func(p *corev1.Pod) {
			lp := execProbe()
			lp.SuccessThreshold = 2
			p.Spec.InitContainers = []corev1.Container{{Name: "s", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
				LivenessProbe: lp, ReadinessProbe: execProbe(), StartupProbe: execProbe(),
				Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}, want: []string{`spec.initContainers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`}},

		// Probes.
		{name: "probe handlers", mutate: func(p *corev1.Pod) {
			two := execProbe()
			two.HTTPGet = &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
			p.Spec.Containers[0].ReadinessProbe = two
			p.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}
		}, want: []string{
			`spec.containers[0].livenessProbe: Required value: must specify a handler type`,
			`spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type`,
			`spec.containers[0].startupProbe.exec.command: Required value`,
		}},
		{name: "probe thresholds", mutate: func(p *corev1.Pod) {
			lp, rp, sp := execProbe(), execProbe(), execProbe()
			lp.SuccessThreshold, rp.SuccessThreshold, sp.SuccessThreshold = 2, 2, 3
			rp.PeriodSeconds = -1
			rp.TerminationGracePeriodSeconds = ptr(int64(5))
			lp.TerminationGracePeriodSeconds = ptr(int64(0))
			p.Spec.Containers[0].LivenessProbe, p.Spec.Containers[0].ReadinessProbe, p.Spec.Containers[0].StartupProbe = lp, rp, sp
		}, want: []string{
			`spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0`,
			`spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`,
			`spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`,
			`spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes`,
			`spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1`,
		}},
		{name: "probe ports", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP"}}}
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("Web")}}}
			p.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 70000}}}
		}, want: []string{
			`spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
			`spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
			`spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: "Web": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			`spec.containers[0].startupProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		}},
		{name: "sleep action within the grace period", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 40}}}
		}, want: []string{`spec.containers[0].lifecycle.preStop.sleep: Invalid value: 40: must be non-negative and less than terminationGracePeriodSeconds (30)`}},

		// Pod fields.
		{name: "activeDeadlineSeconds is positive", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) },
			want: []string{`spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`}},
		{name: "negative terminationGracePeriodSeconds is accepted", mutate: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }},
		{name: "terminationGracePeriodSeconds is required", mutate: func(p *corev1.Pod) {
			SetDefaults(p)
			p.Spec.TerminationGracePeriodSeconds = nil
		}, noDefaults: true, want: []string{`spec.terminationGracePeriodSeconds: Required value`}},
		{name: "dnsPolicy values", mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			want: []string{`spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{name: "dnsPolicy None needs dnsConfig", mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			want: []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{name: "dnsPolicy None needs a nameserver", mutate: func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"example.com"}}
		}, want: []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		{name: "dnsConfig", mutate: func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "1.2.3"},
				Searches: []string{"my_svc.example.com.", ".", "Bad..Domain"}, Options: []corev1.PodDNSConfigOption{{Name: ""}}}
		}, want: []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","8.8.8.8","9.9.9.9","1.2.3"]: must not have more than 3 nameservers`,
			`spec.dnsConfig.nameservers[3]: Invalid value: "1.2.3": must be a valid IP address...`,
			`spec.dnsConfig.searches[2]: Invalid value: "Bad..Domain": a lowercase RFC 1123 subdomain...`,
			`spec.dnsConfig.options[0]: Required value: must not be empty`,
		}},
		{name: "hostname and subdomain are DNS labels", mutate: func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "Web", "a.b" },
			want: []string{`spec.hostname: Invalid value: "Web": ` + dns1123Label, `spec.subdomain: Invalid value: "a.b": must not contain dots`}},
		// hostnameOverride (validatePodHostName); the e2e's "Not-RFC1123" value.
		{name: "hostnameOverride a DNS subdomain", mutate: func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr("override.example.host") }},
		{name: "hostnameOverride with hostname and subdomain", mutate: func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostnameOverride = "custom-host", "t", ptr("override-host")
		}},
		{name: "hostnameOverride not RFC 1123", mutate: func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr("Not-RFC1123") },
			want: []string{`spec.hostnameOverride: Invalid value: "Not-RFC1123": ` + dns1123Subdomain}},
		{name: "hostnameOverride empty", mutate: func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr("") },
			want: []string{`spec.hostnameOverride: Invalid value: "": ` + dns1123Subdomain}},
		{name: "hostnameOverride with setHostnameAsFQDN", mutate: func(p *corev1.Pod) {
			p.Spec.HostnameOverride, p.Spec.SetHostnameAsFQDN = ptr("override-host"), ptr(true)
		}, want: []string{`spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true`}},
		{name: "hostnameOverride with setHostnameAsFQDN false", mutate: func(p *corev1.Pod) {
			p.Spec.HostnameOverride, p.Spec.SetHostnameAsFQDN = ptr("override-host"), ptr(false)
		}},
		{name: "hostnameOverride with hostNetwork", mutate: func(p *corev1.Pod) {
			p.Spec.HostnameOverride, p.Spec.HostNetwork = ptr("override-host"), true
		}, want: []string{`spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true`}},
		{name: "hostnameOverride of 64 bytes", mutate: func(p *corev1.Pod) {
			p.Spec.HostnameOverride = ptr(strings.Repeat("a", 31) + "." + strings.Repeat("b", 32))
		}},
		{name: "hostnameOverride over 64 bytes", mutate: func(p *corev1.Pod) {
			p.Spec.HostnameOverride = ptr(strings.Repeat("a", 32) + "." + strings.Repeat("b", 32))
		},
			want: []string{`spec.hostnameOverride: Too long: may not be more than 64 bytes`}},
		{name: "serviceAccountName and nodeName", mutate: func(p *corev1.Pod) { p.Spec.ServiceAccountName, p.Spec.NodeName = "SA", "Node_1" },
			want: []string{`spec.serviceAccountName: Invalid value: "SA": ` + dns1123Subdomain, `spec.nodeName: Invalid value: "Node_1": ` + dns1123Subdomain}},
		{name: "labels and annotations", mutate: func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "bad value"}
			p.Annotations = map[string]string{corev1.PodDeletionCost: "007"}
		}, want: []string{
			`metadata.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters...`,
			`metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "007": must be a 32bit integer`,
		}},
		{name: "tolerations", mutate: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}, {Operator: corev1.TolerationOpEqual}}
		}, want: []string{
			"spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
			"spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
		}},
		{name: "node affinity", mutate: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, want: []string{`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term`}},

		// Resources.
		{name: "requests above limits", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu=2"), Limits: rl("cpu=1")}
		}, want: []string{`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`}},
		{name: "resource names and values", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rl("cpu=-1", "foo=1", "pods=1")}
		}, want: []string{
			`spec.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
			`spec.containers[0].resources.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.containers[0].resources.limits[foo]: Invalid value: "foo": must be a standard resource for containers`,
			`spec.containers[0].resources.limits[pods]: Invalid value: "pods": must be a standard resource for containers`,
			`spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
			`spec.containers[0].resources.requests[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`,
			`spec.containers[0].resources.requests[foo]: Invalid value: "foo": must be a standard resource for containers`,
			`spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers`,
		}},
		{name: "extended resources are integers with a limit", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("example.com/gpu=500m")}
		}, want: []string{
			`spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer`,
			`spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`,
		}},
		{name: "hugepages", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: rl("hugepages-2Mi=3Mi")}
		}, want: []string{
			`spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			`spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			`spec.containers[0].resources: Forbidden: HugePages require cpu or memory`,
		}},
		{name: "resize policy with restartPolicy Never", mutate: func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}
		}, want: []string{`spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when ` + "`restartPolicy`" + ` is 'Never'`}},

		// Security contexts.
		{name: "security contexts", mutate: func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(-1)), Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsGroup: ptr(int64(-2)), Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false)}
		}, want: []string{
			`spec.containers[0].securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive`,
			"~spec.containers[0].securityContext: Invalid value: {",
			`spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`,
			`spec.securityContext.sysctls[0].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true`,
		}},
		{name: "seccomp profile", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}, want: []string{`spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost`}},

		// Create-only rules and podrun's unsupported fields.
		{name: "ephemeral containers cannot be set on create", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, want: []string{
			`spec.ephemeralContainers: Forbidden: cannot be set on create`,
		}},
		{name: "persistent volume claims are supported", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}},
		{name: "a claim needs a name", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}}}
		}, want: []string{`spec.volumes[0].persistentVolumeClaim.claimName: Required value`}},
		{name: "windows pods are not supported", mutate: func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		}, want: []string{`spec.os.name: Forbidden: not supported by podrun: podrun runs Linux containers`}},
		{name: "linux pods are", mutate: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} }},
		{name: "relative mount paths are not supported", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{volumeMount("data", "data")}
		}, want: []string{`spec.containers[0].volumeMounts[0].mountPath: Forbidden: not supported by podrun: runc mounts at absolute paths only`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			tt.mutate(pod)
			if !tt.noDefaults {
				SetDefaults(pod)
			}
			var got []string
			for _, e := range Validate(pod) {
				got = append(got, e.Error())
			}
			matchErrors(t, got, tt.want)
		})
	}
}
