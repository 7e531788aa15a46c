package podspec

import (
	corev1 "k8s.io/api/core/v1"
)

// DefaultNamespace is the namespace of objects that name none, as kubectl's
// default context gives them.
const DefaultNamespace = "default"

// SetDefaults applies the defaults the API server sets on a Pod it creates
// (pkg/apis/core/v1/defaults.go and the generated SetObjectDefaults_Pod),
// plus the namespace kubectl would send. It is idempotent.
func SetDefaults(pod *corev1.Pod) {
	if pod.APIVersion == "" && pod.Kind == "" {
		pod.APIVersion, pod.Kind = "v1", "Pod"
	}
	if pod.Namespace == "" {
		pod.Namespace = DefaultNamespace
	}
	spec := &pod.Spec

	// SetDefaults_Pod: requests default to limits, for app and init containers.
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			defaultRequestsFromLimits(&cs[i].Resources)
		}
	}
	// Pod-level requests after the containers' (defaultPodRequests).
	defaultPodRequests(pod)
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.Containers)
		defaultHostNetworkPorts(spec.InitContainers)
	}

	// SetDefaults_PodSpec.
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// v1 conversion: the deprecated serviceAccount field mirrors serviceAccountName.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpToMilli(spec.Overhead)
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// With host networking a container port is a host port.
func defaultHostNetworkPorts(cs []corev1.Container) {
	for i := range cs {
		for j := range cs[i].Ports {
			if cs[i].Ports[j].HostPort == 0 {
				cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
			}
		}
	}
}

// roundUpToMilli is SetDefaults_ResourceList: quantities are rounded up to
// milli precision.
func roundUpToMilli(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(-3)
		l[name] = q
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = ImagePullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			defaultFieldSelector(vf.FieldRef)
		}
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
			vf.FileKeyRef.Optional = ptrTo(false) // +default=false
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			defaultProbe(p)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		defaultHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptrTo("") // +default=""
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldSelector(f *corev1.ObjectFieldSelector) {
	if f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func defaultMode(m **int32, mode int32) {
	if *m == nil {
		*m = ptrTo(mode)
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		// Like containers, but digests do not matter here: only :latest means Always.
		if imageTag(src.Image.Reference) == "latest" {
			src.Image.PullPolicy = corev1.PullAlways
		} else {
			src.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
	if src.Secret != nil {
		defaultMode(&src.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil {
		defaultMode(&src.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		defaultMode(&src.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range src.DownwardAPI.Items {
			if f := src.DownwardAPI.Items[i].FieldRef; f != nil {
				defaultFieldSelector(f)
			}
		}
	}
	if src.Projected != nil {
		defaultMode(&src.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range src.Projected.Sources {
			s := &src.Projected.Sources[i]
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					if f := s.DownwardAPI.Items[j].FieldRef; f != nil {
						defaultFieldSelector(f)
					}
				}
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				s.ServiceAccountToken.ExpirationSeconds = ptrTo(int64(3600))
			}
		}
	}
	// Declarative defaults of volume types podrun does not support, kept so
	// that a defaulted pod reads as the API server would return it.
	if r := src.RBD; r != nil {
		defaultString(&r.RBDPool, "rbd")
		defaultString(&r.RadosUser, "admin")
		defaultString(&r.Keyring, "/etc/ceph/keyring")
	}
	if s := src.ISCSI; s != nil {
		defaultString(&s.ISCSIInterface, "default")
	}
	if a := src.AzureDisk; a != nil {
		if a.CachingMode == nil {
			a.CachingMode = ptrTo(corev1.AzureDataDiskCachingReadWrite)
		}
		if a.FSType == nil {
			a.FSType = ptrTo("ext4")
		}
		if a.ReadOnly == nil {
			a.ReadOnly = ptrTo(false)
		}
		if a.Kind == nil {
			a.Kind = ptrTo(corev1.AzureSharedBlobDisk)
		}
	}
	if s := src.ScaleIO; s != nil {
		defaultString(&s.StorageMode, "ThinProvisioned")
		defaultString(&s.FSType, "xfs")
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// setConfigMapDefaults is SetDefaults_ConfigMap plus the default namespace.
func setConfigMapDefaults(cm *corev1.ConfigMap) {
	if cm.Namespace == "" {
		cm.Namespace = DefaultNamespace
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

// setSecretDefaults is SetDefaults_Secret plus what storing a Secret does:
// stringData is merged into data (stringData wins) and not kept.
func setSecretDefaults(s *corev1.Secret) {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

// DefaultServiceAccountName is the service account the API server's
// ServiceAccount admission gives a pod that names none.
const DefaultServiceAccountName = "default"

// AdmitServiceAccount is what the ServiceAccount admission plugin does to a
// pod being created (plugin/pkg/admission/serviceaccount/admission.go:
// Admit): a pod that names no service account runs as "default". Pod
// templates are not admitted, only the pods made from them.
func AdmitServiceAccount(pod *corev1.Pod) {
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
}

// DefaultTolerationSeconds is how long the DefaultTolerationSeconds
// admission plugin lets a pod tolerate a not-ready or unreachable node.
const DefaultTolerationSeconds = 300

// AdmitDefaultTolerationSeconds is what the DefaultTolerationSeconds
// admission plugin does to a pod (plugin/pkg/admission/
// defaulttolerationseconds/admission.go: Admit): a pod that does not already
// tolerate node.kubernetes.io/not-ready:NoExecute (or unreachable) gets a
// toleration of it for 300 s. A toleration with no key or no effect counts.
func AdmitDefaultTolerationSeconds(pod *corev1.Pod) {
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		if (t.Key == corev1.TaintNodeNotReady || t.Key == "") && noExecute {
			notReady = true
		}
		if (t.Key == corev1.TaintNodeUnreachable || t.Key == "") && noExecute {
			unreachable = true
		}
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptrTo(int64(DefaultTolerationSeconds)),
		})
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptrTo(int64(DefaultTolerationSeconds)),
		})
	}
}

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }

// defaultPodRequests is the API server's DefaultPodLevelResources
// (PodLevelResourcesFixDefaulting, beta and on since Kubernetes 1.37) for
// cpu and memory, the pod-level resources podrun takes: once spec.resources
// sets requests or limits, a pod-level request it does not set becomes the
// containers' aggregate request for that resource, or, when no container
// requests it, the pod-level limit; then a pod-level limit it does not set,
// for a resource that every container (init and sidecar too) limits,
// becomes the containers' aggregate limit, or the pod-level request when
// that is higher.
func defaultPodRequests(pod *corev1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Requests) == 0 && len(r.Limits) == 0 {
		return
	}
	reqs := r.Requests
	if reqs == nil {
		reqs = corev1.ResourceList{}
	}
	for name, q := range aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }) {
		// (cpu and memory, the pod-level resources, are overcommittable.)
		if _, ok := reqs[name]; !ok && isPodLevelResource(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := reqs[name]; !ok && isPodLevelResource(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		r.Requests = reqs
	}
	// defaultPodLevelLimits.
	limits := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for name, req := range r.Requests {
		if _, ok := r.Limits[name]; ok || !isPodLevelResource(name) || !everyContainerLimits(pod, name) {
			continue
		}
		lim, ok := limits[name]
		if !ok {
			continue
		}
		if req.Cmp(lim) > 0 {
			lim = req.DeepCopy()
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = lim
	}
}

// everyContainerLimits: every init and app container sets a limit for name
// (aggregateContainerLimits' filter).
func everyContainerLimits(pod *corev1.Pod, name corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}
