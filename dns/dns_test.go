package dns

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/services"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// upstream runs a resolver on loopback that knows a few outside names.
func upstream(t *testing.T) string {
	t.Helper()
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		q := r.Question[0]
		switch {
		case q.Name == "example.org." && q.Qtype == mdns.TypeA:
			m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.1")}}
		case q.Name == "db.example.com." && q.Qtype == mdns.TypeA:
			m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.7")}}
		case q.Name == "9.9.9.10.in-addr.arpa." && q.Qtype == mdns.TypePTR:
			m.Answer = []mdns.RR{&mdns.PTR{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypePTR, Class: mdns.ClassINET, Ttl: 60}, Ptr: "upstream.example."}}
		default:
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		<-started
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

func readyPod(name, ns, ip string, labels map[string]string, mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if mut != nil {
		mut(p)
	}
	return p
}

func service(name, ns, clusterIP string, mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	if mut != nil {
		mut(s)
	}
	podspec.SetServiceDefaults(s)
	return s
}

func snapshot() Snapshot {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	pods := []*corev1.Pod{
		readyPod("web-1", "default", "10.215.0.11", web, nil),
		readyPod("web-2", "default", "10.215.0.12", web, nil),
		readyPod("web-3", "default", "10.215.0.13", web, func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
		readyPod("db-0", "default", "10.215.0.20", db, func(p *corev1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" }),
		readyPod("db-1", "default", "10.215.0.21", db, func(p *corev1.Pod) { p.Spec.Hostname = "db-1"; p.Spec.Subdomain = "db" }),
	}
	svcs := []*corev1.Service{
		service("web", "default", "10.216.0.50", func(s *corev1.Service) { s.Spec.Selector = web }),
		service("db", "default", "None", func(s *corev1.Service) { s.Spec.Selector = db }),
		service("empty", "default", "None", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "none"} }),
		service("myservice", "default", "10.216.0.51", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(9376)}}
		}),
		service("ext", "team-a", "", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "db.example.com", nil
		}),
		service("inner", "team-a", "", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "web.default.svc.cluster.local", nil
		}),
		service("chain", "team-a", "", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "inner.team-a.svc.cluster.local", nil
		}),
		service("dangling", "team-a", "", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "missing.default.svc.cluster.local", nil
		}),
		service("gone", "team-a", "", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Ports = corev1.ServiceTypeExternalName, "gone.example.com", nil
		}),
	}
	var slices []*discoveryv1.EndpointSlice
	for _, s := range svcs {
		slices = append(slices, services.EndpointSlices(s, pods)...)
	}
	return Snapshot{Namespaces: []string{"default", "kube-system", "team-a"}, Services: svcs, EndpointSlices: slices}
}

func startServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := New(Config{Upstreams: []string{upstream(t)}, NameserverIP: "10.216.0.10"})
	s.Update(snapshot())
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s, addr
}

func query(t *testing.T, addr, proto, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(name, qtype)
	c := &mdns.Client{Net: proto, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", name, mdns.TypeToString[qtype], err)
	}
	return r
}

