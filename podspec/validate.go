//go:build !podrun_lean

package podspec

// Validation of a Pod on create, ported from kubernetes
// pkg/apis/core/validation/validation.go (ValidatePodCreate) to operate on
// core/v1 types, with the options of a current API server: relaxed
// environment variable names and DNS search domains, zero-second sleep
// actions, sidecar resize policies, privileged containers allowed. Paths,
// error types and messages are the API server's.

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/internal/lazyregexp"
)

const (
	isNegativeErrorMsg    = apimachineryvalidation.IsNegativeErrorMsg
	isNotIntegerErrorMsg  = `must be an integer`
	isNotPositiveErrorMsg = `must be greater than zero`
	fileModeErrorMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
	initForbiddenMsg      = "may not be set for init containers without restartPolicy=Always"
)

// Validate returns every error the API server reports when creating the pod,
// followed by the fields podrun cannot honour (Unsupported). Like the API
// server it expects a defaulted pod (SetDefaults; Load does it): fields the
// defaults fill in are otherwise reported as required.
func Validate(pod *corev1.Pod) field.ErrorList {
	errs := validatePodCreate(pod)
	return append(errs, CheckUnsupported(pod)...)
}

func validatePodCreate(pod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	specPath := field.NewPath("spec")
	errs := validateObjectMeta(&pod.ObjectMeta, metaPath)
	errs = append(errs, validatePodSpecificAnnotations(pod.Annotations, &pod.Spec, metaPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)

	// Checks for pods only, not pod templates.
	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected").Child("sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, set := range []struct {
		name string
		cs   []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i, c := range set.cs {
			if len(c.Image) != len(strings.TrimSpace(c.Image)) {
				errs = append(errs, field.Invalid(specPath.Child(set.name).Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}

	// ValidatePodCreate.
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	errs = append(errs, validateSeccompAnnotationsAndFields(pod, specPath)...)
	errs = append(errs, validateAppArmorAnnotationsAndFields(pod, specPath)...)
	return errs
}

var standardFinalizers = sets.New("kubernetes", "orphan", "foregroundDeletion")

func validateObjectMeta(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, fldPath)
	for i, f := range meta.Finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers.Has(f) {
			errs = append(errs, field.Invalid(fldPath.Child("finalizers").Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validatePodHostName is the API server's validatePodHostName: a
// hostnameOverride (KEP-4762) is the whole UTS hostname, so it excludes
// setHostnameAsFQDN and the host's network, and must be a DNS subdomain of
// at most 64 bytes.
func validatePodHostName(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostnameOverride == nil {
		return nil
	}
	var errs field.ErrorList
	p := fldPath.Child("hostnameOverride")
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*spec.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(p, "", 64))
	}
	return append(errs, validateDNS1123Subdomain(*spec.HostnameOverride, p)...)
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateNameFunc(fn func(string, bool) []string, value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(value, false) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, isNegativeErrorMsg)}
	}
	return nil
}

// --- annotations ---

func validatePodSpecificAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value, ok := annotations[corev1.MirrorPodAnnotationKey]; ok && spec.NodeName == "" {
		errs = append(errs, field.Invalid(fldPath.Key(corev1.MirrorPodAnnotationKey), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if annotations[corev1.TolerationsAnnotationKey] != "" {
		var tolerations []corev1.Toleration
		if err := json.Unmarshal([]byte(annotations[corev1.TolerationsAnnotationKey]), &tolerations); err != nil {
			errs = append(errs, field.Invalid(fldPath, corev1.TolerationsAnnotationKey, err.Error()))
		} else if len(tolerations) > 0 {
			errs = append(errs, validateTolerations(tolerations, fldPath.Child(corev1.TolerationsAnnotationKey))...)
		}
	}
	if v, ok := annotations[corev1.PodDeletionCost]; ok {
		valid := len(v) > 0 && (v[0] == '-' || v == "0" || (v[0] >= '1' && v[0] <= '9'))
		if _, err := strconv.ParseInt(v, 10, 32); err != nil || !valid {
			errs = append(errs, field.Invalid(fldPath.Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
		}
	}
	for _, k := range sortedKeys(annotations) {
		p := annotations[k]
		if k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix) {
			errs = append(errs, validateSeccompProfileAnnotation(p, fldPath.Child(k))...)
		}
	}
	for _, k := range sortedKeys(annotations) {
		if !strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			continue
		}
		p := annotations[k]
		name := strings.TrimPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
		if !podSpecHasContainer(spec, name) {
			errs = append(errs, field.Invalid(fldPath.Key(k), name, "container not found"))
		}
		if p != "" && p != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && p != corev1.DeprecatedAppArmorBetaProfileNameUnconfined &&
			!strings.HasPrefix(p, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			errs = append(errs, field.Invalid(fldPath.Key(k), p, fmt.Sprintf("invalid AppArmor profile name: %q", p)))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validateSeccompProfileAnnotation(p string, fldPath *field.Path) field.ErrorList {
	switch {
	case p == corev1.SeccompProfileRuntimeDefault, p == corev1.DeprecatedSeccompProfileDockerDefault, p == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(p, corev1.SeccompLocalhostProfileNamePrefix):
		return validateLocalDescendingPath(strings.TrimPrefix(p, corev1.SeccompLocalhostProfileNamePrefix), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, p, "must be a valid seccomp profile")}
}

func podSpecHasContainer(spec *corev1.PodSpec, name string) bool {
	found := false
	visitContainers(spec, field.NewPath("spec"), func(c *corev1.Container, _ *field.Path) {
		if c.Name == name {
			found = true
		}
	})
	return found
}

func validateSeccompAnnotationsAndFields(pod *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if a, ok := pod.Annotations[corev1.SeccompPodAnnotationKey]; ok {
			if e := seccompAnnotationMatches(a, sc.SeccompProfile, specPath.Child("securityContext").Child("seccompProfile")); e != nil {
				errs = append(errs, e)
			}
		}
	}
	visitContainers(&pod.Spec, specPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			return
		}
		if a, ok := pod.Annotations[corev1.SeccompContainerAnnotationKeyPrefix+c.Name]; ok {
			if e := seccompAnnotationMatches(a, c.SecurityContext.SeccompProfile, p.Child("securityContext").Child("seccompProfile")); e != nil {
				errs = append(errs, e)
			}
		}
	})
	return errs
}

func seccompAnnotationMatches(a string, f *corev1.SeccompProfile, fldPath *field.Path) *field.Error {
	switch f.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if a != corev1.SeccompProfileNameUnconfined {
			return field.Forbidden(fldPath.Child("type"), "seccomp type in annotation and field must match")
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if a != corev1.SeccompProfileRuntimeDefault && a != corev1.DeprecatedSeccompProfileDockerDefault {
			return field.Forbidden(fldPath.Child("type"), "seccomp type in annotation and field must match")
		}
	case corev1.SeccompProfileTypeLocalhost:
		if !strings.HasPrefix(a, corev1.SeccompLocalhostProfileNamePrefix) {
			return field.Forbidden(fldPath.Child("type"), "seccomp type in annotation and field must match")
		} else if f.LocalhostProfile == nil || strings.TrimPrefix(a, corev1.SeccompLocalhostProfileNamePrefix) != *f.LocalhostProfile {
			return field.Forbidden(fldPath.Child("localhostProfile"), "seccomp profile in annotation and field must match")
		}
	}
	return nil
}

func validateAppArmorAnnotationsAndFields(pod *corev1.Pod, specPath *field.Path) field.ErrorList {
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return nil
	}
	var errs field.ErrorList
	var podProfile *corev1.AppArmorProfile
	if pod.Spec.SecurityContext != nil {
		podProfile = pod.Spec.SecurityContext.AppArmorProfile
	}
	visitContainers(&pod.Spec, specPath, func(c *corev1.Container, p *field.Path) {
		profile := podProfile
		if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
			profile = c.SecurityContext.AppArmorProfile
		}
		if profile == nil {
			return
		}
		a, ok := pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]
		if !ok {
			return
		}
		ap := p.Child("securityContext").Child("appArmorProfile")
		switch profile.Type {
		case corev1.AppArmorProfileTypeUnconfined:
			if a != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
				errs = append(errs, field.Forbidden(ap.Child("type"), "apparmor type in annotation and field must match"))
			}
		case corev1.AppArmorProfileTypeRuntimeDefault:
			if a != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault {
				errs = append(errs, field.Forbidden(ap.Child("type"), "apparmor type in annotation and field must match"))
			}
		case corev1.AppArmorProfileTypeLocalhost:
			if !strings.HasPrefix(a, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
				errs = append(errs, field.Forbidden(ap.Child("type"), "apparmor type in annotation and field must match"))
			} else if profile.LocalhostProfile == nil || strings.TrimPrefix(a, corev1.DeprecatedAppArmorBetaProfileNamePrefix) != *profile.LocalhostProfile {
				errs = append(errs, field.Forbidden(ap.Child("localhostProfile"), "apparmor profile in annotation and field must match"))
			}
		}
	})
	return errs
}

// --- pod spec ---

func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	gracePeriod := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	vols, vErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	errs = append(errs, vErrs...)
	podClaimNames := sets.New[string]()
	for _, c := range spec.ResourceClaims {
		if c.Name != "" {
			podClaimNames.Insert(c.Name)
		}
	}
	errs = append(errs, validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))...)
	errs = append(errs, validateContainers(spec.Containers, vols, podClaimNames, gracePeriod, fldPath.Child("containers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, vols, podClaimNames, gracePeriod, fldPath.Child("initContainers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, podClaimNames, fldPath.Child("ephemeralContainers"), spec.RestartPolicy, hostUsers)...)
	if spec.Resources != nil {
		errs = append(errs, validatePodResources(spec, fldPath.Child("resources"))...)
	}
	errs = append(errs, validatePodHostNetworkDeps(spec, fldPath)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath, fldPath.Child("securityContext"))...)
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	seenGates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		errs = append(errs, validateQualifiedName(g.Name, fldPath.Child("schedulingGates").Index(i))...)
		if seenGates.Has(g.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("schedulingGates").Index(i), g.Name))
		}
		seenGates.Insert(g.Name)
	}
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateWindowsHostProcessPod(spec, fldPath)...)
	errs = append(errs, validateHostUsers(spec, fldPath)...)
	errs = append(errs, validatePodHostName(spec, fldPath)...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, validateNameFunc(apimachineryvalidation.ValidateServiceAccountName, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if len(spec.Tolerations) > 0 {
		errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	}
	for i, ha := range spec.HostAliases {
		errs = append(errs, validation.IsValidIP(fldPath.Child("hostAliases").Index(i).Child("ip"), ha.IP)...)
		for j, h := range ha.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(h, fldPath.Child("hostAliases").Index(i).Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		switch *spec.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fldPath.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("preemptionPolicy"), spec.PreemptionPolicy,
				[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		osPath := fldPath.Child("os")
		switch {
		case spec.OS.Name == "":
			errs = append(errs, field.Required(osPath.Child("name"), "cannot be empty"))
		case spec.OS.Name != corev1.Linux && spec.OS.Name != corev1.Windows:
			errs = append(errs, field.NotSupported(osPath, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		case spec.OS.Name == corev1.Linux:
			errs = append(errs, validateLinux(spec, fldPath)...)
		default:
			errs = append(errs, validateWindows(spec, fldPath)...)
		}
	}
	return append(errs, validateFileKeyRefVolumes(spec, fldPath)...)
}

func validateRestartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
}

func validateDNSPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
}

// Limits on DNS parameters from Linux libc name resolution.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validatePodDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range cfg.Searches {
		if search == "." {
			continue
		}
		search = strings.TrimSuffix(search, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(search) {
			errs = append(errs, field.Invalid(fldPath.Child("searches").Index(i), search, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validatePodHostNetworkDeps: with hostNetwork a pod's app container ports
// must use the same host port (a pod's, not a template's: 0 is not allowed).
func validatePodHostNetworkDeps(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, p := range c.Ports {
			if p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return errs
}

func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		p := fldPath.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names.Has(c.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
			names.Insert(c.Name)
		}
		if c.ResourceClaimName != nil && c.ResourceClaimTemplateName != nil {
			errs = append(errs, field.Invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName == nil {
			errs = append(errs, field.Invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if c.ResourceClaimName != nil {
			errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, *c.ResourceClaimName, p.Child("resourceClaimName"))...)
		}
		if c.ResourceClaimTemplateName != nil {
			errs = append(errs, validateNameFunc(apimachineryvalidation.NameIsDNSSubdomain, *c.ResourceClaimTemplateName, p.Child("resourceClaimTemplateName"))...)
		}
	}
	return errs
}

// validatePodResources checks pod-level resources (feature PodLevelResources)
// as validatePodResources does: well-formed, then consistent with the
// containers' (validatePodResourceConsistency): the pod-level requests cover
// the containers' aggregate requests, no container's limit exceeds the pod's.
func validatePodResources(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	r := spec.Resources
	var errs field.ErrorList
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	podResourceName := func(name corev1.ResourceName, p *field.Path) field.ErrorList {
		errs := validateResourceName(name, p)
		if len(errs) != 0 {
			return errs
		}
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			return field.ErrorList{field.NotSupported(p, name, []string{"cpu", "hugepages-", "memory"})}
		}
		return nil
	}
	errs = append(errs, validateResourceRequirements(r, podResourceName, nil, fldPath)...)
	agg := aggregate(&corev1.Pod{Spec: *spec}, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	for _, name := range sortedResourceNames(agg) {
		if want, req := agg[name], r.Requests[name]; !req.IsZero() && want.Cmp(req) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(), fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", want.String())))
		}
	}
	for _, c := range spec.Containers {
		for _, name := range sortedResourceNames(c.Resources.Limits) {
			lim := c.Resources.Limits[name]
			if podLim, ok := r.Limits[name]; ok && lim.Cmp(podLim) > 0 {
				errs = append(errs, field.Invalid(fldPath.Child("limits").Key(string(name)), lim.String(), fmt.Sprintf("must be less than or equal to pod limits of %s", podLim.String())))
			}
		}
	}
	return errs
}

// --- volumes ---

func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	vols := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		el := validateVolumeSource(&v.VolumeSource, idxPath)
		if v.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(v.Name, namePath)...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(namePath, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
			vols[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, el...)
		}
	}
	return vols, errs
}

// validateVolumeSource checks that exactly one source is given, in the API
// server's order and with its paths (including its "downwarAPI" spelling), and
// validates the sources podrun supports in depth.
func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, validate func() field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
			return
		}
		n++
		if validate != nil {
			errs = append(errs, validate()...)
		}
	}
	one(src.EmptyDir != nil, "emptyDir", func() field.ErrorList {
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Cmp(resource.Quantity{}) < 0 {
			return field.ErrorList{field.Forbidden(fldPath.Child("emptyDir").Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
		}
		return nil
	})
	one(src.HostPath != nil, "hostPath", func() field.ErrorList { return validateHostPath(src.HostPath, fldPath.Child("hostPath")) })
	one(src.GitRepo != nil, "gitRepo", func() field.ErrorList {
		var errs field.ErrorList
		if src.GitRepo.Repository == "" {
			errs = append(errs, field.Required(fldPath.Child("gitRepo").Child("repository"), ""))
		}
		return append(errs, validateLocalDescendingPath(src.GitRepo.Directory, fldPath.Child("gitRepo").Child("directory"))...)
	})
	one(src.GCEPersistentDisk != nil, "gcePersistentDisk", nil)
	one(src.AWSElasticBlockStore != nil, "awsElasticBlockStore", nil)
	one(src.Secret != nil, "secret", func() field.ErrorList { return validateSecretVolume(src.Secret, fldPath.Child("secret")) })
	one(src.NFS != nil, "nfs", func() field.ErrorList {
		var errs field.ErrorList
		p := fldPath.Child("nfs")
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
		return errs
	})
	one(src.ISCSI != nil, "iscsi", nil)
	one(src.Glusterfs != nil, "glusterfs", nil)
	one(src.Flocker != nil, "flocker", nil)
	one(src.PersistentVolumeClaim != nil, "persistentVolumeClaim", func() field.ErrorList {
		if src.PersistentVolumeClaim.ClaimName == "" {
			return field.ErrorList{field.Required(fldPath.Child("persistentVolumeClaim").Child("claimName"), "")}
		}
		return nil
	})
	one(src.RBD != nil, "rbd", nil)
	one(src.Cinder != nil, "cinder", nil)
	one(src.CephFS != nil, "cephFS", nil)
	one(src.Quobyte != nil, "quobyte", nil)
	one(src.DownwardAPI != nil, "downwarAPI", func() field.ErrorList {
		return validateDownwardAPIVolume(src.DownwardAPI, fldPath.Child("downwardAPI"))
	})
	one(src.FC != nil, "fc", nil)
	one(src.FlexVolume != nil, "flexVolume", nil)
	one(src.ConfigMap != nil, "configMap", func() field.ErrorList { return validateConfigMapVolume(src.ConfigMap, fldPath.Child("configMap")) })
	one(src.AzureFile != nil, "azureFile", nil)
	one(src.VsphereVolume != nil, "vsphereVolume", nil)
	one(src.PhotonPersistentDisk != nil, "photonPersistentDisk", nil)
	one(src.PortworxVolume != nil, "portworxVolume", nil)
	one(src.AzureDisk != nil, "azureDisk", nil)
	one(src.StorageOS != nil, "storageos", nil)
	one(src.Projected != nil, "projected", func() field.ErrorList { return validateProjectedVolume(src.Projected, fldPath.Child("projected")) })
	one(src.ScaleIO != nil, "scaleIO", nil)
	one(src.CSI != nil, "csi", nil)
	one(src.Ephemeral != nil, "ephemeral", func() field.ErrorList {
		if src.Ephemeral.VolumeClaimTemplate == nil {
			return field.ErrorList{field.Required(fldPath.Child("ephemeral").Child("volumeClaimTemplate"), "")}
		}
		return nil
	})
	one(src.Image != nil, "image", func() field.ErrorList {
		var errs field.ErrorList
		if src.Image.Reference == "" {
			errs = append(errs, field.Required(fldPath.Child("image").Child("reference"), ""))
		}
		return append(errs, validatePullPolicy(src.Image.PullPolicy, fldPath.Child("image").Child("pullPolicy"))...)
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

var supportedHostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
	corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket,
}

func validateHostPath(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil && !sets.New(supportedHostPathTypes...).Has(*hp.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), hp.Type, supportedHostPathTypes))
	}
	return errs
}

func validFileMode(m *int32) bool {
	return m == nil || (*m >= 0 && *m <= 0777)
}

func validateSecretVolume(s *corev1.SecretVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.SecretName == "" {
		errs = append(errs, field.Required(fldPath.Child("secretName"), ""))
	}
	if !validFileMode(s.DefaultMode) {
		errs = append(errs, field.Invalid(fldPath.Child("defaultMode"), *s.DefaultMode, fileModeErrorMsg))
	}
	for i, kp := range s.Items {
		errs = append(errs, validateKeyToPath(&kp, fldPath.Child("items").Index(i))...)
	}
	return errs
}

func validateConfigMapVolume(s *corev1.ConfigMapVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if !validFileMode(s.DefaultMode) {
		errs = append(errs, field.Invalid(fldPath.Child("defaultMode"), *s.DefaultMode, fileModeErrorMsg))
	}
	for i, kp := range s.Items {
		errs = append(errs, validateKeyToPath(&kp, fldPath.Child("items").Index(i))...)
	}
	return errs
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	if !validFileMode(kp.Mode) {
		errs = append(errs, field.Invalid(fldPath.Child("mode"), *kp.Mode, fileModeErrorMsg))
	}
	return errs
}

var (
	validVolumeDownwardAPIFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")
	validEnvDownwardAPIFieldPaths    = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	validContainerResourceFieldPaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage")
)

func validateDownwardAPIVolumeFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, validVolumeDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateContainerResourceFieldSelector(f.ResourceFieldRef, fldPath.Child("resourceFieldRef"), true)...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	if !validFileMode(f.Mode) {
		errs = append(errs, field.Invalid(fldPath.Child("mode"), *f.Mode, fileModeErrorMsg))
	}
	return errs
}

func validateDownwardAPIVolume(v *corev1.DownwardAPIVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !validFileMode(v.DefaultMode) {
		errs = append(errs, field.Invalid(fldPath.Child("defaultMode"), *v.DefaultMode, fileModeErrorMsg))
	}
	for _, f := range v.Items {
		// The API server reports item errors at the volume's path, without the index.
		errs = append(errs, validateDownwardAPIVolumeFile(&f, fldPath)...)
	}
	return errs
}

func validateProjectedVolume(pv *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !validFileMode(pv.DefaultMode) {
		errs = append(errs, field.Invalid(fldPath.Child("defaultMode"), *pv.DefaultMode, fileModeErrorMsg))
	}
	allPaths := sets.New[string]()
	addPath := func(p, name string) {
		if allPaths.Has(p) {
			errs = append(errs, field.Invalid(fldPath, name, "conflicting duplicate paths"))
		}
		allPaths.Insert(p)
	}
	for i, s := range pv.Sources {
		n := 0
		srcPath := fldPath.Child("sources").Index(i)
		if s.Secret != nil {
			n++
			p := srcPath.Child("secret")
			if s.Secret.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j, kp := range s.Secret.Items {
				errs = append(errs, validateKeyToPath(&kp, p.Child("items").Index(j))...)
				if kp.Path != "" {
					addPath(kp.Path, s.Secret.Name)
				}
			}
		}
		if s.ConfigMap != nil {
			n++
			p := srcPath.Child("configMap")
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j, kp := range s.ConfigMap.Items {
				errs = append(errs, validateKeyToPath(&kp, p.Child("items").Index(j))...)
				if kp.Path != "" {
					addPath(kp.Path, s.ConfigMap.Name)
				}
			}
		}
		if s.DownwardAPI != nil {
			n++
			p := srcPath.Child("downwardAPI")
			for _, f := range s.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIVolumeFile(&f, p)...)
				if f.Path != "" {
					addPath(f.Path, f.Path)
				}
			}
		}
		if s.ServiceAccountToken != nil {
			n++
			p := srcPath.Child("serviceAccountToken")
			if s.ServiceAccountToken.ExpirationSeconds != nil {
				if e := *s.ServiceAccountToken.ExpirationSeconds; e < 10*60 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), e, "may not specify a duration less than 10 minutes"))
				} else if e > 1<<32 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), e, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if s.ServiceAccountToken.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(s.ServiceAccountToken.Path, fldPath.Child("path"))...)
			}
		}
		if s.ClusterTrustBundle != nil {
			n++
		}
		if s.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateLocalDescendingPath: relative, without ".." elements.
