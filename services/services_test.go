package services

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/podrun/podrun/podspec"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func svc(name string, mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(9376)}}}}
	if mut != nil {
		mut(s)
	}
	podspec.SetServiceDefaults(s)
	return s
}

func TestChooseServiceCIDR(t *testing.T) {
	r := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, tc := range []struct {
		flag   string
		routes []netip.Prefix
		want   string
		err    string
	}{
		{"", r("0.0.0.0/0", "192.168.1.0/24"), "10.96.0.0/16", ""},
		{"", r("10.96.0.0/12"), "", "every /16"},
		{"", r("10.96.5.0/24", "10.97.0.0/16"), "10.98.0.0/16", ""},
		// another store's cluster DNS address on lo
		{"", r("0.0.0.0/0", "10.96.0.10/32"), "10.97.0.0/16", ""},
		{"10.216.0.0/24", r("0.0.0.0/0"), "10.216.0.0/24", ""},
		{"10.216.0.0/24", r("10.216.0.0/16"), "", "overlaps the host route 10.216.0.0/16"},
		{"10.216.0.1/24", nil, "", "without host bits"},
	} {
		got, err := ChooseServiceCIDR(tc.flag, tc.routes)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %v: got %v %v, want error %q", tc.flag, tc.routes, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q %v: got %v %v, want %s", tc.flag, tc.routes, got, err, tc.want)
		}
	}
	if got := DNSServiceIP(netip.MustParsePrefix("10.96.0.0/16")); got.String() != "10.96.0.10" {
		t.Errorf("DNS service IP %s, want 10.96.0.10", got)
	}
}

func TestAllocateClusterIP(t *testing.T) {
	a := Allocator{CIDR: netip.MustParsePrefix("10.216.0.0/24"), Reserved: []netip.Addr{netip.MustParseAddr("10.216.0.10")}}
	var existing []*corev1.Service
	seen := map[string]bool{}
	for i := range 20 {
		s := svc(fmt.Sprintf("s%d", i), nil)
		if _, errs := a.Allocate(s, existing); len(errs) > 0 {
			t.Fatal(errs)
		}
		ip := netip.MustParseAddr(s.Spec.ClusterIP)
		if !a.CIDR.Contains(ip) || ip == netip.MustParseAddr("10.216.0.10") || ip == netip.MustParseAddr("10.216.0.0") || ip == netip.MustParseAddr("10.216.0.255") {
			t.Fatalf("allocated %s", ip)
		}
		if seen[ip.String()] {
			t.Fatalf("%s allocated twice", ip)
		}
		seen[ip.String()] = true
		if !reflect.DeepEqual(s.Spec.ClusterIPs, []string{s.Spec.ClusterIP}) || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
			!reflect.DeepEqual(s.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
			t.Fatalf("spec %+v", s.Spec)
		}
		existing = append(existing, s)
	}
	// Re-applying keeps the address; changing it is refused.
	again := svc("s3", nil)
	if _, errs := a.Allocate(again, existing); len(errs) > 0 || again.Spec.ClusterIP != existing[3].Spec.ClusterIP {
		t.Fatalf("re-apply got %s (%v), want %s", again.Spec.ClusterIP, errs, existing[3].Spec.ClusterIP)
	}
	moved := svc("s3", func(s *corev1.Service) { s.Spec.ClusterIP = "10.216.0.200" })
	if _, errs := a.Allocate(moved, existing); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.clusterIPs[0]: Invalid value: \"10.216.0.200\": field is immutable") {
		t.Fatalf("changed clusterIP: %v", errs)
	}
	// Deleted and applied again: the same address while it is free.
	deleted := svc("s5", nil)
	if _, errs := a.Allocate(deleted, append(append([]*corev1.Service{}, existing[:5]...), existing[6:]...)); len(errs) > 0 || deleted.Spec.ClusterIP != existing[5].Spec.ClusterIP {
		t.Fatalf("re-created service got %s, want %s", deleted.Spec.ClusterIP, existing[5].Spec.ClusterIP)
	}

	for _, tc := range []struct{ ip, want string }{
		{"10.1.2.3", `spec.clusterIPs: Invalid value: ["10.1.2.3"]: failed to allocate IP 10.1.2.3: the provided IP (10.1.2.3) is not in the valid range. The range of valid IPs is 10.216.0.0/24`},
		{existing[0].Spec.ClusterIP, "failed to allocate IP " + existing[0].Spec.ClusterIP + ": provided IP is already allocated"},
		{"10.216.0.10", "failed to allocate IP 10.216.0.10: provided IP is already allocated"}, // kube-dns's, reserved
	} {
		s := svc("static", func(s *corev1.Service) { s.Spec.ClusterIP = tc.ip })
		if _, errs := a.Allocate(s, existing); len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("clusterIP %s: %v, want %q", tc.ip, errs, tc.want)
		}
	}
	ok := svc("static", func(s *corev1.Service) { s.Spec.ClusterIP = "10.216.0.5" })
	if _, errs := a.Allocate(ok, existing); len(errs) > 0 || ok.Spec.ClusterIP != "10.216.0.5" {
		t.Errorf("a free static address: %v %s", errs, ok.Spec.ClusterIP)
	}

	headless := svc("h", func(s *corev1.Service) { s.Spec.ClusterIP = "None" })
	if _, errs := a.Allocate(headless, existing); len(errs) > 0 || headless.Spec.ClusterIP != "None" || *headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack {
		t.Errorf("headless without selector: %v %+v", errs, headless.Spec)
	}
	ext := svc("x", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = "example.com"
	})
	if _, errs := a.Allocate(ext, existing); len(errs) > 0 || ext.Spec.ClusterIP != "" || ext.Spec.IPFamilies != nil {
		t.Errorf("ExternalName: %v %+v", errs, ext.Spec)
	}

	tiny := Allocator{CIDR: netip.MustParsePrefix("10.216.1.0/30")}
	s1, s2, s3 := svc("a", nil), svc("b", nil), svc("c", nil)
	tiny.Allocate(s1, nil)
	tiny.Allocate(s2, []*corev1.Service{s1})
	if _, errs := tiny.Allocate(s3, []*corev1.Service{s1, s2}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "range is full") {
		t.Errorf("full range: %v", errs)
	}
}

