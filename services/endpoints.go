package services

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The labels the EndpointSlice controller puts on the slices it manages.
const (
	managedBy = "endpointslice-controller.k8s.io"
	// maxEndpointsPerSlice is the controller's default --max-endpoints-per-slice.
	maxEndpointsPerSlice = 100
)

// podReady is podutil.IsPodReady: the Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// shouldPodBeInEndpoints is podutil.ShouldPodBeInEndpoints.
func shouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// FindPort is podutil.FindPort: a named target port is looked up among the
// pod's container ports of the same protocol (app containers, then sidecars,
// as Kubernetes 1.29+), a number is used as it is.
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	switch sp.TargetPort.Type {
	case intstr.String:
		name := sp.TargetPort.StrVal
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
	case intstr.Int:
		return int32(sp.TargetPort.IntValue()), nil
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
}

// selected returns the pods of the Service's namespace its selector matches,
// sorted by name; nil for a Service without a selector (whose endpoints
// someone else manages) and for ExternalName.
func selected(svc *corev1.Service, pods []*corev1.Pod) []*corev1.Pod {
	if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Namespace == svc.Namespace && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// shouldSetHostname is endpointutil.ShouldSetHostname: a pod with a hostname
// whose subdomain names this Service gets a DNS name under it.
func shouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace
}

// EndpointSlices is what the EndpointSlice controller makes for svc from the
// pods of the host (reconciler.reconcile with podToEndpoint): one endpoint
// per pod that should be in endpoints (terminating pods included, marked),
// ready when the pod is Ready or the Service publishes not-ready addresses,
// grouped by the ports each pod resolves, at most 100 per slice. A Service
// without a selector gets none (its endpoints are the user's); one with a
// selector and no endpoints gets the controller's placeholder. Slice names
// are stable for the same Service and ports.
func EndpointSlices(svc *corev1.Service, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	type group struct {
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	var keys []string
	for _, pod := range selected(svc, pods) {
		if !shouldPodBeInEndpoints(pod, true) {
			continue
		}
		var ports []discoveryv1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := FindPort(pod, sp)
			if err != nil {
				continue
			}
			name, proto, port := sp.Name, sp.Protocol, n
			ports = append(ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port, AppProtocol: sp.AppProtocol})
		}
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{ports: ports}
			groups[key] = g
			keys = append(keys, key)
		}
		ready := podReady(pod)
		serving := ready
		terminating := pod.DeletionTimestamp != nil
		epReady := svc.Spec.PublishNotReadyAddresses || (ready && !terminating)
		ep := discoveryv1.Endpoint{
			Addresses:  []string{podIP(pod)},
			Conditions: discoveryv1.EndpointConditions{Ready: &epReady, Serving: &serving, Terminating: &terminating},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			node := pod.Spec.NodeName
			ep.NodeName = &node
		}
		if shouldSetHostname(pod, svc) {
			h := pod.Spec.Hostname
			ep.Hostname = &h
		}
		g.endpoints = append(g.endpoints, ep)
	}
	sort.Strings(keys)
	if len(keys) == 0 && svc.Spec.Selector != nil && svc.Spec.Type != corev1.ServiceTypeExternalName {
		// reconciler.finalize: "When no endpoint slices would usually exist,
		// we need to add a placeholder": one slice with no endpoints and no
		// ports (endpointslice.go e2e expects it for a Service without pods).
		keys = []string{"placeholder"}
		groups["placeholder"] = &group{ports: []discoveryv1.EndpointPort{}}
	}
	var out []*discoveryv1.EndpointSlice
	for _, key := range keys {
		g := groups[key]
		for start, part := 0, 0; start < max(len(g.endpoints), 1); start, part = start+maxEndpointsPerSlice, part+1 {
			end := min(start+maxEndpointsPerSlice, len(g.endpoints))
			out = append(out, &discoveryv1.EndpointSlice{
				TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
				ObjectMeta: metav1.ObjectMeta{
					Name:         sliceName(svc.Name, fmt.Sprintf("%s/%d", key, part)),
					GenerateName: svc.Name + "-",
					Namespace:    svc.Namespace,
					Labels:       sliceLabels(svc),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
						Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
				},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   slices.Clone(g.endpoints[start:end]),
				Ports:       g.ports,
			})
		}
	}
	return out
}

// sliceLabels is the controller's setEndpointSliceLabels: the Service's
// labels except the reserved ones, service.kubernetes.io/headless when the
// Service has no cluster IP, and the service-name and managed-by labels.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		switch k {
		case discoveryv1.LabelServiceName, discoveryv1.LabelManagedBy, corev1.IsHeadlessService:
			continue // reserved
		}
		out[k] = v
	}
	if !isServiceIPSet(svc) {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = managedBy
	return out
}

func ptr[T any](v T) *T { return &v }

func podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return pod.Status.PodIPs[0].IP
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d,", *p.Name, *p.Protocol, *p.Port)
	}
	return b.String()
}

// sliceName stands in for the generated name (<service>-<random 5>): the
// suffix comes from the ports the slice serves, so a sync that finds the
// same ports keeps the same name.
func sliceName(svc, key string) string {
	sum := sha256.Sum256([]byte(key))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	base := svc + "-"
	if len(base) > 58 {
		base = base[:58]
	}
	return base + string(b)
}

// LegacyEndpoints is the Endpoints object the endpoints controller keeps for
// svc (syncService): ready pods in addresses, others in notReadyAddresses
// (all in addresses when the Service publishes not-ready addresses),
// terminating pods left out, subsets grouped by resolved ports as
// RepackSubsets does. nil for a Service without a selector.
func LegacyEndpoints(svc *corev1.Service, pods []*corev1.Pod) *corev1.Endpoints {
	if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ep := &corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: map[string]string{}},
	}
	for k, v := range svc.Labels {
		ep.Labels[k] = v
	}
	if IsHeadless(svc) {
		ep.Labels[corev1.IsHeadlessService] = ""
	}
	subsets := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, pod := range selected(svc, pods) {
		if !shouldPodBeInEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		addr := corev1.EndpointAddress{IP: podIP(pod), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if pod.Spec.NodeName != "" {
			node := pod.Spec.NodeName
			addr.NodeName = &node
		}
		if shouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		var ports []corev1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := FindPort(pod, sp)
			if err != nil {
				continue
			}
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) == 0 && IsHeadless(svc) {
			ports = nil // a headless Service without ports still lists its addresses
		} else if len(ports) == 0 {
			continue
		}
		var b strings.Builder
		for _, p := range ports {
			fmt.Fprintf(&b, "%s/%s/%d,", p.Name, p.Protocol, p.Port)
		}
		key := b.String()
		s := subsets[key]
		if s == nil {
			s = &corev1.EndpointSubset{Ports: ports}
			subsets[key] = s
			keys = append(keys, key)
		}
		if svc.Spec.PublishNotReadyAddresses || podReady(pod) {
			s.Addresses = append(s.Addresses, addr)
		} else {
			s.NotReadyAddresses = append(s.NotReadyAddresses, addr)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := subsets[k]
		sortAddrs(s.Addresses)
		sortAddrs(s.NotReadyAddresses)
		ep.Subsets = append(ep.Subsets, *s)
	}
	return ep
}

func sortAddrs(a []corev1.EndpointAddress) {
	sort.Slice(a, func(i, j int) bool { return a[i].IP < a[j].IP })
}

// IsHeadless reports clusterIP None.
func IsHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone
}
