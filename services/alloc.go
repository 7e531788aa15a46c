package services

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// DefaultServiceCIDR is kubeadm's default service range (its
	// --service-cluster-ip-range is 10.96.0.0/12; podrun takes the first /16).
	DefaultServiceCIDR = "10.96.0.0/16"
	// NodePortMin and NodePortMax are the API server's default
	// --service-node-port-range.
	NodePortMin = 30000
	NodePortMax = 32767
)

// ChooseServiceCIDR returns the service range: flag when set (it must be IPv4
// and not overlap a host route), else the first /16 of 10.96.0.0/12 that no
// host route overlaps. routes are the host's route destinations.
func ChooseServiceCIDR(flag string, routes []netip.Prefix) (netip.Prefix, error) {
	overlaps := func(p netip.Prefix) (netip.Prefix, bool) {
		for _, r := range routes {
			if r.Bits() > 0 && r.Overlaps(p) { // the default route overlaps everything
				return r, true
			}
		}
		return netip.Prefix{}, false
	}
	if flag != "" {
		p, err := netip.ParsePrefix(flag)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid service range %q: %w", flag, err)
		}
		if !p.Addr().Is4() || p.Bits() < 12 || p.Bits() > 28 || p != p.Masked() {
			return netip.Prefix{}, fmt.Errorf("invalid service range %q: want an IPv4 network between /12 and /28 without host bits", flag)
		}
		if r, bad := overlaps(p); bad {
			return netip.Prefix{}, fmt.Errorf("service range %s overlaps the host route %s; choose another one", p, r)
		}
		return p, nil
	}
	base := netip.MustParsePrefix(DefaultServiceCIDR).Addr().As4()
	for i := range 16 {
		a := base
		a[1] += byte(i)
		p := netip.PrefixFrom(netip.AddrFrom4(a), 16)
		if _, bad := overlaps(p); !bad {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("every /16 of 10.96.0.0/12 overlaps a host route; choose a service range")
}

// DNSServiceIP is the cluster DNS Service's address: the tenth of the range,
// as kubeadm gives kube-dns (10.96.0.10).
func DNSServiceIP(cidr netip.Prefix) netip.Addr { return nth(cidr, 10) }

// KubernetesServiceIP is the address of the default namespace's kubernetes
// Service: the first of the range, as the API server gives itself
// (controlplane's ServiceIPRange, 10.96.0.1 under kubeadm).
func KubernetesServiceIP(cidr netip.Prefix) netip.Addr { return nth(cidr, 1) }

// KubernetesService is the Service the API server keeps in every cluster
// (pkg/controlplane/reconcilers: default/kubernetes, port https 443 → 6443,
// no selector). podrun has no API server: its cluster DNS names the Service
// and the address is refused at once (see serviceowner).
func KubernetesService(cidr netip.Prefix) *corev1.Service {
	ip := KubernetesServiceIP(cidr).String()
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubernetes", Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip}, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(6443)}},
		},
	}
}

func nth(p netip.Prefix, n uint32) netip.Addr {
	a := p.Masked().Addr().As4()
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+n)
	return netip.AddrFrom4(a)
}

func size(p netip.Prefix) uint32 { return uint32(1) << (32 - p.Bits()) }

// rangeOffset is the API server's calculateRangeOffset: the lower part of a
// range is kept for addresses and ports users choose; dynamic allocation
// starts above it.
func rangeOffset(n uint32) uint32 {
	const lo, hi, step = 16, 256, 16
	if n <= lo {
		return 0
	}
	return min(max(n/step, lo), hi)
}

// Allocator hands out ClusterIPs and node ports as the API server's registry
// does, given every Service that already holds some (the store's).
type Allocator struct {
	CIDR netip.Prefix
	// Reserved addresses are never handed out dynamically (the cluster DNS IP).
	Reserved []netip.Addr
}

// Allocate fills in svc's clusterIP(s), IP families and node ports. existing
// are the Services already on the host; one with svc's namespace and name is
// the Service being re-applied, whose allocations svc keeps (as an update
// keeps them in the API server). The errors are the API server's.
func (a Allocator) Allocate(svc *corev1.Service, existing []*corev1.Service) (warnings []string, errs field.ErrorList) {
	var old *corev1.Service
	usedIPs := map[netip.Addr]bool{}
	usedPorts := map[portKey]string{}
	for _, e := range existing {
		if e.Namespace == svc.Namespace && e.Name == svc.Name {
			old = e
			continue
		}
		for _, ip := range e.Spec.ClusterIPs {
			if addr, err := netip.ParseAddr(ip); err == nil {
				usedIPs[addr] = true
			}
		}
		for _, p := range e.Spec.Ports {
			if p.NodePort != 0 {
				usedPorts[portKey{p.Protocol, p.NodePort}] = e.Namespace + "/" + e.Name
			}
		}
	}
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		spec.ClusterIP, spec.ClusterIPs, spec.IPFamilies, spec.IPFamilyPolicy = "", nil, nil, nil
		return nil, nil
	}
	errs = append(errs, a.allocateIP(svc, old, usedIPs)...)
	errs = append(errs, allocateNodePorts(svc, old, usedPorts)...)
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		warnings = append(warnings, fmt.Sprintf("service %s/%s: podrun has no load balancer; the Service is reachable on its cluster IP and node ports, as a NodePort Service (EXTERNAL-IP stays <pending>)", svc.Namespace, svc.Name))
	}
	return warnings, errs
}

