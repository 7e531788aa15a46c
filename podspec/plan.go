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
}

// Plans validates every object of the manifest and returns one plan per pod.
// The error lists every problem of every object (a *ValidationError per
// object, in an ErrorList), each with the field path the user wrote.
func (m *Manifest) Plans() ([]*Plan, error) {
	var errs ErrorList
	type key struct{ kind, ns, name string }
	seen := map[key]bool{}
	duplicate := func(kind, ns, name string) field.ErrorList {
		k := key{kind, ns, name}
		if name == "" {
			return nil
		}
		if seen[k] {
			return field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"), name)}
		}
		seen[k] = true
		return nil
	}
	for _, cm := range m.ConfigMaps {
		fe := append(ValidateConfigMap(cm), duplicate("configmap", cm.Namespace, cm.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "configmap", Name: cm.Name, Errors: fe})
		}
	}
	for _, s := range m.Secrets {
		fe := append(ValidateSecret(s), duplicate("secret", s.Namespace, s.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "secret", Name: s.Name, Errors: fe})
		}
	}
	for _, svc := range m.Services {
		fe := append(ValidateService(svc), duplicate("service", svc.Namespace, svc.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "service", Name: svc.Name, Errors: fe})
		}
	}
	for _, w := range m.Workloads {
		kind := strings.ToLower(w.Kind)
		fe := append(workloadErrors(w), duplicate(kind, w.Object.GetNamespace(), w.Object.GetName())...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: kind, Name: w.Object.GetName(), Errors: fe})
			continue
		}
		pod := workloadPod(w)
		w.Warnings = m.newPlan(pod, w.Origin).Warnings
	}
	for _, c := range m.Claims {
		fe := append(ValidateClaim(c), duplicate("persistentvolumeclaim", c.Namespace, c.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "persistentvolumeclaim", Name: c.Name, Errors: fe})
		}
	}
	for _, n := range m.Namespaces {
		fe := append(ValidateNamespace(n), duplicate("namespace", "", n.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "namespace", Name: n.Name, Errors: fe})
		}
	}
	var plans []*Plan
	for i, pod := range m.Pods {
		origin := Origin{Kind: "Pod"}
		if i < len(m.Origins) {
			origin = m.Origins[i]
		}
		var fe field.ErrorList
		kind := "pod"
		for _, e := range append(Validate(pod), duplicate("pod", pod.Namespace, pod.Name)...) {
			e := *e
			e.Field = origin.SourcePath(e.Field)
			fe = append(fe, &e)
		}
		fe = dedupFieldErrors(fe)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: kind, Name: pod.Name, Errors: fe})
			continue
		}
		plans = append(plans, m.newPlan(pod, origin))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return plans, nil
}

func dedupFieldErrors(in field.ErrorList) field.ErrorList {
	seen := sets.New[string]()
	var out field.ErrorList
	for _, e := range in {
		if s := e.Error(); !seen.Has(s) {
			seen.Insert(s)
			out = append(out, e)
		}
	}
	return out
}

func (m *Manifest) newPlan(pod *corev1.Pod, origin Origin) *Plan {
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
	for _, cm := range m.ConfigMaps {
		if cm.Namespace == pod.Namespace {
			p.ConfigMaps[cm.Name] = cm
		}
	}
	for _, s := range m.Secrets {
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