func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, fldPath)...)
}

func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, target, "must not contain '..'")}
		}
	}
	return nil
}

func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return errs
}

// --- containers ---

func validateContainers(cs []corev1.Container, vols map[string]corev1.VolumeSource, claims sets.Set[string], gracePeriod *int64,
	fldPath *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	if len(cs) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range cs {
		c := &cs[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, claims, p, restartPolicy, hostUsers)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, gracePeriod, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateLivenessProbe(c.LivenessProbe, gracePeriod, p.Child("livenessProbe"))...)
		errs = append(errs, validateReadinessProbe(c.ReadinessProbe, gracePeriod, p.Child("readinessProbe"))...)
		errs = append(errs, validateStartupProbe(c.StartupProbe, gracePeriod, p.Child("startupProbe"))...)
		errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
	}
	// Port conflicts are checked across all app containers: they run together.
	return append(errs, checkHostPortConflicts(cs, fldPath)...)
}

func validateInitContainers(cs, regular []corev1.Container, vols map[string]corev1.VolumeSource, claims sets.Set[string], gracePeriod *int64,
	fldPath *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range cs {
		c := &cs[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, claims, p, restartPolicy, hostUsers)...)
		// An init container may have any container restart policy and rules
		// (validateInitContainerRestartPolicy with ContainerRestartRules and
		// RestartAllContainersOnContainerExits, both on by default since 1.36).
		errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
		restartAlways := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one by one: each is checked on its own.
		errs = append(errs, checkHostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if restartAlways {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, gracePeriod, p.Child("lifecycle"))...)
			}
			errs = append(errs, validateLivenessProbe(c.LivenessProbe, gracePeriod, p.Child("livenessProbe"))...)
			errs = append(errs, validateReadinessProbe(c.ReadinessProbe, gracePeriod, p.Child("readinessProbe"))...)
			errs = append(errs, validateStartupProbe(c.StartupProbe, gracePeriod, p.Child("startupProbe"))...)
		} else {
			if c.Lifecycle != nil {
				errs = append(errs, field.Forbidden(p.Child("lifecycle"), initForbiddenMsg))
			}
			if c.LivenessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("livenessProbe"), initForbiddenMsg))
			}
			if c.ReadinessProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("readinessProbe"), initForbiddenMsg))
			}
			if c.StartupProbe != nil {
				errs = append(errs, field.Forbidden(p.Child("startupProbe"), initForbiddenMsg))
			}
		}
	}
	return errs
}

