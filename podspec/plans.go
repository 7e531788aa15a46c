//go:build !podrun_lean

package podspec

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	for _, pc := range m.PriorityClasses {
		fe := append(ValidatePriorityClass(pc), duplicate("priorityclass", "", pc.Name)...)
		if len(fe) > 0 {
			errs = append(errs, &ValidationError{File: m.Source, Kind: "priorityclass", Name: pc.Name, Errors: fe})
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
	return NewPlan(pod, m.ConfigMaps, m.Secrets, origin)
}