func TestAllocateNodePorts(t *testing.T) {
	a := Allocator{CIDR: netip.MustParsePrefix("10.216.0.0/24")}
	np := func(name string, ports ...int32) *corev1.Service {
		return svc(name, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports = nil
			for i, p := range ports {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: 80 + int32(i), NodePort: p})
			}
		})
	}
	web := np("web", 0, 30080)
	if _, errs := a.Allocate(web, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if p := web.Spec.Ports[0].NodePort; p < 30000+128 || p > 32767 {
		t.Errorf("dynamic node port %d, want one in the upper band of 30000-32767", p)
	}
	if web.Spec.Ports[1].NodePort != 30080 {
		t.Errorf("given node port changed to %d", web.Spec.Ports[1].NodePort)
	}
	again := np("web", 0, 30080)
	if _, errs := a.Allocate(again, []*corev1.Service{web}); len(errs) > 0 || again.Spec.Ports[0].NodePort != web.Spec.Ports[0].NodePort {
		t.Errorf("re-apply: %v, node port %d want %d", errs, again.Spec.Ports[0].NodePort, web.Spec.Ports[0].NodePort)
	}
	for _, tc := range []struct {
		port int32
		want string
	}{
		{80, "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"},
		{30080, "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"},
	} {
		other := np("other", tc.port)
		if _, errs := a.Allocate(other, []*corev1.Service{web}); len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("node port %d: %v, want %q", tc.port, errs, tc.want)
		}
	}
	lb := svc("lb", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	warn, errs := a.Allocate(lb, nil)
	if len(errs) > 0 || lb.Spec.Ports[0].NodePort == 0 || len(warn) != 1 || !strings.Contains(warn[0], "no load balancer") {
		t.Errorf("LoadBalancer: %v %v %+v", warn, errs, lb.Spec.Ports)
	}
}

func pod(name string, ready bool, mut func(*corev1.Pod)) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.215.0." + fmt.Sprint(len(name)+1),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
	if mut != nil {
		mut(p)
	}
	return p
}

type epView struct {
	ip                          string
	ready, serving, terminating bool
	hostname                    string
}