// validateContainerRestartPolicy is the API server's check of a container's
// restartPolicy and restartPolicyRules (validation.go
// validateContainerRestartPolicy, with RestartAllContainers allowed).
func validateContainerRestartPolicy(policy *corev1.ContainerRestartPolicy, rules []corev1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	policies := []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}
	if policy == nil {
		if len(rules) == 0 {
			return nil
		}
		errs = append(errs, field.Required(fldPath.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	} else if !slices.Contains(policies, *policy) {
		errs = append(errs, field.NotSupported(fldPath.Child("restartPolicy"), *policy, policies))
	}
	if len(rules) > 20 {
		errs = append(errs, field.TooMany(fldPath.Child("restartPolicyRules"), len(rules), 20))
	}
	actions := []corev1.ContainerRestartRuleAction{corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers}
	operators := []corev1.ContainerRestartRuleOnExitCodesOperator{corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn}
	for i, rule := range rules {
		rp := fldPath.Child("restartPolicyRules").Index(i)
		if !slices.Contains(actions, rule.Action) {
			errs = append(errs, field.NotSupported(rp.Child("action"), rule.Action, actions))
		}
		if rule.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		if !slices.Contains(operators, rule.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), rule.ExitCodes.Operator, operators))
		}
		if len(rule.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(rule.ExitCodes.Values), 255))
		}
	}
	return errs
}

