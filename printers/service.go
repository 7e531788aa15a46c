package printers

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServiceRow is kubectl's row for a Service (printService): NAME TYPE
// CLUSTER-IP EXTERNAL-IP PORT(S) AGE, and SELECTOR with -o wide.
func ServiceRow(svc *corev1.Service, wide bool, now time.Time) []string {
	clusterIP := svc.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	row := []string{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc, wide), servicePorts(svc.Spec.Ports), Since(svc.CreationTimestamp, now)}
	if wide {
		sel := "<none>"
		if len(svc.Spec.Selector) > 0 {
			sel = labels.FormatLabels(svc.Spec.Selector)
		}
		row = append(row, sel)
	}
	return row
}

// serviceExternalIP is kubectl's getServiceExternalIP.
func serviceExternalIP(svc *corev1.Service, wide bool) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				ips = append(ips, ing.IP)
			} else if ing.Hostname != "" {
				ips = append(ips, ing.Hostname)
			}
		}
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) > 0 {
			return strings.Join(ips, ",")
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// servicePorts is kubectl's makePortString: port[:nodePort]/protocol, joined by commas.
func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	var out []string
	for _, p := range ports {
		s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			s = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// EndpointsRow is kubectl's row for Endpoints (printEndpoints): NAME
// ENDPOINTS AGE, the addresses as formatEndpoints lists them (ip:port, three
// at most, then "+ N more...").
func EndpointsRow(ep *corev1.Endpoints, now time.Time) []string {
	return []string{ep.Name, formatEndpoints(ep), Since(ep.CreationTimestamp, now)}
}

func formatEndpoints(ep *corev1.Endpoints) string {
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		ports := ss.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{{}}
		}
		for _, port := range ports {
			for _, a := range ss.Addresses {
				count++
				if len(list) < max {
					if port.Port > 0 {
						list = append(list, fmt.Sprintf("%s:%d", a.IP, port.Port))
					} else {
						list = append(list, a.IP)
					}
				}
			}
		}
	}
	s := strings.Join(list, ",")
	if count > len(list) {
		s += fmt.Sprintf(" + %d more...", count-len(list))
	}
	if s == "" {
		return "<none>"
	}
	return s
}

// DescribeService is kubectl's describe for a Service (describeService),
// with its EndpointSlices' ready addresses per port.
func DescribeService(w io.Writer, svc *corev1.Service, slices []*discoveryv1.EndpointSlice) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &prefixWriter{w: tw}
	kv := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	kv("Name", svc.Name)
	kv("Namespace", svc.Namespace)
	kv("Labels", mapLines(svc.Labels, "="))
	kv("Annotations", mapLines(svc.Annotations, ": "))
	sel := "<none>"
	if len(svc.Spec.Selector) > 0 {
		sel = labels.FormatLabels(svc.Spec.Selector)
	}
	kv("Selector", sel)
	kv("Type", string(svc.Spec.Type))
	if svc.Spec.IPFamilyPolicy != nil {
		kv("IP Family Policy", string(*svc.Spec.IPFamilyPolicy))
	}
	if len(svc.Spec.IPFamilies) > 0 {
		var fams []string
		for _, f := range svc.Spec.IPFamilies {
			fams = append(fams, string(f))
		}
		kv("IP Families", strings.Join(fams, ","))
	} else {
		kv("IP Families", "<none>")
	}
	kv("IP", orNone(svc.Spec.ClusterIP))
	if len(svc.Spec.ClusterIPs) > 0 {
		kv("IPs", strings.Join(svc.Spec.ClusterIPs, ","))
	} else {
		kv("IPs", "<none>")
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		kv("External Name", svc.Spec.ExternalName)
	}
	for _, sp := range svc.Spec.Ports {
		name := sp.Name
		if name == "" {
			name = "<unset>"
		}
		kv("Port", fmt.Sprintf("%s\t%d/%s", name, sp.Port, sp.Protocol))
		if sp.TargetPort.Type == intstr.String {
			kv("TargetPort", fmt.Sprintf("%s/%s", sp.TargetPort.StrVal, sp.Protocol))
		} else {
			kv("TargetPort", fmt.Sprintf("%d/%s", sp.TargetPort.IntVal, sp.Protocol))
		}
		if sp.NodePort != 0 {
			kv("NodePort", fmt.Sprintf("%s\t%d/%s", name, sp.NodePort, sp.Protocol))
		}
		kv("Endpoints", sliceEndpoints(slices, sp.Name))
	}
	kv("Session Affinity", string(svc.Spec.SessionAffinity))
	if svc.Spec.ExternalTrafficPolicy != "" {
		kv("External Traffic Policy", string(svc.Spec.ExternalTrafficPolicy))
	}
	if svc.Spec.InternalTrafficPolicy != nil {
		kv("Internal Traffic Policy", string(*svc.Spec.InternalTrafficPolicy))
	}
	p.line(0, "Events:\t<none>")
	_ = tw.Flush()
}

// sliceEndpoints is kubectl's formatEndpointSlices for one port name: the
// ready addresses with their port, three at most.
func sliceEndpoints(slices []*discoveryv1.EndpointSlice, portName string) string {
	var list []string
	for _, s := range slices {
		for _, port := range s.Ports {
			if port.Name == nil || *port.Name != portName || port.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, a := range ep.Addresses {
					list = append(list, fmt.Sprintf("%s:%d", a, *port.Port))
				}
			}
		}
	}
	sort.Strings(list)
	if len(list) == 0 {
		return "<none>"
	}
	if len(list) > 3 {
		return strings.Join(list[:3], ",") + fmt.Sprintf(" + %d more...", len(list)-3)
	}
	return strings.Join(list, ",")
}

// EndpointSliceRow is kubectl's row for an EndpointSlice (printEndpointSlice):
// NAME ADDRESSTYPE PORTS ENDPOINTS AGE, ports and addresses as
// formatDiscoveryPorts and formatDiscoveryEndpoints list them (three, then
// "+ N more...", "<unset>" for none).
func EndpointSliceRow(sl *discoveryv1.EndpointSlice, now time.Time) []string {
	var ports, addrs []string
	for _, p := range sl.Ports {
		n := "*"
		if p.Port != nil {
			n = fmt.Sprint(*p.Port)
		} else if p.Name != nil {
			n = *p.Name
		}
		ports = append(ports, n)
	}
	for _, ep := range sl.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []string{sl.Name, string(sl.AddressType), listWithMore(ports), listWithMore(addrs), Since(sl.CreationTimestamp, now)}
}

// listWithMore is kubectl's listWithMoreString over the first three items.
func listWithMore(list []string) string {
	const max = 3
	if len(list) > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ","), len(list)-max)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}