// rrs renders a section without the TTL-independent noise, sorted.
func rrs(section []mdns.RR) []string {
	var out []string
	for _, rr := range section {
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	sort.Strings(out)
	return out
}

func TestClusterDomain(t *testing.T) {
	_, addr := startServer(t)
	soa := func(r *mdns.Msg) string {
		if len(r.Ns) != 1 {
			return fmt.Sprintf("%d authority records", len(r.Ns))
		}
		s := r.Ns[0].(*mdns.SOA)
		return fmt.Sprintf("%s %d %s %s %d %d %d %d", s.Hdr.Name, s.Hdr.Ttl, s.Ns, s.Mbox, s.Refresh, s.Retry, s.Expire, s.Minttl)
	}
	const wantSOA = "cluster.local. 30 ns.dns.cluster.local. hostmaster.cluster.local. 7200 1800 86400 30"
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		ans   []string
		extra []string
	}{
		{"web.default.svc.cluster.local.", mdns.TypeA, 0, []string{"web.default.svc.cluster.local. 30 IN A 10.216.0.50"}, nil},
		{"WEB.Default.svc.cluster.local.", mdns.TypeA, 0, []string{"WEB.Default.svc.cluster.local. 30 IN A 10.216.0.50"}, nil},
		{"myservice.default.svc.cluster.local.", mdns.TypeA, 0, []string{"myservice.default.svc.cluster.local. 30 IN A 10.216.0.51"}, nil},
		{"web.default.svc.cluster.local.", mdns.TypeAAAA, 0, nil, nil}, // NODATA
		{"db.default.svc.cluster.local.", mdns.TypeA, 0, []string{
			"db.default.svc.cluster.local. 30 IN A 10.215.0.20", "db.default.svc.cluster.local. 30 IN A 10.215.0.21"}, nil},
		{"db-1.db.default.svc.cluster.local.", mdns.TypeA, 0, []string{"db-1.db.default.svc.cluster.local. 30 IN A 10.215.0.21"}, nil},
		{"10-215-0-11.web.default.svc.cluster.local.", mdns.TypeA, 0, []string{"10-215-0-11.web.default.svc.cluster.local. 30 IN A 10.215.0.11"}, nil},
		{"10-215-0-13.web.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil}, // not ready
		{"empty.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},           // headless, no ready endpoints
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, 0,
			[]string{"_http._tcp.web.default.svc.cluster.local. 30 IN SRV 0 100 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. 30 IN A 10.216.0.50"}},
		{"_http._tcp.db.default.svc.cluster.local.", mdns.TypeSRV, 0, []string{
			"_http._tcp.db.default.svc.cluster.local. 30 IN SRV 0 50 8080 db-0.db.default.svc.cluster.local.",
			"_http._tcp.db.default.svc.cluster.local. 30 IN SRV 0 50 8080 db-1.db.default.svc.cluster.local."},
			[]string{"db-0.db.default.svc.cluster.local. 30 IN A 10.215.0.20", "db-1.db.default.svc.cluster.local. 30 IN A 10.215.0.21"}},
		{"_https._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeNameError, nil, nil},
		{"_http._udp.web.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeNameError, nil, nil},
		{"ext.team-a.svc.cluster.local.", mdns.TypeA, 0, []string{
			"db.example.com. 60 IN A 192.0.2.7", "ext.team-a.svc.cluster.local. 30 IN CNAME db.example.com."}, nil},
		{"ext.team-a.svc.cluster.local.", mdns.TypeCNAME, 0, []string{"ext.team-a.svc.cluster.local. 30 IN CNAME db.example.com."}, nil},
		// plugin.A: a target in the zone is answered from the cluster's
		// records, CNAME by CNAME; one without addresses leaves NODATA.
		{"inner.team-a.svc.cluster.local.", mdns.TypeA, 0, []string{
			"inner.team-a.svc.cluster.local. 30 IN CNAME web.default.svc.cluster.local.", "web.default.svc.cluster.local. 30 IN A 10.216.0.50"}, nil},
		{"chain.team-a.svc.cluster.local.", mdns.TypeA, 0, []string{
			"chain.team-a.svc.cluster.local. 30 IN CNAME inner.team-a.svc.cluster.local.",
			"inner.team-a.svc.cluster.local. 30 IN CNAME web.default.svc.cluster.local.", "web.default.svc.cluster.local. 30 IN A 10.216.0.50"}, nil},
		{"dangling.team-a.svc.cluster.local.", mdns.TypeA, 0, nil, nil},
		// An upstream NXDOMAIN for the target keeps the CNAME (b.Lookup succeeded).
		{"gone.team-a.svc.cluster.local.", mdns.TypeA, 0, []string{"gone.team-a.svc.cluster.local. 30 IN CNAME gone.example.com."}, nil},
		{"10-215-0-99.default.pod.cluster.local.", mdns.TypeA, 0, []string{"10-215-0-99.default.pod.cluster.local. 30 IN A 10.215.0.99"}, nil},
		{"10-215-0-99.nowhere.pod.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"not-an-ip.default.pod.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"missing.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"web.nowhere.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"default.svc.cluster.local.", mdns.TypeA, 0, nil, nil},
		{"web.default.other.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		// A search-path expansion of a full name is too long: NXDOMAIN, so the resolver moves on.
		{"web.default.svc.cluster.local.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"cluster.local.", mdns.TypeNS, 0, []string{"cluster.local. 30 IN NS ns.dns.cluster.local."}, []string{"ns.dns.cluster.local. 30 IN A 10.216.0.10"}},
		{"dns-version.cluster.local.", mdns.TypeTXT, 0, []string{`dns-version.cluster.local. 30 IN TXT "1.1.0"`}, nil},
		{"50.0.216.10.in-addr.arpa.", mdns.TypePTR, 0, []string{"50.0.216.10.in-addr.arpa. 30 IN PTR web.default.svc.cluster.local."}, nil},
		{"21.0.215.10.in-addr.arpa.", mdns.TypePTR, 0, []string{"21.0.215.10.in-addr.arpa. 30 IN PTR db-1.db.default.svc.cluster.local."}, nil},
		{"9.9.9.10.in-addr.arpa.", mdns.TypePTR, 0, []string{"9.9.9.10.in-addr.arpa. 60 IN PTR upstream.example."}, nil}, // fallthrough
		{"example.org.", mdns.TypeA, 0, []string{"example.org. 60 IN A 192.0.2.1"}, nil},
		{"nothing.example.org.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(proto+" "+tc.name+" "+mdns.TypeToString[tc.qtype], func(t *testing.T) {
				r := query(t, addr, proto, tc.name, tc.qtype)
				if r.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s\n%v", mdns.RcodeToString[r.Rcode], mdns.RcodeToString[tc.rcode], r)
				}
				if got := rrs(r.Answer); strings.Join(got, "\n") != strings.Join(tc.ans, "\n") {
					t.Errorf("answer\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.ans, "\n"))
				}
				var extra []mdns.RR
				for _, rr := range r.Extra {
					if rr.Header().Rrtype != mdns.TypeOPT {
						extra = append(extra, rr)
					}
				}
				if got := rrs(extra); strings.Join(got, "\n") != strings.Join(tc.extra, "\n") {
					t.Errorf("additional\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.extra, "\n"))
				}
				inZone := mdns.IsSubDomain("cluster.local.", mdns.CanonicalName(tc.name)) || strings.HasSuffix(tc.name, ".10.in-addr.arpa.") && tc.name != "9.9.9.10.in-addr.arpa."
				if inZone && !r.Authoritative {
					t.Error("answer from the cluster domain is not authoritative")
				}
				if inZone && len(tc.ans) == 0 {
					if got := soa(r); got != wantSOA {
						t.Errorf("authority %q, want the SOA %q", got, wantSOA)
					}
				}
			})
		}
	}
}

func TestUpdateChangesAnswers(t *testing.T) {
	s, addr := startServer(t)
	if r := query(t, addr, "udp", "web.default.svc.cluster.local.", mdns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("before: %v", r)
	}
	s.Update(Snapshot{Namespaces: []string{"default"}})
	if r := query(t, addr, "udp", "web.default.svc.cluster.local.", mdns.TypeA); r.Rcode != mdns.RcodeNameError {
		t.Fatalf("after the Service is gone: %v", r)
	}
}

func TestUpstreamFailure(t *testing.T) {
	s := New(Config{Upstreams: []string{"127.0.0.1:1"}, UpstreamTimeout: 300 * time.Millisecond})
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if r := query(t, addr, "udp", "example.org.", mdns.TypeA); r.Rcode != mdns.RcodeServerFailure {
		t.Fatalf("got %v, want SERVFAIL", r)
	}
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	f := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(f, []byte("search example.com\nnameserver 192.0.2.53\nnameserver 10.216.0.10\nnameserver fd00::53\noptions ndots:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := UpstreamsFromResolvConf(f, "10.216.0.10")
	if err != nil || strings.Join(got, " ") != "192.0.2.53:53 [fd00::53]:53" {
		t.Fatalf("got %v %v", got, err)
	}
}

func BenchmarkQuery(b *testing.B) {
	s := New(Config{})
	s.Update(snapshot())
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	c := &mdns.Client{Net: "udp", Timeout: 5 * time.Second}
	m := new(mdns.Msg)
	m.SetQuestion("web.default.svc.cluster.local.", mdns.TypeA)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := c.Exchange(m, addr); err != nil {
			b.Fatal(err)
		}
	}
}