// checkHostPortConflicts is AccumulateUniqueHostPorts: protocol, host IP and
// host port together must be unique.
func checkHostPortConflicts(cs []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range cs {
		for pi, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			} else {
				seen.Insert(key)
			}
		}
	}
	return errs
}

func validateContainerCommon(c *corev1.Container, vols map[string]corev1.VolumeSource, claims sets.Set[string], p *field.Path,
	restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, devices, vols, c, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, mounts, vols, p.Child("volumeDevices"))...)
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, validateContainerResourceName, claims, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"), restartPolicy)...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"), hostUsers)...)
	return errs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !sets.New(supportedPortProtocols...).Has(port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

// validateEnv: names are checked with IsRelaxedEnvVarName (any printable
// ASCII but '='), the rule since RelaxedEnvironmentVariableValidation went GA
// in Kubernetes 1.34.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	if ev.ValueFrom == nil {
		return nil
	}
	var errs field.ErrorList
	vf := ev.ValueFrom
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(vf.FieldRef, validEnvDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateContainerResourceFieldSelector(vf.ResourceFieldRef, fldPath.Child("resourceFieldRef"), false)...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if vf.FileKeyRef != nil {
		n++
		errs = append(errs, validateFileKeySelector(vf.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		// The message with EnvFiles on (AllowEnvFilesValidation).
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), name, msg))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

// validateFileKeySelector is the API server's: a key that is an environment
// variable name, a volumeName that is a DNS-1123 label, a path without "..".
// That the volume is one of the pod's emptyDirs is validateFileKeyRefVolumes'.
func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(s.VolumeName, fldPath.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else {
		errs = append(errs, validatePathNoBacksteps(s.Path, fldPath.Child("path"))...)
	}
	return errs
}

// validateFileKeyRefVolumes is the API server's: the volume a fileKeyRef
// names, in any kind of container, must be one of the pod's emptyDirs.
func validateFileKeyRefVolumes(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	sources := map[string]*corev1.VolumeSource{}
	for i := range spec.Volumes {
		sources[spec.Volumes[i].Name] = &spec.Volumes[i].VolumeSource
	}
	visitContainers(spec, fldPath, func(c *corev1.Container, cp *field.Path) {
		for j, ev := range c.Env {
			if ev.ValueFrom == nil || ev.ValueFrom.FileKeyRef == nil {
				continue
			}
			name := ev.ValueFrom.FileKeyRef.VolumeName
			p := cp.Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			if src, ok := sources[name]; !ok {
				errs = append(errs, field.NotFound(p, name))
			} else if src.EmptyDir == nil {
				errs = append(errs, field.Invalid(p, name, "referenced volume must be of type emptyDir"))
			}
		}
	})
	return errs
}

// convertDownwardAPIFieldLabel is pkg/apis/core/pods ConvertDownwardAPIFieldLabel.
func convertDownwardAPIFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if p, _, ok := splitSubscriptedPath(label); ok {
		switch p {
		case "metadata.annotations", "metadata.labels":
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, expressions sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	internal, err := convertDownwardAPIFieldLabel(fs.APIVersion, fs.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	if p, subscript, ok := splitSubscriptedPath(internal); ok {
		switch p {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath, p, "does not support subscript")}
	} else if !expressions.Has(p) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), p, sets.List(expressions))}
	}
	return nil
}

