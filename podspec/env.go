package podspec

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeInfo is what the node knows about a running pod, for the downward API.
type RuntimeInfo struct {
	PodIP  string
	PodIPs []string // status.podIPs; defaults to [PodIP]
	HostIP string
	// HostIPs is status.hostIPs; defaults to [HostIP].
	HostIPs []string
	// NodeName is spec.nodeName as the pod sees it, and the host name of
	// hostNetwork pods (os.Hostname() when empty).
	NodeName string
	// Hostname is the sandbox's host name (the FQDN under setHostnameAsFQDN),
	// which containerd gives containers as HOSTNAME; "" derives it from the spec.
	Hostname string
	// NodeAllocatable stands in for a container's missing cpu, memory and
	// ephemeral-storage limits in resourceFieldRef values, as on a node.
	NodeAllocatable corev1.ResourceList
	// ServiceEnv are the service variables of the pod's namespace
	// (services.EnvVars, the kubelet's getServiceEnvVarMap); nil when the
	// host has no Services.
	ServiceEnv map[string]string
	// VolumePaths are the host directories of the pod's volumes by name,
	// where fileKeyRef reads its env files (the kubelet's podVolumes and
	// volumeutil.GetPath); nil before the volumes are set up.
	VolumePaths map[string]string
}

// DefaultPathEnv is the PATH containerd gives a container whose image sets none.
const DefaultPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ContainerEnv is the final environment of container c, as "K=V" entries in
// the order the process sees them: containerd starts from DefaultPathEnv and
// HOSTNAME, applies the image's ENV, then the pod's (PodEnv), replacing
// variables in place and appending new ones, and runc keeps the last of
// duplicate names. An image entry without "=" unsets the variable.
func (p *Plan) ContainerEnv(c *corev1.Container, imageEnv []string, rt RuntimeInfo) ([]string, error) {
	podEnv, err := p.PodEnv(c, rt)
	if err != nil {
		return nil, err
	}
	return p.MergeEnv(podEnv, imageEnv, rt), nil
}

// MergeEnv is ContainerEnv from podEnv, the container's PodEnv: a caller
// that needs both resolves the pod's variables (and reads fileKeyRef's
// files) once, as the kubelet does.
func (p *Plan) MergeEnv(podEnv, imageEnv []string, rt RuntimeInfo) []string {
	env := []string{DefaultPathEnv}
	env = replaceOrAppendEnv(env, []string{"HOSTNAME=" + containerHostname(p.Pod, rt)})
	env = replaceOrAppendEnv(env, append(append([]string{}, imageEnv...), podEnv...))
	return dedupEnvKeepLast(env)
}

