package services

import (
	"net/netip"

	"github.com/podrun/podrun/network"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// labelServiceProxyName is apis.LabelServiceProxyName: a Service with it is
// served by another proxy.
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// proxied is kube-proxy's informer label selector (cmd/kube-proxy/app
// server.go, newProxyServer: !service.kubernetes.io/service-proxy-name,
// !service.kubernetes.io/headless): a Service carrying either label gets no
// rules at all, whatever its type (e2e service.go "should implement
// service.kubernetes.io/service-proxy-name" and "... /headless").
func proxied(svc *corev1.Service) bool {
	_, named := svc.Labels[labelServiceProxyName]
	_, headless := svc.Labels[corev1.IsHeadlessService]
	return !named && !headless
}

// ProxyPorts is what kube-proxy builds from Services and EndpointSlices
// (its ServicePortMap and EndpointsMap) for network.SyncServices: one entry
// per port of every Service with a cluster IP, with the endpoints of the
// slices whose port has the same name and protocol. As CategorizeEndpoints
// does, ready endpoints are used, or, when none is ready, the serving ones
// that are terminating.
func ProxyPorts(svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) []network.ServicePort {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, sl := range slices {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		k := sl.Namespace + "/" + sl.Labels[discoveryv1.LabelServiceName]
		bySvc[k] = append(bySvc[k], sl)
	}
	var out []network.ServicePort
	for _, svc := range svcs {
		if svc.Spec.Type == corev1.ServiceTypeExternalName || !isServiceIPSet(svc) || !proxied(svc) {
			continue
		}
		if _, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			p := network.ServicePort{
				Namespace: svc.Namespace, Name: svc.Name, PortName: sp.Name, Protocol: string(sp.Protocol),
				ClusterIP: svc.Spec.ClusterIP, Port: sp.Port, NodePort: sp.NodePort,
			}
			if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
				p.AffinitySeconds = corev1.DefaultClientIPServiceAffinitySeconds
				if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
					p.AffinitySeconds = *c.ClientIP.TimeoutSeconds
				}
			}
			var ready, terminating []network.ServiceEndpoint
			seen := map[network.ServiceEndpoint]bool{}
			for _, sl := range bySvc[svc.Namespace+"/"+svc.Name] {
				var port int32
				for _, ep := range sl.Ports {
					if ep.Name != nil && *ep.Name == sp.Name && ep.Protocol != nil && *ep.Protocol == sp.Protocol && ep.Port != nil {
						port = *ep.Port
					}
				}
				if port == 0 {
					continue
				}
				for _, e := range sl.Endpoints {
					c := e.Conditions
					isReady := c.Ready == nil || *c.Ready
					serving := c.Serving == nil && isReady || c.Serving != nil && *c.Serving
					term := c.Terminating != nil && *c.Terminating
					for _, a := range e.Addresses {
						se := network.ServiceEndpoint{IP: a, Port: port}
						if seen[se] {
							continue
						}
						seen[se] = true
						switch {
						case isReady:
							ready = append(ready, se)
						case serving && term:
							terminating = append(terminating, se)
						}
					}
				}
			}
			p.Endpoints = ready
			if len(ready) == 0 {
				p.Endpoints = terminating
			}
			out = append(out, p)
		}
	}
	return out
}