func validateContainerResourceFieldSelector(fs *corev1.ResourceFieldSelector, fldPath *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !validContainerResourceFieldPaths.Has(fs.Resource):
		if !strings.HasPrefix(fs.Resource, "limits.hugepages-") && !strings.HasPrefix(fs.Resource, "requests.hugepages-") {
			errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(validContainerResourceFieldPaths)))
		}
	}
	return append(errs, validateContainerResourceDivisor(fs.Resource, fs.Divisor, fldPath)...)
}

var (
	validCPUDivisors   = sets.New("1m", "1")
	validBytesDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateContainerResourceDivisor(rName string, divisor resource.Quantity, fldPath *field.Path) field.ErrorList {
	if divisor.Cmp(resource.Quantity{}) == 0 {
		return nil
	}
	var errs field.ErrorList
	d := divisor.String()
	switch rName {
	case "limits.cpu", "requests.cpu":
		if !validCPUDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !validBytesDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !validBytesDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
		}
	}
	if strings.HasPrefix(rName, "requests.hugepages-") || strings.HasPrefix(rName, "limits.hugepages-") {
		if !validBytesDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
		}
	}
	return errs
}

func validateEnvFrom(vars []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.SecretRef.Name, p.Child("secretRef"))...)
		}
		if n == 0 {
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if n > 1 {
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), name, msg))
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, devices map[string]string, vols map[string]corev1.VolumeSource, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountpoints := sets.New[string]()
	for i, m := range mounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountpoints.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountpoints.Insert(m.MountPath)
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, dp := range devices {
			if dp == m.MountPath {
				errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		// The API server reports subPath problems without the mount's index.
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateMountPropagation(*m.MountPropagation, c, fldPath.Child("mountPropagation"))...)
		}
		errs = append(errs, validateMountRecursiveReadOnly(m, fldPath.Child("recursiveReadOnly"))...)
		// An image volume takes subPath, subPathExpr, readOnly, recursiveReadOnly
		// and mountPropagation like any volume (subPath since 1.33), but not
		// bindMountOptions (ValidateVolumeMounts).
		if v, ok := vols[m.Name]; ok && v.Image != nil && len(m.BindMountOptions) > 0 {
			errs = append(errs, field.Invalid(p.Child("bindMountOptions"), m.BindMountOptions, "bindMountOptions may not be used with image volumes"))
		}
	}
	return errs
}