func (a Allocator) allocateIP(svc *corev1.Service, old *corev1.Service, used map[netip.Addr]bool) field.ErrorList {
	spec := &svc.Spec
	ipsPath := field.NewPath("spec", "clusterIPs")
	// The registry's initIPFamilyFields for a single-stack IPv4 cluster.
	policy := corev1.IPFamilyPolicySingleStack
	if len(spec.ClusterIPs) == 1 && spec.ClusterIPs[0] == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		policy = corev1.IPFamilyPolicyRequireDualStack
	}
	if spec.IPFamilyPolicy == nil {
		spec.IPFamilyPolicy = &policy
	}
	spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}

	if old != nil && old.Spec.Type != corev1.ServiceTypeExternalName && len(old.Spec.ClusterIPs) > 0 {
		if spec.ClusterIP == "" {
			spec.ClusterIP, spec.ClusterIPs = old.Spec.ClusterIP, append([]string(nil), old.Spec.ClusterIPs...)
			return nil
		}
		if spec.ClusterIP != old.Spec.ClusterIP {
			return field.ErrorList{field.Invalid(ipsPath.Index(0), spec.ClusterIP, "field is immutable")}
		}
		return nil
	}
	if spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	if spec.ClusterIP != "" {
		ip, err := netip.ParseAddr(spec.ClusterIP)
		if err != nil {
			return nil // validation has reported it
		}
		fail := func(msg string) field.ErrorList {
			return field.ErrorList{field.Invalid(ipsPath, spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %s", ip, msg))}
		}
		first, last := nth(a.CIDR, 0), nth(a.CIDR, size(a.CIDR)-1)
		if !a.CIDR.Contains(ip) || ip == first || ip == last {
			return fail(fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, a.CIDR))
		}
		// The reserved addresses are the kubernetes and kube-dns Services',
		// allocated on a cluster.
		if used[ip] || slices.Contains(a.Reserved, ip) {
			return fail("provided IP is already allocated")
		}
		return nil
	}
	ip, ok := a.next(svc, used)
	if !ok {
		return field.ErrorList{field.InternalError(ipsPath, fmt.Errorf("failed to allocate a serviceIP: range is full"))}
	}
	spec.ClusterIP, spec.ClusterIPs = ip.String(), []string{ip.String()}
	return nil
}

// next picks a free address: the upper band first, then the lower one, as
// the API server's allocator does. Where the API server starts at random,
// podrun starts at a hash of the Service's namespace and name, so that a
// Service deleted and applied again gets its old address back when it is
// still free.
func (a Allocator) next(svc *corev1.Service, used map[netip.Addr]bool) (netip.Addr, bool) {
	n := size(a.CIDR)
	if n < 4 {
		return netip.Addr{}, false
	}
	reserved := map[netip.Addr]bool{}
	for _, r := range a.Reserved {
		reserved[r] = true
	}
	usable := n - 2 // network and broadcast
	off := rangeOffset(n)
	h := fnv.New32a()
	h.Write([]byte(svc.Namespace + "/" + svc.Name))
	seed := h.Sum32()
	free := func(i uint32) (netip.Addr, bool) {
		ip := nth(a.CIDR, i+1)
		return ip, !used[ip] && !reserved[ip]
	}
	for _, band := range [][2]uint32{{off, usable}, {0, off}} {
		width := band[1] - band[0]
		if width == 0 {
			continue
		}
		for k := range width {
			if ip, ok := free(band[0] + (seed+k)%width); ok {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}

type portKey struct {
	proto corev1.Protocol
	port  int32
}

// allocateNodePorts gives NodePort and LoadBalancer Services their node
// ports: a re-applied Service keeps the ones it had for the same port, a
// port given by the user must be in range and free, the others are picked
// as the API server's port allocator does.
func allocateNodePorts(svc *corev1.Service, old *corev1.Service, used map[portKey]string) field.ErrorList {
	spec := &svc.Spec
	needs := spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeLoadBalancer && (spec.AllocateLoadBalancerNodePorts == nil || *spec.AllocateLoadBalancerNodePorts))
	if !needs {
		return nil
	}
	var errs field.ErrorList
	for i := range spec.Ports {
		p := &spec.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if p.NodePort == 0 && old != nil {
			for _, op := range old.Spec.Ports {
				if op.NodePort != 0 && op.Port == p.Port && op.Protocol == p.Protocol {
					p.NodePort = op.NodePort
				}
			}
		}
		if p.NodePort != 0 {
			if p.NodePort < NodePortMin || p.NodePort > NodePortMax {
				errs = append(errs, field.Invalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", NodePortMin, NodePortMax)))
				continue
			}
			if _, taken := used[portKey{p.Protocol, p.NodePort}]; taken {
				errs = append(errs, field.Invalid(path, p.NodePort, "provided port is already allocated"))
				continue
			}
			used[portKey{p.Protocol, p.NodePort}] = svc.Name
			continue
		}
		port, ok := nextNodePort(svc, i, p.Protocol, used)
		if !ok {
			errs = append(errs, field.InternalError(path, fmt.Errorf("failed to allocate a nodePort: range is full")))
			continue
		}
		p.NodePort = port
		used[portKey{p.Protocol, port}] = svc.Name
	}
	return errs
}

func nextNodePort(svc *corev1.Service, i int, proto corev1.Protocol, used map[portKey]string) (int32, bool) {
	n := uint32(NodePortMax - NodePortMin + 1)
	off := min(rangeOffset(n), 128) // the port allocator caps its offset at 128
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", svc.Namespace, svc.Name, i)
	seed := h.Sum32()
	for _, band := range [][2]uint32{{off, n}, {0, off}} {
		width := band[1] - band[0]
		for k := range width {
			port := int32(NodePortMin + band[0] + (seed+k)%width)
			if _, taken := used[portKey{proto, port}]; !taken {
				return port, true
			}
		}
	}
	return 0, false
}