func TestEndpointSlices(t *testing.T) {
	web := svc("web", func(s *corev1.Service) {
		s.Spec.Selector = map[string]string{"app": "web"}
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}
	})
	now := metav1.Now()
	pods := []*corev1.Pod{
		pod("a", true, nil),
		pod("bb", false, nil),
		pod("ccc", true, func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		pod("dddd", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("eeeee", true, func(p *corev1.Pod) { p.Status.PodIP = "" }),
		pod("ffffff", true, func(p *corev1.Pod) { p.Namespace = "other" }),
		pod("ggggggg", true, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
		// The endpoint's hostname is spec.hostname (ShouldSetHostname), a
		// hostnameOverride notwithstanding: it only names the pod's UTS host.
		pod("hh", true, func(p *corev1.Pod) {
			o := "h0-override"
			p.Spec.Hostname, p.Spec.Subdomain, p.Spec.HostnameOverride, p.Status.PodIP = "h0", "web", &o, "10.215.0.100"
		}),
		pod("no-port", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil; p.Status.PodIP = "10.215.0.101" }),
	}
	view := func(s *corev1.Service) ([]epView, []string) {
		var eps []epView
		var ports []string
		for _, sl := range EndpointSlices(s, pods) {
			if sl.Labels["kubernetes.io/service-name"] != s.Name || sl.AddressType != "IPv4" {
				t.Errorf("slice %+v", sl.ObjectMeta)
			}
			for _, p := range sl.Ports {
				ports = append(ports, fmt.Sprintf("%s/%s/%d", *p.Name, *p.Protocol, *p.Port))
			}
			for _, e := range sl.Endpoints {
				v := epView{ip: e.Addresses[0], ready: *e.Conditions.Ready, serving: *e.Conditions.Serving, terminating: *e.Conditions.Terminating}
				if e.Hostname != nil {
					v.hostname = *e.Hostname
				}
				eps = append(eps, v)
			}
		}
		return eps, ports
	}
	eps, ports := view(web)
	want := []epView{
		{"10.215.0.101", true, true, false, ""}, // in a slice without ports
		{"10.215.0.2", true, true, false, ""},
		{"10.215.0.3", false, false, false, ""},
		{"10.215.0.4", false, true, true, ""},
		{"10.215.0.100", true, true, false, "h0"},
	}
	if !reflect.DeepEqual(eps, want) {
		t.Errorf("endpoints\n got %+v\nwant %+v", eps, want)
	}
	if !reflect.DeepEqual(ports, []string{"http/TCP/8080"}) {
		t.Errorf("ports %v", ports)
	}

	web.Spec.PublishNotReadyAddresses = true
	eps, _ = view(web)
	if !eps[2].ready || !eps[3].ready {
		t.Errorf("publishNotReadyAddresses: %+v", eps)
	}
	if got := EndpointSlices(svc("manual", nil), pods); got != nil {
		t.Errorf("a Service without a selector got slices %v", got)
	}
	// The controller's placeholder: one slice, no endpoints, no ports, the
	// Service's labels and the headless label when it has no cluster IP.
	lonely := svc("lonely", func(s *corev1.Service) {
		s.Spec.Selector = map[string]string{"app": "nobody"}
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Labels = map[string]string{"team": "a", "kubernetes.io/service-name": "spoofed"}
	})
	if got := EndpointSlices(lonely, pods); len(got) != 1 || len(got[0].Endpoints) != 0 || got[0].Ports == nil || len(got[0].Ports) != 0 ||
		got[0].Labels["team"] != "a" || got[0].Labels["kubernetes.io/service-name"] != "lonely" || got[0].Labels[corev1.IsHeadlessService] != "" {
		t.Errorf("placeholder slice: %+v", got)
	} else if _, ok := got[0].Labels[corev1.IsHeadlessService]; !ok {
		t.Errorf("placeholder of a headless Service without %s: %v", corev1.IsHeadlessService, got[0].Labels)
	}

	legacy := LegacyEndpoints(web, pods)
	if len(legacy.Subsets) != 1 || len(legacy.Subsets[0].Addresses) != 4 || len(legacy.Subsets[0].NotReadyAddresses) != 0 {
		t.Errorf("legacy endpoints with publishNotReadyAddresses: %+v", legacy.Subsets)
	}
	web.Spec.PublishNotReadyAddresses = false
	legacy = LegacyEndpoints(web, pods)
	if len(legacy.Subsets) != 1 || len(legacy.Subsets[0].Addresses) != 2 || len(legacy.Subsets[0].NotReadyAddresses) != 1 ||
		legacy.Subsets[0].Addresses[0].Hostname != "h0" || legacy.Subsets[0].Ports[0].Port != 8080 {
		t.Errorf("legacy endpoints: %+v", legacy.Subsets)
	}
}

func TestEnvVars(t *testing.T) {
	svcs := []*corev1.Service{
		svc("my-service", func(s *corev1.Service) {
			s.Spec.ClusterIP = "10.216.0.11"
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}}
		}),
		svc("headless", func(s *corev1.Service) { s.Spec.ClusterIP = "None" }),
		svc("elsewhere", func(s *corev1.Service) { s.Namespace = "other"; s.Spec.ClusterIP = "10.216.0.12" }),
	}
	got := EnvVars("default", true, svcs)
	want := map[string]string{
		"MY_SERVICE_SERVICE_HOST":         "10.216.0.11",
		"MY_SERVICE_SERVICE_PORT":         "80",
		"MY_SERVICE_SERVICE_PORT_HTTP":    "80",
		"MY_SERVICE_SERVICE_PORT_DNS_UDP": "53",
		"MY_SERVICE_PORT":                 "tcp://10.216.0.11:80",
		"MY_SERVICE_PORT_80_TCP":          "tcp://10.216.0.11:80",
		"MY_SERVICE_PORT_80_TCP_PROTO":    "tcp",
		"MY_SERVICE_PORT_80_TCP_PORT":     "80",
		"MY_SERVICE_PORT_80_TCP_ADDR":     "10.216.0.11",
		"MY_SERVICE_PORT_53_UDP":          "udp://10.216.0.11:53",
		"MY_SERVICE_PORT_53_UDP_PROTO":    "udp",
		"MY_SERVICE_PORT_53_UDP_PORT":     "53",
		"MY_SERVICE_PORT_53_UDP_ADDR":     "10.216.0.11",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := EnvVars("default", false, svcs); len(got) != 0 {
		t.Errorf("enableServiceLinks false: %v", got)
	}

	// podspec puts them after the pod's own variables, lets $(VAR) use
	// them, and a variable the pod defines wins.
	plan := &podspec.Plan{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}}
	c := &corev1.Container{Name: "c", Env: []corev1.EnvVar{
		{Name: "URL", Value: "http://$(MY_SERVICE_SERVICE_HOST):$(MY_SERVICE_SERVICE_PORT)"},
		{Name: "MY_SERVICE_PORT", Value: "mine"},
	}}
	env, err := plan.PodEnv(c, podspec.RuntimeInfo{ServiceEnv: got2(svcs)})
	if err != nil {
		t.Fatal(err)
	}
	if env[0] != "URL=http://10.216.0.11:80" || env[1] != "MY_SERVICE_PORT=mine" || len(env) != len(want)+1 {
		t.Errorf("pod env %v", env)
	}
	for _, e := range env[2:] {
		if strings.HasPrefix(e, "MY_SERVICE_PORT=") {
			t.Errorf("service variable overrode the pod's: %v", env)
		}
	}
}