func validateMountPropagation(mp corev1.MountPropagationMode, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	supported := []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	var errs field.ErrorList
	if !sets.New(supported...).Has(mp) {
		errs = append(errs, field.NotSupported(fldPath, mp, supported))
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if mp == corev1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

func validateMountRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly,
			[]corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

func validateVolumeDevices(devices []corev1.VolumeDevice, mounts map[string]string, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	names := sets.New[string]()
	for i, d := range devices {
		p := fldPath.Index(i)
		src, matched := vols[d.Name]
		isPVC := matched && (src.PersistentVolumeClaim != nil || src.Ephemeral != nil)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if matched && !isPVC {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, fldPath.Child("devicePath"))) > 0 {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mp := range mounts {
			if mp == d.DevicePath {
				errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}

var supportedPullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validatePullPolicy(p corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, supportedPullPolicies)}
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, fldPath *field.Path, podRestartPolicy corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestartPolicy == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// --- probes and lifecycle ---

func validateLivenessProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, gracePeriod, fldPath)
	if p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateReadinessProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, gracePeriod, fldPath)
	if p.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return errs
}

func validateStartupProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, gracePeriod, fldPath)
	if p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	errs := validateHandler(handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}, gracePeriod, fldPath)
	errs = append(errs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, validate(fldPath.Child(name))...)
	}
	one(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if h.httpGet.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(h.httpGet.Port, p.Child("port"))...)
		if h.httpGet.Scheme != corev1.URISchemeHTTP && h.httpGet.Scheme != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(p.Child("scheme"), h.httpGet.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
		for _, hdr := range h.httpGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders"), hdr.Name, msg))
			}
		}
		return errs
	})
	one(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	one(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	one(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		// AllowPodLifecycleSleepActionZeroValue is on in current API servers.
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, x := range []struct {
		h    *corev1.LifecycleHandler
		name string
	}{{l.PostStart, "postStart"}, {l.PreStop, "preStop"}} {
		if x.h != nil {
			errs = append(errs, validateHandler(handler{exec: x.h.Exec, httpGet: x.h.HTTPGet, tcpSocket: x.h.TCPSocket, sleep: x.h.Sleep},
				gracePeriod, fldPath.Child(x.name))...)
		}
	}
	return errs
}

// --- resources ---

var (
	standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")
	standardResources          = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
		"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "quotas",
		"services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
		"requests.storage", "services.nodeports", "services.loadbalancers")
	integerResources = sets.New("pods", "quotas", "services", "replicationcontrollers", "secrets", "configmaps",
		"persistentvolumeclaims", "services.nodeports", "services.loadbalancers")
)

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(string(name), fldPath)
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") {
		s := string(name)
		if !standardResources.Has(s) && !isHugePageResourceName(name) && !strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
			return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
		}
	}
	return nil
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !standardContainerResources.Has(string(name)) && !isHugePageResourceName(name) {
			return append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		return append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), isNegativeErrorMsg))
	}
	if integerResources.Has(string(name)) || isExtendedResourceName(name) {
		if q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(fldPath, q, isNotIntegerErrorMsg))
		}
	}
	return errs
}

func hugePageValueDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 || size.Value() == 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

func validateResourceRequirements(r *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList,
	claims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	limCPUMem, reqCPUMem, limHuge, reqHuge := false, false, false, false
	for _, name := range sortedResourceNames(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantityValue(name, q, p)...)
		if isHugePageResourceName(name) {
			limHuge = true
			if !hugePageValueDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if isQOSResource(name) {
			limCPUMem = true
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantityValue(name, q, p)...)
		if limit, ok := r.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResourceName(name) {
			reqHuge = true
			if !hugePageValueDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if isQOSResource(name) {
			reqCPUMem = true
		}
	}
	if !limCPUMem && !reqCPUMem && (reqHuge || limHuge) {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(errs, validateResourceClaimNames(r.Claims, claims, fldPath.Child("claims"))...)
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func validateResourceClaimNames(claims []corev1.ResourceClaim, podClaims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		if c.Name == "" {
			errs = append(errs, field.Required(fldPath.Index(i), ""))
			continue
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), c.Name))
		} else {
			key := c.Name
			if c.Request != "" {
				errs = append(errs, validateDNS1123Label(c.Request, fldPath.Index(i).Child("request"))...)
				key += "/" + c.Request
			}
			if names.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(i), key))
			} else if c.Request == "" {
				for k := range names {
					if before, _, ok := strings.Cut(k, "/"); ok && before == c.Name {
						errs = append(errs, field.Duplicate(fldPath.Index(i), c.Name))
					}
				}
			}
			names.Insert(key)
		}
		if !podClaims.Has(c.Name) {
			e := field.NotFound(fldPath.Index(i), c.Name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if len(podClaims) == 0 {
				e.Detail += " which is empty"
			} else {
				e.Detail += ": " + strings.Join(sets.List(podClaims), ", ")
			}
			errs = append(errs, e)
		}
	}
	return errs
}

