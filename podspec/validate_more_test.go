//go:build !podrun_lean

package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// More cases after pkg/apis/core/validation/validation_test.go: projected
// volumes, scheduling fields, operating systems, security annotations.
func TestValidateMore(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{name: "projected volume sources", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}}},
				{Secret: &corev1.SecretProjection{Items: []corev1.KeyToPath{{Key: "k", Path: "same"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "/abs", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
			}}}}}
		}, want: []string{
			`spec.volumes[0].projected.sources[1].secret.name: Required value`,
			`spec.volumes[0].projected: Invalid value: "": conflicting duplicate paths`,
			`spec.volumes[0].projected.sources[2].downwardAPI.path: Invalid value: "/abs": must be a relative path`,
			`spec.volumes[0].projected.sources[2]: Forbidden: may not specify more than 1 volume type per source`,
		}},
		{name: "service account tokens need a service account", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(60))}}}}}}}
		}, want: []string{
			`spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`,
			`spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set`,
			`spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: not supported by podrun: needs the API server`,
		}},
		{name: "volume devices need a claim", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
		}, want: []string{
			`spec.containers[0].volumeDevices[0].name: Invalid value: "data": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`,
			`spec.containers[0].volumeDevices: Forbidden: not supported by podrun: raw block devices are not supported (claims are host directories)`,
		}},
		{name: "recursive read-only mounts", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d", RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}}
		}, want: []string{`spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true`}},
		{name: "affinity terms", mutate: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}},
						MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.uid", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}},
					}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 101}},
				},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MatchLabelKeys: []string{"app"},
				}}},
			}
		}, want: []string{
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key`,
			`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty`,
			`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must consist of alphanumeric characters...`,
		}},
		{name: "topology spread constraints", mutate: func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Maybe", MinDomains: ptr(int32(2))}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c}
		}, want: []string{
			`spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero`,
			`spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"`,
			`spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, Maybe}"`,
			`spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not Maybe`,
			`spec.topologySpreadConstraints[1].maxSkew: Invalid value: 0: must be greater than zero`,
			`spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"`,
			`spec.topologySpreadConstraints[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not Maybe`,
		}},
		{name: "windows options on a linux pod", mutate: func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`a\b\c`)}}
		}, want: []string{
			`spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash`,
			`spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod`,
		}},
		{name: "linux fields on a windows pod", mutate: func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.HostPID = true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1000))}
		}, want: []string{
			`spec.hostPID: Forbidden: cannot be set for a windows pod`,
			`spec.containers[0].securityContext.runAsUser: Forbidden: cannot be set for a windows pod`,
			`spec.os.name: Forbidden: not supported by podrun: podrun runs Linux containers`,
		}},
		{name: "unknown operating system", mutate: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} },
			want: []string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{name: "seccomp and apparmor annotations", mutate: func(p *corev1.Pod) {
			p.Annotations = map[string]string{
				corev1.SeccompPodAnnotationKey:                                     "localhost/../x",
				corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "nope": "runtime/default",
				corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app":  "weird",
				corev1.SeccompContainerAnnotationKeyPrefix + "app":                 "unconfined", // valid, but not RuntimeDefault
			}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}, want: []string{
			`metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: "../x": must not contain '..'`,
			`metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: Invalid value: "weird": invalid AppArmor profile name: "weird"`,
			`metadata.annotations[container.apparmor.security.beta.kubernetes.io/nope]: Invalid value: "nope": container not found`,
			`spec.containers[0].securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match`,
		}},
		{name: "sysctls", mutate: func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced"}, {Name: "kernel.shm_rmid_forced"}, {Name: "Bad"}, {Name: ""}}}
		}, want: []string{
			`spec.securityContext.sysctls[0].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`,
			`spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shm_rmid_forced"`,
			`spec.securityContext.sysctls[1].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`,
			`spec.securityContext.sysctls[2].name: Invalid value: "Bad": must have at most 253 characters and match regex...`,
			`spec.securityContext.sysctls[3].name: Required value`,
		}},
		{name: "user namespaces", mutate: func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.HostNetwork = true
		}, want: []string{
			"spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false",
		}},
		{name: "user namespaces with what podrun cannot give them", mutate: func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.ShareProcessNamespace = ptr(true)
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
		}, want: []string{
			`spec.shareProcessNamespace: Forbidden: not supported by podrun: a shared PID namespace with hostUsers: false`,
			`spec.securityContext.sysctls: Forbidden: not supported by podrun: sysctls with hostUsers: false`,
		}},
		{name: "resource claims", mutate: func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr("gpu-claim")}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}, {Name: "other"}}
		}, want: []string{
			`spec.containers[0].resources.claims[1]: Not found: "other": must be one of the names in pod.spec.resourceClaims: gpu`,
			`spec.resourceClaims: Forbidden: not supported by podrun: dynamic resource allocation needs a cluster`,
			`spec.containers[0].resources.claims: Forbidden: not supported by podrun: dynamic resource allocation needs a cluster`,
		}},
		{name: "pod-level resources", mutate: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("cpu=1", "ephemeral-storage=1Gi")}
		}, want: []string{
			`spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`,
		}},
		{name: "pod-level resources below the containers'", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu=2"), Limits: rl("memory=1Gi")}
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=1"), Limits: rl("cpu=4", "memory=512Mi")}
		}, want: []string{
			// The pod's memory request defaults to the container's (1Gi).
			`spec.resources.requests: Invalid value: "1Gi": must be less than or equal to memory limit of 512Mi`,
			`spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 2`,
			`spec.resources.limits[memory]: Invalid value: "1Gi": must be less than or equal to pod limits of 512Mi`,
		}},
		{name: "pod-level hugepages", mutate: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("memory=1Gi", "hugepages-2Mi=2Mi"), Limits: rl("memory=1Gi", "hugepages-2Mi=2Mi")}
		}, want: []string{
			`spec.resources.requests: Forbidden: not supported by podrun: pod-level hugepages are not supported; set them on the containers`,
			`spec.resources.limits: Forbidden: not supported by podrun: pod-level hugepages are not supported; set them on the containers`,
		}},
		{name: "scheduling gates", mutate: func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}, {Name: "example.com/gate"}}
			p.Spec.NodeName = "node-1"
		}, want: []string{
			`spec.schedulingGates[1]: Duplicate value: "example.com/gate"`,
			`spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared`,
			`spec.schedulingGates: Forbidden: not supported by podrun: there is no scheduler to remove the gates, the pod would never start`,
		}},
		{name: "mirror pod annotation needs a node", mutate: func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x", corev1.TolerationsAnnotationKey: "not json"}
		}, want: []string{
			`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`,
			`metadata.annotations: Invalid value: "scheduler.alpha.kubernetes.io/tolerations": invalid character 'o' in literal null (expecting 'u')`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			tt.mutate(pod)
			SetDefaults(pod)
			var got []string
			for _, e := range Validate(pod) {
				got = append(got, e.Error())
			}
			matchErrors(t, got, tt.want)
		})
	}
}

