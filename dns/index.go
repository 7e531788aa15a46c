package dns

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// index is a snapshot arranged for lookups, as CoreDNS's controller keeps
// its service and endpoint indexes.
type index struct {
	serial     uint32
	namespaces map[string]bool
	services   map[string]*corev1.Service // "name.namespace"
	endpoints  map[string][]endpoint      // "name.namespace", ready ones only
	// byIP answers reverse questions: cluster IPs first, then endpoints.
	svcByIP map[string]*corev1.Service
	epByIP  map[string][]epRef
}

// endpoint is one ready address of a Service with its ports (CoreDNS's
// object.EndpointAddress within a subset).
type endpoint struct {
	ip       string
	hostname string
	ports    []epPort
}

type epPort struct {
	name, protocol string
	port           int32
}

type epRef struct {
	svc, namespace string
	ep             endpoint
}

func key(name, ns string) string { return name + "." + ns }

func buildIndex(snap Snapshot, serial uint32) *index {
	x := &index{
		serial:     serial,
		namespaces: map[string]bool{},
		services:   map[string]*corev1.Service{},
		endpoints:  map[string][]endpoint{},
		svcByIP:    map[string]*corev1.Service{},
		epByIP:     map[string][]epRef{},
	}
	for _, ns := range snap.Namespaces {
		x.namespaces[ns] = true
	}
	for _, s := range snap.Services {
		x.namespaces[s.Namespace] = true
		x.services[key(s.Name, s.Namespace)] = s
		for _, ip := range s.Spec.ClusterIPs {
			if ip != corev1.ClusterIPNone && ip != "" {
				x.svcByIP[ip] = s
			}
		}
	}
	for _, sl := range snap.EndpointSlices {
		svc := sl.Labels[discoveryv1.LabelServiceName]
		if svc == "" || sl.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var ports []epPort
		for _, p := range sl.Ports {
			ep := epPort{}
			if p.Name != nil {
				ep.name = *p.Name
			}
			if p.Protocol != nil {
				ep.protocol = string(*p.Protocol)
			}
			if p.Port != nil {
				ep.port = *p.Port
			} else {
				ep.port = -1
			}
			ports = append(ports, ep)
		}
		if len(ports) == 0 {
			// CoreDNS gives an endpoint without ports port -1, which SRV skips.
			ports = []epPort{{port: -1}}
		}
		for _, e := range sl.Endpoints {
			// endpointsliceutil.EndpointReady: a nil condition counts as ready.
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				ep := endpoint{ip: a, ports: ports}
				if e.Hostname != nil {
					ep.hostname = *e.Hostname
				}
				k := key(svc, sl.Namespace)
				x.endpoints[k] = append(x.endpoints[k], ep)
				x.epByIP[a] = append(x.epByIP[a], epRef{svc: svc, namespace: sl.Namespace, ep: ep})
			}
		}
	}
	return x
}

// endpointHostname is CoreDNS's endpointHostname: the endpoint's hostname, or
// its address with dashes.
func endpointHostname(ep endpoint) string {
	if ep.hostname != "" {
		return ep.hostname
	}
	if strings.Contains(ep.ip, ".") {
		return strings.ReplaceAll(ep.ip, ".", "-")
	}
	return strings.ReplaceAll(ep.ip, ":", "-")
}
