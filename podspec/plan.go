package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Plan is a validated pod with everything the runtime needs to know about it.
type Plan struct {
	Pod        *corev1.Pod                  // defaulted, validated
	ConfigMaps map[string]*corev1.ConfigMap // by name, same namespace
	Secrets    map[string]*corev1.Secret
	// Requests and Limits are the effective pod values (EffectiveRequests,
	// EffectiveLimits).
	Requests, Limits corev1.ResourceList
	// CPULimitsDeclared and MemoryLimitsDeclared are the kubelet's
	// cpuLimitsDeclared/memoryLimitsDeclared (LimitsDeclared).
	CPULimitsDeclared, MemoryLimitsDeclared bool
	QOS                                     corev1.PodQOSClass
	Origin                                  Origin
	// Warnings are what the API server would warn about on create, and
	// references to ConfigMaps or Secrets the manifest does not contain
	// (the kubelet would fail to start the container).
	Warnings []string
	// Requested, when set, is the pod's priority fields as its manifest
	// gave them, before the Priority admission filled them in (input's
	// AdmitPriority): the admission applies on create only, so an apply
	// of a pod that exists compares the manifest's own fields (ForUpdate).
	Requested *PriorityFields
}

// PriorityFields are the pod spec fields the Priority admission sets.
type PriorityFields struct {
	ClassName        string
	Priority         *int32
	PreemptionPolicy *corev1.PreemptionPolicy
}

// PriorityFieldsOf are pod's priority fields, copied.
func PriorityFieldsOf(pod *corev1.Pod) *PriorityFields {
	f := &PriorityFields{ClassName: pod.Spec.PriorityClassName}
	if p := pod.Spec.Priority; p != nil {
		f.Priority = ptrTo(*p)
	}
	if p := pod.Spec.PreemptionPolicy; p != nil {
		f.PreemptionPolicy = ptrTo(*p)
	}
	return f
}

// ForUpdate is the plan as an update of old sees it: the Priority admission
// runs on create only (plugin/pkg/admission/priority admission.go Admit
// ignores every operation but CREATE), so the priority fields the manifest
// leaves unset keep old's values, as kubectl apply's patch leaves them,
// instead of what the admission computed for a new pod (a globalDefault
// class created since does not change an existing pod).
func (p *Plan) ForUpdate(old *corev1.Pod) *Plan {
	r := p.Requested
	if r == nil {
		return p
	}
	out := *p
	out.Pod = p.Pod.DeepCopy()
	spec := &out.Pod.Spec
	spec.PriorityClassName, spec.Priority, spec.PreemptionPolicy = r.ClassName, r.Priority, r.PreemptionPolicy
	if spec.PriorityClassName == "" {
		spec.PriorityClassName = old.Spec.PriorityClassName
	}
	if spec.Priority == nil {
		spec.Priority = old.Spec.Priority
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = old.Spec.PreemptionPolicy
	}
	return &out
}

// NewPlan is the plan of pod, a defaulted pod that was validated before (the
// pod of a record: the kubelet does not validate the pods it is given again),
// with the ConfigMaps and Secrets of its namespace among configMaps and
// secrets, and the warnings the API server and the kubelet would give for it.
func NewPlan(pod *corev1.Pod, configMaps []*corev1.ConfigMap, secrets []*corev1.Secret, origin Origin) *Plan {
	p := &Plan{
		Pod:        pod,
		ConfigMaps: map[string]*corev1.ConfigMap{},
		Secrets:    map[string]*corev1.Secret{},
		Requests:   EffectiveRequests(pod),
		Limits:     EffectiveLimits(pod),
		QOS:        QOSClass(pod),
		Origin:     origin,
	}
	p.CPULimitsDeclared, p.MemoryLimitsDeclared = LimitsDeclared(pod)
	for _, cm := range configMaps {
		if cm.Namespace == pod.Namespace {
			p.ConfigMaps[cm.Name] = cm
		}
	}
	for _, s := range secrets {
		if s.Namespace == pod.Namespace {
			p.Secrets[s.Name] = s
		}
	}
	if w, ok := initAnnotationWarning(pod, origin.InitFromAnnotation); ok {
		p.Warnings = append(p.Warnings, origin.SourcePath(w.path)+": "+w.msg)
	}
	for _, w := range podWarnings(pod, origin.SourcePath) {
		p.Warnings = append(p.Warnings, origin.SourcePath(w.path)+": "+w.msg)
	}
	for _, w := range p.missingReferences() {
		p.Warnings = append(p.Warnings, origin.SourcePath(w.path)+": "+w.msg)
	}
	return p
}

// visitContainers calls fn for every init, app and ephemeral container with its path.
func visitContainers(spec *corev1.PodSpec, specPath *field.Path, fn func(c *corev1.Container, p *field.Path)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		fn((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), specPath.Child("ephemeralContainers").Index(i))
	}
}

type warning struct{ path, msg string }