func TestValidateSecretTypes(t *testing.T) {
	tests := []struct {
		typ  corev1.SecretType
		data map[string][]byte
		ann  map[string]string
		want []string
	}{
		{typ: corev1.SecretTypeOpaque, data: map[string][]byte{"ok": nil}},
		{typ: corev1.SecretTypeDockerConfigJson, data: map[string][]byte{".dockerconfigjson": []byte("{")},
			want: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`}},
		{typ: corev1.SecretTypeDockercfg, want: []string{`data[.dockercfg]: Required value`}},
		{typ: corev1.SecretTypeBasicAuth, want: []string{`data[username]: Required value`, `data[password]: Required value`}},
		{typ: corev1.SecretTypeBasicAuth, data: map[string][]byte{"password": nil}},
		{typ: corev1.SecretTypeSSHAuth, want: []string{`data[ssh-privatekey]: Required value`}},
		{typ: corev1.SecretTypeServiceAccountToken, want: []string{`metadata.annotations[kubernetes.io/service-account.name]: Required value`}},
		{typ: corev1.SecretTypeServiceAccountToken, ann: map[string]string{corev1.ServiceAccountNameKey: "sa"}},
		{typ: "example.com/custom", data: map[string][]byte{"bad/key": nil}, want: []string{`data[bad/key]: Invalid value: "bad/key": a valid config key...`}},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Annotations: tt.ann}, Type: tt.typ, Data: tt.data}
			var got []string
			for _, e := range ValidateSecret(s) {
				got = append(got, e.Error())
			}
			matchErrors(t, got, tt.want)
		})
	}
}

func TestValidateConfigMapSize(t *testing.T) {
	big := make([]byte, maxSecretSize)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Data: map[string]string{"a": "x"}, BinaryData: map[string][]byte{"a": nil, "b": big}}
	var got []string
	for _, e := range ValidateConfigMap(cm) {
		got = append(got, e.Error())
	}
	want := []string{`data[a]: Invalid value: "a": duplicate of key present in binaryData`, field.TooLong(field.NewPath(""), "", maxSecretSize).Error()}
	matchErrors(t, got, want)
}