// replaceOrAppendEnv is containerd's replaceOrAppendEnvValues: entries of
// overrides replace entries of defaults with the same name in place, others
// are appended (without deduplicating among themselves), and a name without
// "=" removes the default.
func replaceOrAppendEnv(defaults, overrides []string) []string {
	cache := make(map[string]int, len(defaults))
	results := make([]string, 0, len(defaults)+len(overrides))
	for i, e := range defaults {
		k, _, _ := strings.Cut(e, "=")
		results = append(results, e)
		cache[k] = i
	}
	for _, v := range overrides {
		k, _, ok := strings.Cut(v, "=")
		if !ok {
			if i, exists := cache[k]; exists {
				results[i] = ""
			}
			continue
		}
		if i, exists := cache[k]; exists {
			results[i] = v
		} else {
			results = append(results, v)
		}
	}
	out := results[:0]
	for _, e := range results {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// dedupEnvKeepLast is runc's prepareEnv: of duplicate names only the last
// occurrence stays, in its place.
func dedupEnvKeepLast(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, env[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// containerHostname is the HOSTNAME containerd sets: the pod's host name, or
// the node's for hostNetwork pods.
func containerHostname(pod *corev1.Pod, rt RuntimeInfo) string {
	if rt.Hostname != "" {
		return rt.Hostname
	}
	if pod.Spec.HostNetwork {
		if rt.NodeName != "" {
			return rt.NodeName
		}
		h, _ := os.Hostname()
		return h
	}
	return PodHostname(pod)
}

// PodHostname is the host name the kubelet gives a pod's sandbox
// (GeneratePodHostNameAndDomain): spec.hostnameOverride, else spec.hostname,
// else the pod name, cut to 63 characters without a trailing '-' or '.'.
// The FQDN form of setHostnameAsFQDN needs a cluster domain and is not
// applied (an override excludes it).
func PodHostname(pod *corev1.Pod) string {
	hostname := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil:
		hostname = *pod.Spec.HostnameOverride
	case pod.Spec.Hostname != "":
		hostname = pod.Spec.Hostname
	}
	const hostnameMaxLen = 63
	if len(hostname) > hostnameMaxLen {
		hostname = strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	}
	return hostname
}

// envList keeps variables in the order they were first defined.
type envList struct {
	names  []string
	values map[string]string
}

func (e *envList) set(k, v string) {
	if _, ok := e.values[k]; !ok {
		e.names = append(e.names, k)
	}
	e.values[k] = v
}

// PodEnv is the environment Kubernetes defines for container c (the kubelet's
// makeEnvironmentVariables): envFrom sources first (invalid names skipped),
// then env in order, each value's $(VAR) references expanded from the
// variables defined before it, valueFrom resolved from the downward API and
// from the manifest's ConfigMaps and Secrets. Variables keep the position of
// their first definition. The service variables of rt.ServiceEnv can be
// referenced and are added last (sorted), except those the pod defines.
// A fileKeyRef reads its file now (FileKeyRefValue), so that a container
// sees what the containers before it wrote.
// An error is the kubelet's own, which becomes the container's
// CreateContainerConfigError message: "couldn't find key K in ConfigMap
// NS/NAME", or the ConfigMap and Secret managers' NotFound (`configmap "NAME"
// not found`).
func (p *Plan) PodEnv(c *corev1.Container, rt RuntimeInfo) ([]string, error) {
	pod := p.Pod
	env := &envList{values: map[string]string{}}
	for _, from := range c.EnvFrom {
		var data map[string]string
		var kindName string
		switch {
		case from.ConfigMapRef != nil:
			kindName = "configmap " + strconv.Quote(from.ConfigMapRef.Name)
			cm, ok := p.ConfigMaps[from.ConfigMapRef.Name]
			if !ok {
				if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, fmt.Errorf("%s not found", kindName)
			}
			data = cm.Data
		case from.SecretRef != nil:
			kindName = "secret " + strconv.Quote(from.SecretRef.Name)
			s, ok := p.Secrets[from.SecretRef.Name]
			if !ok {
				if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, fmt.Errorf("%s not found", kindName)
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys) // map order in the kubelet; sorted here to be stable
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) != 0 {
				continue // the kubelet skips them with an InvalidEnvironmentVariableNames event
			}
			env.set(name, data[k])
		}
	}

	mapping := func(name string) string {
		if v, ok := env.values[name]; ok {
			return v
		}
		if v, ok := rt.ServiceEnv[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
	for _, ev := range c.Env {
		val := ev.Value
		if val != "" {
			val = ExpandFunc(val, mapping)
		} else if ev.ValueFrom != nil {
			vf := ev.ValueFrom
			var err error
			var skip bool
			switch {
			case vf.FieldRef != nil:
				val, err = FieldRefValue(pod, vf.FieldRef.FieldPath, rt)
			case vf.ResourceFieldRef != nil:
				val, err = ResourceFieldRefValue(pod, c, vf.ResourceFieldRef, rt)
			case vf.ConfigMapKeyRef != nil:
				ref := vf.ConfigMapKeyRef
				optional := ref.Optional != nil && *ref.Optional
				cm, ok := p.ConfigMaps[ref.Name]
				if !ok {
					if optional {
						skip = true
						break
					}
					err = fmt.Errorf("configmap %q not found", ref.Name)
					break
				}
				if val, ok = cm.Data[ref.Key]; !ok {
					if optional {
						skip = true
						break
					}
					err = fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
				}
			case vf.SecretKeyRef != nil:
				ref := vf.SecretKeyRef
				optional := ref.Optional != nil && *ref.Optional
				s, ok := p.Secrets[ref.Name]
				if !ok {
					if optional {
						skip = true
						break
					}
					err = fmt.Errorf("secret %q not found", ref.Name)
					break
				}
				b, ok := s.Data[ref.Key]
				if !ok {
					if optional {
						skip = true
						break
					}
					err = fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
				}
				val = string(b)
			case vf.FileKeyRef != nil:
				val, err = FileKeyRefValue(pod, c, vf.FileKeyRef, rt)
				// "" without an error is an optional key that is missing.
				skip = err == nil && val == ""
			}
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
		}
		env.set(ev.Name, val)
	}
	out := make([]string, 0, len(env.names)+len(rt.ServiceEnv))
	for _, k := range env.names {
		out = append(out, k+"="+env.values[k])
	}
	svcNames := make([]string, 0, len(rt.ServiceEnv))
	for k := range rt.ServiceEnv {
		if _, defined := env.values[k]; !defined {
			svcNames = append(svcNames, k)
		}
	}
	sort.Strings(svcNames)
	for _, k := range svcNames {
		out = append(out, k+"="+rt.ServiceEnv[k])
	}
	return out, nil
}

// FileKeyRefValue is the value of a fileKeyRef as the kubelet's
// makeEnvironmentVariables reads it: the volume must be one the kubelet has
// mounted, which is one some container mounts (c, or any of the pod's: the
// volume manager's desired_state_of_world_populator skips the others), the
// path is joined to its host directory with securejoin.SecureJoin (a
// symlink in the volume stays inside it), and the file is parsed with
// ParseEnvFile. A file that cannot be opened or parsed is the kubelet's
// "couldn't parse env file" (it logs the cause), whether optional or not; a
// key that is missing or empty is an error unless optional, when "" and no
// error are returned.
func FileKeyRefValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.FileKeySelector, rt RuntimeInfo) (string, error) {
	dir, ok := rt.VolumePaths[ref.VolumeName]
	if !ok || !volumeMounted(pod, c, ref.VolumeName) {
		return "", fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	path, err := securejoin.SecureJoin(dir, ref.Path)
	if err != nil {
		return "", err
	}
	val, err := ParseEnvFile(path, ref.Key)
	if err != nil {
		return "", envFileError{err}
	}
	if val == "" && (ref.Optional == nil || !*ref.Optional) {
		return "", fmt.Errorf("environment variable key %q not found in file %q", ref.Key, path)
	}
	return val, nil
}

// envFileError is the kubelet's message for an env file it cannot read or
// parse, which keeps the cause to itself (the kubelet logs it); Unwrap
// gives it.
type envFileError struct{ err error }

func (e envFileError) Error() string { return "couldn't parse env file" }
func (e envFileError) Unwrap() error { return e.err }

// volumeMounted says whether c or any container of pod mounts the volume
// name (pkg/volume/util GetPodVolumeNames).
func volumeMounted(pod *corev1.Pod, c *corev1.Container, name string) bool {
	mounts := func(c *corev1.Container) bool {
		for _, m := range c.VolumeMounts {
			if m.Name == name {
				return true
			}
		}
		return false
	}
	found := mounts(c)
	visitContainers(&pod.Spec, field.NewPath("spec"), func(c *corev1.Container, _ *field.Path) {
		found = found || mounts(c)
	})
	return found
}

// FieldRefValue is the value of a downward API fieldRef (apiVersion v1) as
// the kubelet resolves it, for environment variables and downwardAPI volumes.
// metadata.labels and metadata.annotations (whole maps, one `k="v"` line per
// key, sorted) are valid only in volumes; validation enforces that.
func FieldRefValue(pod *corev1.Pod, fieldPath string, rt RuntimeInfo) (string, error) {
	if fieldPath == "spec.host" { // an old alias that conversion still maps
		fieldPath = "spec.nodeName"
	}
	if path, subscript, ok := splitSubscriptedPath(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(subscript)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[subscript], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(subscript); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[subscript], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
	}
	podIPs := rt.PodIPs
	if len(podIPs) == 0 && rt.PodIP != "" {
		podIPs = []string{rt.PodIP}
	}
	hostIPs := rt.HostIPs
	if len(hostIPs) == 0 && rt.HostIP != "" {
		hostIPs = []string{rt.HostIP}
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		if rt.NodeName != "" {
			return rt.NodeName, nil
		}
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("resolving %s: the host IP is not known", fieldPath)
		}
		return hostIPs[0], nil
	case "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("resolving %s: the host IPs are not known", fieldPath)
		}
		return strings.Join(hostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// splitSubscriptedPath splits "metadata.labels['k']" into its path and key,
// as pkg/fieldpath SplitMaybeSubscriptedPath does.
func splitSubscriptedPath(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	s := strings.TrimSuffix(fieldPath, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

// formatMap is pkg/fieldpath FormatMap: `key="value"` lines, sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// ResourceFieldRefValue is the value of a resourceFieldRef as the kubelet
// computes it: the named container's (or c's) request or limit divided by the
// divisor (default 1) and rounded up; a missing or zero cpu, memory or
// ephemeral-storage limit is replaced by the pod-level limit, if any, else
// by the node's allocatable amount.
func ResourceFieldRefValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, rt RuntimeInfo) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = findContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef %s: no container", ref.Resource)
	}
	limits := corev1.ResourceList{}
	for k, v := range target.Resources.Limits {
		limits[k] = v.DeepCopy()
	}
	podLimits := podLevel(pod, true)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			// The pod-level limit bounds a container that declares none
			// (PodLevelResources), else the node's allocatable does.
			if p, ok := podLimits[name]; ok && !p.IsZero() {
				limits[name] = p
			} else if a, ok := rt.NodeAllocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	requests := target.Resources.Requests

	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	from := func(l corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
		return l[name]
	}
	var q resource.Quantity
	cpu := false
	switch res := ref.Resource; {
	case res == "limits.cpu":
		q, cpu = from(limits, corev1.ResourceCPU), true
	case res == "requests.cpu":
		q, cpu = from(requests, corev1.ResourceCPU), true
	case res == "limits.memory":
		q = from(limits, corev1.ResourceMemory)
	case res == "requests.memory":
		q = from(requests, corev1.ResourceMemory)
	case res == "limits.ephemeral-storage":
		q = from(limits, corev1.ResourceEphemeralStorage)
	case res == "requests.ephemeral-storage":
		q = from(requests, corev1.ResourceEphemeralStorage)
	case strings.HasPrefix(res, "limits."+corev1.ResourceHugePagesPrefix):
		q = from(limits, corev1.ResourceName(strings.TrimPrefix(res, "limits.")))
	case strings.HasPrefix(res, "requests."+corev1.ResourceHugePagesPrefix):
		q = from(requests, corev1.ResourceName(strings.TrimPrefix(res, "requests.")))
	default:
		return "", fmt.Errorf("unsupported container resource : %v", res)
	}
	if cpu {
		d := divisor.MilliValue()
		if d <= 0 {
			return "", fmt.Errorf("resourceFieldRef %s: invalid divisor %s", ref.Resource, divisor.String())
		}
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(d))), 10), nil
	}
	d := divisor.Value()
	if d <= 0 {
		return "", fmt.Errorf("resourceFieldRef %s: invalid divisor %s", ref.Resource, divisor.String())
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(d))), 10), nil
}

// findContainer finds an app or init container by name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