func got2(svcs []*corev1.Service) map[string]string { return EnvVars("default", true, svcs) }

func TestProxyPorts(t *testing.T) {
	web := svc("web", func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.216.0.50"
		s.Spec.Selector = map[string]string{"app": "web"}
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromString("http")}}
	})
	headless := svc("db", func(s *corev1.Service) { s.Spec.ClusterIP = "None"; s.Spec.Selector = map[string]string{"app": "web"} })
	now := metav1.Now()
	pods := []*corev1.Pod{
		pod("a", true, nil),
		pod("bb", false, nil),
	}
	ports := ProxyPorts([]*corev1.Service{web, headless}, append(EndpointSlices(web, pods), EndpointSlices(headless, pods)...))
	if len(ports) != 1 {
		t.Fatalf("got %d ports, want the ClusterIP Service's only: %+v", len(ports), ports)
	}
	p := ports[0]
	if p.ClusterIP != "10.216.0.50" || p.Port != 80 || p.NodePort != 30080 || p.AffinitySeconds != 10800 || p.Protocol != "TCP" ||
		len(p.Endpoints) != 1 || p.Endpoints[0].IP != "10.215.0.2" || p.Endpoints[0].Port != 8080 {
		t.Errorf("port %+v", p)
	}
	// Only terminating pods left: they still serve (CategorizeEndpoints).
	pods = []*corev1.Pod{pod("a", true, func(p *corev1.Pod) { p.DeletionTimestamp = &now })}
	if p := ProxyPorts([]*corev1.Service{web}, EndpointSlices(web, pods))[0]; len(p.Endpoints) != 1 {
		t.Errorf("terminating fallback: %+v", p)
	}
	if p := ProxyPorts([]*corev1.Service{web}, nil)[0]; len(p.Endpoints) != 0 {
		t.Errorf("no slices: %+v", p)
	}
}
