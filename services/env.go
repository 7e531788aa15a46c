package services

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// isServiceIPSet is v1helper.IsServiceIPSet.
func isServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// EnvVars is the kubelet's getServiceEnvVarMap + envvars.FromServices: the
// variables a container of a pod in namespace ns gets for the Services that
// exist when it starts. Only Services with a cluster IP count; with
// enableServiceLinks false only the master services of the default namespace
// would (podrun has no "kubernetes" Service, so none). The map goes to
// podspec.RuntimeInfo.ServiceEnv, which adds the variables the pod does not
// define itself and lets $(VAR) references use them.
func EnvVars(ns string, enableServiceLinks bool, svcs []*corev1.Service) map[string]string {
	m := map[string]string{}
	if !enableServiceLinks {
		return m
	}
	for _, svc := range svcs {
		if svc.Namespace != ns || !isServiceIPSet(svc) || len(svc.Spec.Ports) == 0 {
			continue
		}
		prefix := makeEnvVariableName(svc.Name)
		m[prefix+"_SERVICE_HOST"] = svc.Spec.ClusterIP
		// The first port gets the backwards-compatible name.
		m[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
		for _, sp := range svc.Spec.Ports {
			if sp.Name != "" {
				m[prefix+"_SERVICE_PORT_"+makeEnvVariableName(sp.Name)] = strconv.Itoa(int(sp.Port))
			}
		}
		// Docker-compatible link variables (makeLinkVariables).
		for i, sp := range svc.Spec.Ports {
			proto := string(corev1.ProtocolTCP)
			if sp.Protocol != "" {
				proto = string(sp.Protocol)
			}
			url := fmt.Sprintf("%s://%s", strings.ToLower(proto), net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(sp.Port))))
			if i == 0 {
				m[prefix+"_PORT"] = url
			}
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(proto))
			m[pp] = url
			m[pp+"_PROTO"] = strings.ToLower(proto)
			m[pp+"_PORT"] = strconv.Itoa(int(sp.Port))
			m[pp+"_ADDR"] = svc.Spec.ClusterIP
		}
	}
	return m
}

// makeEnvVariableName is envvars.makeEnvVariableName.
func makeEnvVariableName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
