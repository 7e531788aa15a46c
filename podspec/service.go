//go:build !podrun_lean

package podspec

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// kubeletPort is the kubelet's port (pkg/cluster/ports.KubeletPort), which a
// LoadBalancer Service may not expose.
const kubeletPort = 10250

// maxClientIPServiceAffinitySeconds is core.MaxClientIPServiceAffinitySeconds.
const maxClientIPServiceAffinitySeconds = 86400

var (
	supportedServicePortProtocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
	supportedSessionAffinityTypes = sets.New(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	supportedServiceTypes         = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	supportedIPFamilyPolicies = sets.New(corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack,
		corev1.IPFamilyPolicyRequireDualStack)
	supportedTrafficPolicies = sets.New(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)
)

// SetServiceDefaults applies the v1 defaults of a Service
// (pkg/apis/core/v1/defaults.go SetDefaults_Service) and the registry's
// normalisation on create (clusterIP and clusterIPs agree; status is the
// server's). The ClusterIP, IP families and node ports are allocated later,
// by the host's service registry (package services), as the API server
// allocates them after defaulting.
func SetServiceDefaults(svc *corev1.Service) {
	if svc.APIVersion == "" && svc.Kind == "" {
		svc.APIVersion, svc.Kind = "v1", "Service"
	}
	if svc.Namespace == "" {
		svc.Namespace = DefaultNamespace
	}
	svc.Status = corev1.ServiceStatus{}
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		timeout := corev1.DefaultClientIPServiceAffinitySeconds
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		sp := &spec.Ports[i]
		if sp.Protocol == "" {
			sp.Protocol = corev1.ProtocolTCP
		}
		if sp.TargetPort == intstr.FromInt32(0) || sp.TargetPort == intstr.FromString("") {
			sp.TargetPort = intstr.FromInt32(sp.Port)
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
	// The registry's NormalizeClusterIPs: the single field follows the list
	// and the other way round.
	if len(spec.ClusterIPs) == 0 && spec.ClusterIP != "" {
		spec.ClusterIPs = []string{spec.ClusterIP}
	} else if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
}

// IsHeadlessService is the API's isHeadlessService: clusterIP None.
func IsHeadlessService(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// ValidateService returns the API server's errors for creating svc
// (pkg/apis/core/validation ValidateService), for podrun's single-stack
// IPv4 cluster.
func ValidateService(svc *corev1.Service) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&svc.ObjectMeta, true, apimachineryvalidation.NameIsDNS1035Label, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	spec := &svc.Spec
	headless := IsHeadlessService(svc)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for i := range spec.Ports {
			if spec.Ports[i].Port == kubeletPort {
				errs = append(errs, field.Invalid(specPath.Child("ports").Index(i), spec.Ports[i].Port,
					fmt.Sprintf("may not expose port %v externally since it is used by kubelet", kubeletPort)))
			}
		}
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for LoadBalancer services"))
		}
	case corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "may not be set to 'None' for NodePort services"))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// The value (a CNAME) may have a trailing dot to denote it as fully qualified.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			errs = append(errs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := sets.New[string]()
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	if spec.SessionAffinity == "" {
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	} else if !supportedSessionAffinityTypes.Has(spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, sets.List(supportedSessionAffinityTypes)))
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		errs = append(errs, validateClientIPAffinityConfig(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	} else if spec.SessionAffinity == corev1.ServiceAffinityNone && spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
	}

	errs = append(errs, validateServiceClusterIPs(svc)...)

	for i, ip := range spec.ExternalIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(specPath.Child("externalIPs").Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}

	if spec.Type == "" {
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	} else if !supportedServiceTypes.Has(spec.Type) {
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, sets.List(supportedServiceTypes)))
	}
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(specPath.Child("ports").Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}

	type protoPort struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts := map[protoPort]bool{}
	ports := map[protoPort]bool{}
	for i, p := range spec.Ports {
		portPath := specPath.Child("ports").Index(i)
		if p.NodePort != 0 {
			k := protoPort{p.Protocol, p.NodePort}
			if nodePorts[k] {
				errs = append(errs, field.Duplicate(portPath.Child("nodePort"), p.NodePort))
			}
			nodePorts[k] = true
		}
		k := protoPort{p.Protocol, p.Port}
		if ports[k] {
			errs = append(errs, field.Duplicate(portPath, corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[k] = true
	}

	if len(spec.LoadBalancerSourceRanges) > 0 && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("LoadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.ExternalTrafficPolicy != "" {
		if spec.Type != corev1.ServiceTypeLoadBalancer && spec.Type != corev1.ServiceTypeNodePort && len(spec.ExternalIPs) == 0 {
			errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
				"may only be set for externally-accessible services"))
		} else if spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster && spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
				[]corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}))
		}
	}
	if p := spec.InternalTrafficPolicy; p != nil && !supportedTrafficPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p, sets.List(supportedTrafficPolicies)))
	}
	return errs
}

// validateServicePort is the API server's validateServicePort.
func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		errs = append(errs, validateDNS1123Label(sp.Name, fldPath.Child("name"))...)
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), sp.Port, msg))
	}
	if sp.Protocol == "" {
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	} else if !supportedServicePortProtocols.Has(sp.Protocol) {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), sp.Protocol, sets.List(supportedServicePortProtocols)))
	}
	errs = append(errs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	if sp.NodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(sp.NodePort)) {
			errs = append(errs, field.Invalid(fldPath.Child("nodePort"), sp.NodePort, msg))
		}
	}
	return errs
}

func validateClientIPAffinityConfig(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	if cfg == nil {
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP))}
	}
	if cfg.ClientIP == nil {
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP))}
	}
	if cfg.ClientIP.TimeoutSeconds == nil {
		return field.ErrorList{field.Required(fldPath.Child("clientIP").Child("timeoutSeconds"), fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP))}
	}
	if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPServiceAffinitySeconds {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP").Child("timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds))}
	}
	return nil
}

// validateServiceClusterIPs is the part of ValidateServiceClusterIPsRelatedFields
// that a single-stack IPv4 cluster can fail: clusterIP and clusterIPs agree,
// None stands alone, the addresses parse, and nothing asks for IPv6 or
// dual-stack (the registry's "not configured on this cluster" errors).
func validateServiceClusterIPs(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	ipsPath := field.NewPath("spec", "clusterIPs")
	if spec.Type != corev1.ServiceTypeExternalName {
		if len(spec.ClusterIPs) > 0 && spec.ClusterIP != spec.ClusterIPs[0] {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
		for i, ip := range spec.ClusterIPs {
			if i == 0 && ip == corev1.ClusterIPNone {
				if len(spec.ClusterIPs) > 1 {
					errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
				}
				continue
			}
			a, err := netip.ParseAddr(ip)
			if err != nil {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
				continue
			}
			if !a.Is4() {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, "not configured on this cluster: podrun's service network is IPv4 only"))
			}
		}
	}
	if p := spec.IPFamilyPolicy; p != nil {
		if !supportedIPFamilyPolicies.Has(*p) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), *p, sets.List(supportedIPFamilyPolicies)))
		} else if *p == corev1.IPFamilyPolicyRequireDualStack && !(IsHeadlessService(svc) && len(spec.Selector) == 0) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), *p, "this cluster is not configured for dual-stack services"))
		}
	}
	for i, f := range spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
		case corev1.IPv6Protocol:
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		default:
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilies").Index(i), f, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
	}
	return errs
}