// podWarnings are the API server's warnings on create (pkg/api/pod/warnings.go)
// that apply to podrun's pods; paths inside messages go through rebase.
func podWarnings(pod *corev1.Pod, rebase func(string) string) []warning {
	var ws []warning
	spec := &pod.Spec
	specPath := field.NewPath("spec")
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		ws = append(ws, warning{"spec.terminationGracePeriodSeconds", "must be >= 0; negative values are invalid and will be treated as 1"})
	}
	type portBlock struct {
		path string
		port corev1.ContainerPort
	}
	allPorts := map[string][]portBlock{}
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
			for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
				if q, ok := l.list[r]; ok && q.MilliValue()%1000 != 0 {
					ws = append(ws, warning{p.Child("resources", l.name).Key(string(r)).String(),
						fmt.Sprintf("fractional byte value %q is invalid, must be an integer", q.String())})
				}
			}
		}
		names := sets.New[string]()
		for i, ev := range c.Env {
			if !names.Has(ev.Name) {
				names.Insert(ev.Name)
				continue
			}
			ref := fmt.Sprintf("$(%s)", ev.Name)
			if ev.ValueFrom != nil || ev.Value == ref || !strings.Contains(ev.Value, ref) {
				ws = append(ws, warning{p.Child("env").Index(i).String(), fmt.Sprintf("hides previous definition of %q, which may be dropped when using apply", ev.Name)})
			}
		}
		for i, port := range c.Ports {
			pp := p.Child("ports").Index(i).String()
			if port.HostIP != "" && port.HostPort == 0 {
				ws = append(ws, warning{pp, fmt.Sprintf("hostIP set without hostPort: %+v", port)})
			}
			k := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range allPorts[k] {
				switch a, b := port.HostIP == "", other.port.HostIP == ""; {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					ws = append(ws, warning{pp, "duplicate port definition with " + rebase(other.path)})
				case port.HostPort == 0 || other.port.HostPort == 0:
					ws = append(ws, warning{pp, "overlapping port definition with " + rebase(other.path)})
				case port.HostPort == other.port.HostPort && (a || b) && !(a && b):
					ws = append(ws, warning{pp, "dangerously ambiguous port definition with " + rebase(other.path)})
				}
			}
			allPorts[k] = append(allPorts[k], portBlock{pp, port})
		}
	})
	return ws
}

// missingReferences lists non-optional references to ConfigMaps, Secrets or
// keys that the manifest does not define: the kubelet would not start the
// container (CreateContainerConfigError) or mount the volume.
func (p *Plan) missingReferences() []warning {
	var ws []warning
	// Environment variables read only data; volumes read binaryData too.
	cmKey := func(name, key string, volume bool) string {
		cm, ok := p.ConfigMaps[name]
		if !ok {
			return fmt.Sprintf("configmap %q not found in namespace %s", name, p.Pod.Namespace)
		}
		if key == "" {
			return ""
		}
		if _, ok := cm.Data[key]; ok {
			return ""
		}
		if _, ok := cm.BinaryData[key]; ok && volume {
			return ""
		}
		return fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", key, p.Pod.Namespace, name)
	}
	secretKey := func(name, key string) string {
		s, ok := p.Secrets[name]
		if !ok {
			return fmt.Sprintf("secret %q not found in namespace %s", name, p.Pod.Namespace)
		}
		if _, ok := s.Data[key]; key != "" && !ok {
			return fmt.Sprintf("couldn't find key %s in Secret %s/%s", key, p.Pod.Namespace, name)
		}
		return ""
	}
	check := func(path string, optional *bool, msg string) {
		if msg != "" && (optional == nil || !*optional) {
			ws = append(ws, warning{path, msg})
		}
	}
	visitContainers(&p.Pod.Spec, field.NewPath("spec"), func(c *corev1.Container, cp *field.Path) {
		for i, from := range c.EnvFrom {
			fp := cp.Child("envFrom").Index(i)
			if r := from.ConfigMapRef; r != nil {
				check(fp.Child("configMapRef").String(), r.Optional, cmKey(r.Name, "", false))
			}
			if r := from.SecretRef; r != nil {
				check(fp.Child("secretRef").String(), r.Optional, secretKey(r.Name, ""))
			}
		}
		for i, ev := range c.Env {
			if ev.ValueFrom == nil || ev.Value != "" {
				continue
			}
			vp := cp.Child("env").Index(i).Child("valueFrom")
			if r := ev.ValueFrom.ConfigMapKeyRef; r != nil {
				check(vp.Child("configMapKeyRef").String(), r.Optional, cmKey(r.Name, r.Key, false))
			}
			if r := ev.ValueFrom.SecretKeyRef; r != nil {
				check(vp.Child("secretKeyRef").String(), r.Optional, secretKey(r.Name, r.Key))
			}
		}
	})
	for i, v := range p.Pod.Spec.Volumes {
		vp := field.NewPath("spec", "volumes").Index(i)
		if s := v.ConfigMap; s != nil {
			check(vp.Child("configMap").String(), s.Optional, cmKey(s.Name, "", true))
			if _, ok := p.ConfigMaps[s.Name]; !ok {
				continue
			}
			for j, it := range s.Items {
				check(vp.Child("configMap", "items").Index(j).String(), s.Optional, cmKey(s.Name, it.Key, true))
			}
		}
		if s := v.Secret; s != nil {
			check(vp.Child("secret").String(), s.Optional, secretKey(s.SecretName, ""))
			if _, ok := p.Secrets[s.SecretName]; !ok {
				continue
			}
			for j, it := range s.Items {
				check(vp.Child("secret", "items").Index(j).String(), s.Optional, secretKey(s.SecretName, it.Key))
			}
		}
		if v.Projected == nil {
			continue
		}
		for j, src := range v.Projected.Sources {
			sp := vp.Child("projected", "sources").Index(j)
			if s := src.ConfigMap; s != nil {
				check(sp.Child("configMap").String(), s.Optional, cmKey(s.Name, "", true))
			}
			if s := src.Secret; s != nil {
				check(sp.Child("secret").String(), s.Optional, secretKey(s.Name, ""))
			}
		}
	}
	return ws
}