// --- security contexts ---

func validateSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path, hostUsers bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	// Privileged containers are allowed: an API server started with --allow-privileged.
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if sc.ProcMount != nil {
		switch *sc.ProcMount {
		case corev1.DefaultProcMount, corev1.UnmaskedProcMount:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers && *sc.ProcMount == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfileField(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if string(c) == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateWindowsSecurityContextOptions(sc.WindowsOptions, fldPath.Child("windowsOptions"))...)
	errs = append(errs, validateAppArmorProfileField(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return errs
}

func validateSeccompProfileField(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type,
			[]corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfileField(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		} else {
			trimmed := strings.TrimSpace(*p.LocalhostProfile)
			if trimmed != *p.LocalhostProfile {
				errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), *p.LocalhostProfile, "must not be padded with whitespace"))
			} else if trimmed == "" {
				errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
			}
			const maxLocalhostProfileLength = 4095
			if len(*p.LocalhostProfile) > maxLocalhostProfileLength {
				errs = append(errs, field.TooLong(fldPath.Child("localhostProfile"), "", maxLocalhostProfileLength))
			}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), p.Type,
			[]corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

const (
	maxGMSACredentialSpecLengthInKiB = 64
	maxGMSACredentialSpecLength      = maxGMSACredentialSpecLengthInKiB * 1024
	maxRunAsUserNameDomainLength     = 256
	maxRunAsUserNameUserLength       = 104
)

var (
	ctrlRegex                      = lazyregexp.New(`[[:cntrl:]]+`)
	validNetBiosRegex              = lazyregexp.New(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsLabelFormat                 = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`
	validWindowsUserDomainDNSRegex = lazyregexp.New(fmt.Sprintf(`^%s(?:\.%s)*$`, dnsLabelFormat, dnsLabelFormat))
	invalidUserNameCharsRegex      = lazyregexp.New(`["/\\:;|=,\+\*\?<>@\[\]]`)
	invalidUserNameDotsSpacesRegex = lazyregexp.New(`^[\. ]+$`)
)

func validateWindowsSecurityContextOptions(w *corev1.WindowsSecurityContextOptions, fldPath *field.Path) field.ErrorList {
	if w == nil {
		return nil
	}
	var errs field.ErrorList
	if w.GMSACredentialSpecName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*w.GMSACredentialSpecName) {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpecName"), w.GMSACredentialSpecName, msg))
		}
	}
	if w.GMSACredentialSpec != nil {
		if l := len(*w.GMSACredentialSpec); l == 0 {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpec"), w.GMSACredentialSpec, "gmsaCredentialSpec cannot be an empty string"))
		} else if l > maxGMSACredentialSpecLength {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpec"), w.GMSACredentialSpec,
				fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecLengthInKiB)))
		}
	}
	if w.RunAsUserName == nil {
		return errs
	}
	p := fldPath.Child("runAsUserName")
	name := *w.RunAsUserName
	if len(name) == 0 {
		return append(errs, field.Invalid(p, w.RunAsUserName, "runAsUserName cannot be an empty string"))
	}
	if ctrlRegex.MatchString(name) {
		return append(errs, field.Invalid(p, w.RunAsUserName, "runAsUserName cannot contain control characters"))
	}
	parts := strings.Split(name, "\\")
	if len(parts) > 2 {
		return append(errs, field.Invalid(p, w.RunAsUserName, "runAsUserName cannot contain more than one backslash"))
	}
	hasDomain, domain, user := false, "", parts[0]
	if len(parts) == 2 {
		hasDomain, domain, user = true, parts[0], parts[1]
	}
	if len(domain) >= maxRunAsUserNameDomainLength {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainLength)))
	}
	if hasDomain && !(validNetBiosRegex.MatchString(domain) || validWindowsUserDomainDNSRegex.MatchString(domain)) {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, "runAsUserName's Domain doesn't match the NetBios nor the DNS format"))
	}
	if l := len(user); l == 0 {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, "runAsUserName's User cannot be empty"))
	} else if l > maxRunAsUserNameUserLength {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserLength)))
	}
	if invalidUserNameDotsSpacesRegex.MatchString(user) {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, `runAsUserName's User cannot contain only periods or spaces`))
	}
	if invalidUserNameCharsRegex.MatchString(user) {
		errs = append(errs, field.Invalid(p, w.RunAsUserName, `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`))
	}
	return errs
}

func validateWindowsHostProcessPod(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	count, hostProcessCount := 0, 0
	var podHostProcess *bool
	if spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil {
		podHostProcess = spec.SecurityContext.WindowsOptions.HostProcess
	}
	visitContainers(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		count++
		var hp *bool
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			hp = c.SecurityContext.WindowsOptions.HostProcess
		}
		if podHostProcess != nil && hp != nil && *podHostProcess != *hp {
			errs = append(errs, field.Invalid(p.Child("securityContext", "windowsOptions", "hostProcess"), *hp,
				fmt.Sprintf("pod hostProcess value must be identical if both are specified, was %v", *podHostProcess)))
		}
		if (hp != nil && *hp) || (hp == nil && podHostProcess != nil && *podHostProcess) {
			hostProcessCount++
		}
	})
	if hostProcessCount > 0 {
		if hostProcessCount != count {
			errs = append(errs, field.Invalid(fldPath, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
		}
		if !spec.HostNetwork {
			errs = append(errs, field.Invalid(fldPath.Child("hostNetwork"), spec.HostNetwork, "hostNetwork must be true if pod contains any hostProcess containers"))
		}
	}
	return errs
}

var sysctlContainSlashRegexp = lazyregexp.New("^" + "(" + sysctlSegmentFmt + "[\\./])*" + sysctlSegmentFmt + "$")

// sysctlNamespace is component-helpers' GetNamespace: the kernel namespace a
// sysctl belongs to ("net", "ipc", "uts" or "").
func sysctlNamespace(name string) string {
	// Names may use "/" as separator; normalize to ".".
	if i := strings.IndexAny(name, "./"); i >= 0 && name[i] == '/' {
		name = strings.Map(func(r rune) rune {
			switch r {
			case '.':
				return '/'
			case '/':
				return '.'
			}
			return r
		}, name)
	}
	switch name {
	case "kernel.sem":
		return "ipc"
	case "kernel.domainname", "kernel.hostname":
		return "uts"
	}
	for prefix, ns := range map[string]string{"kernel.shm": "ipc", "kernel.msg": "ipc", "fs.mqueue.": "ipc", "net.": "net"} {
		if strings.HasPrefix(name, prefix) {
			return ns
		}
	}
	return ""
}

func validatePodSecurityContext(spec *corev1.PodSpec, specPath, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for g, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fldPath.Child("supplementalGroups").Index(g), gid, msg))
		}
	}
	if spec.ShareProcessNamespace != nil && spec.HostPID && *spec.ShareProcessNamespace {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	names := sets.New[string]()
	for i, s := range sc.Sysctls {
		p := fldPath.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlContainSlashRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlContainSlashRegexp)))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		switch ns := sysctlNamespace(s.Name); {
		case spec.HostNetwork && ns == "net":
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == "ipc":
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names.Insert(s.Name)
	}
	if sc.FSGroupChangePolicy != nil {
		valid := []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}
		if !sets.New(valid...).Has(*sc.FSGroupChangePolicy) {
			errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), sc.FSGroupChangePolicy, valid))
		}
	}
	errs = append(errs, validateSeccompProfileField(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, validateWindowsSecurityContextOptions(sc.WindowsOptions, fldPath.Child("windowsOptions"))...)
	errs = append(errs, validateAppArmorProfileField(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if sc.SupplementalGroupsPolicy != nil {
		valid := []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}
		if !sets.New(valid...).Has(*sc.SupplementalGroupsPolicy) {
			errs = append(errs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), sc.SupplementalGroupsPolicy, valid))
		}
	}
	if sc.SELinuxChangePolicy != nil {
		valid := []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}
		if !sets.New(valid...).Has(*sc.SELinuxChangePolicy) {
			errs = append(errs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *sc.SELinuxChangePolicy, valid))
		}
	}
	return errs
}

func validateLinux(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("securityContext").Child("windowsOptions"), "windows options cannot be set for a linux pod"))
	}
	visitContainers(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext").Child("windowsOptions"), "windows options cannot be set for a linux pod"))
		}
	})
	return errs
}

func validateWindows(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(p *field.Path) {
		errs = append(errs, field.Forbidden(p, "cannot be set for a windows pod"))
	}
	if sc := spec.SecurityContext; sc != nil {
		scPath := fldPath.Child("securityContext")
		if sc.AppArmorProfile != nil {
			forbid(scPath.Child("appArmorProfile"))
		}
		if sc.SELinuxOptions != nil {
			forbid(scPath.Child("seLinuxOptions"))
		}
		if spec.HostUsers != nil {
			forbid(fldPath.Child("hostUsers"))
		}
		if spec.HostPID {
			forbid(fldPath.Child("hostPID"))
		}
		if spec.HostIPC {
			forbid(fldPath.Child("hostIPC"))
		}
		if sc.SeccompProfile != nil {
			forbid(scPath.Child("seccompProfile"))
		}
		if sc.FSGroup != nil {
			forbid(scPath.Child("fsGroup"))
		}
		if sc.FSGroupChangePolicy != nil {
			forbid(scPath.Child("fsGroupChangePolicy"))
		}
		if len(sc.Sysctls) > 0 {
			forbid(scPath.Child("sysctls"))
		}
		if spec.ShareProcessNamespace != nil {
			forbid(fldPath.Child("shareProcessNamespace"))
		}
		if sc.RunAsUser != nil {
			forbid(scPath.Child("runAsUser"))
		}
		if sc.RunAsGroup != nil {
			forbid(scPath.Child("runAsGroup"))
		}
		if sc.SupplementalGroups != nil {
			forbid(scPath.Child("supplementalGroups"))
		}
		if sc.SupplementalGroupsPolicy != nil {
			forbid(scPath.Child("supplementalGroupsPolicy"))
		}
		if sc.SELinuxChangePolicy != nil {
			forbid(scPath.Child("seLinuxChangePolicy"))
		}
	}
	visitContainers(spec, fldPath, func(c *corev1.Container, cp *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		p := cp.Child("securityContext")
		if sc.AppArmorProfile != nil {
			forbid(p.Child("appArmorProfile"))
		}
		if sc.SELinuxOptions != nil {
			forbid(p.Child("seLinuxOptions"))
		}
		if sc.SeccompProfile != nil {
			forbid(p.Child("seccompProfile"))
		}
		if sc.Capabilities != nil {
			forbid(p.Child("capabilities"))
		}
		if sc.ReadOnlyRootFilesystem != nil {
			forbid(p.Child("readOnlyRootFilesystem"))
		}
		if sc.Privileged != nil {
			forbid(p.Child("privileged"))
		}
		if sc.AllowPrivilegeEscalation != nil {
			forbid(p.Child("allowPrivilegeEscalation"))
		}
		if sc.ProcMount != nil {
			forbid(p.Child("procMount"))
		}
		if sc.RunAsUser != nil {
			forbid(p.Child("runAsUser"))
		}
		if sc.RunAsGroup != nil {
			forbid(p.Child("runAsGroup"))
		}
	})
	return errs
}
