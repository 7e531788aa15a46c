package integration

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
	"github.com/podrun/podrun/dns"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/services"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// loopbackResolver answers outside.test on 127.0.0.1, standing in for the
// host's upstream resolver.
func loopbackResolver(t *testing.T) string {
	t.Helper()
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		if q.Name == "outside.test." && q.Qtype == mdns.TypeA {
			m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.1")}}
		} else if q.Name != "outside.test." {
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: h}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

const webBackend = `
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  hostname: %s
  subdomain: %s
  containers:
  - name: httpd
    image: busybox:1.28
    ports: [{name: http, containerPort: 8080}]
    command: ['sh', '-c', 'mkdir -p /www && hostname > /www/index.html && trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait']
`

// The Service pieces wired by hand, as the services owner will wire them
// once the host store exists: real pods, their EndpointSlices, kube-proxy's
// rules and the cluster DNS on the bridge, reached from a third pod through
// the kube-dns ClusterIP.
func TestServicesWiredByHand(t *testing.T) {
	e := newEnv(t)
	subnet := netip.MustParsePrefix(e.subnet)
	gateway := subnet.Addr().Next()
	third := subnet.Addr().As4()[2]
	svcCIDR := netip.MustParsePrefix(fmt.Sprintf("10.216.%d.0/24", third))
	dnsIP := services.DNSServiceIP(svcCIDR)
	netCfg := network.Config{RunRoot: e.runRoot, StateDir: filepath.Join(e.root, "network"), Bridge: e.bridge, Subnet: e.subnet}

	e.apply(fmt.Sprintf(webBackend, "web-1", "web", "web-1", "none")+"---"+
		fmt.Sprintf(webBackend, "web-2", "web", "web-2", "none")+"---"+
		fmt.Sprintf(webBackend, "db-0", "db", "db-0", "db")+"---"+`
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  dnsPolicy: None
  dnsConfig:
    nameservers: [`+dnsIP.String()+`]
    searches: [default.svc.cluster.local, svc.cluster.local, cluster.local]
    options: [{name: ndots, value: "5"}]
  containers:
  - name: c
    image: busybox:1.28
    command: `+netIdle+`
`, "--wait")
	var pods []*corev1.Pod
	for _, n := range []string{"web-1", "web-2", "db-0", "client"} {
		pods = append(pods, e.pod(n))
	}

	mk := func(name string, mut func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
		mut(s)
		podspec.SetServiceDefaults(s)
		if errs := podspec.ValidateService(s); len(errs) > 0 {
			t.Fatal(errs)
		}
		return s
	}
	svcs := []*corev1.Service{
		mk("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} }),
		mk("db", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "db"}; s.Spec.ClusterIP = "None" }),
		mk("myservice", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(9376) }),
	}
	alloc := services.Allocator{CIDR: svcCIDR, Reserved: []netip.Addr{dnsIP}}
	for i, s := range svcs {
		if _, errs := alloc.Allocate(s, svcs[:i]); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	var slices []*discoveryv1.EndpointSlice
	for _, s := range svcs {
		slices = append(slices, services.EndpointSlices(s, pods)...)
	}
	ports := services.ProxyPorts(svcs, slices)
	for _, proto := range []string{"UDP", "TCP"} {
		ports = append(ports, network.ServicePort{Namespace: "kube-system", Name: "kube-dns", PortName: "dns-" + strings.ToLower(proto), Protocol: proto,
			ClusterIP: dnsIP.String(), Port: 53, Endpoints: []network.ServiceEndpoint{{IP: gateway.String(), Port: 53}}})
	}
	if err := network.SyncServices(context.Background(), netCfg, ports); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := network.SyncServices(context.Background(), netCfg, nil); err != nil {
			t.Error(err)
		}
	})
	srv := dns.New(dns.Config{Upstreams: []string{loopbackResolver(t)}, NameserverIP: dnsIP.String()})
	srv.Update(dns.Snapshot{Namespaces: []string{"default", "kube-system"}, Services: svcs, EndpointSlices: slices})
	if _, err := srv.Start(net.JoinHostPort(gateway.String(), "53")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown() })

	webIP, myIP := svcs[0].Spec.ClusterIP, svcs[2].Spec.ClusterIP
	sh := func(script string) result { return e.podrun("exec", "client", "--", "sh", "-c", script) }

	// busybox's nslookup asks every search domain at once and exits 1 when
	// one of them is NXDOMAIN (on a cluster too); the answer is what counts.
	for _, name := range []string{"web.default.svc.cluster.local", "web"} {
		if r := sh("nslookup " + name); !strings.Contains(r.stdout, "Name:\tweb.default.svc.cluster.local\nAddress: "+webIP+"\n") {
			t.Errorf("nslookup %s: %s; want %s", name, r, webIP)
		}
	}
	if r := sh("nslookup db-0.db.default.svc.cluster.local"); r.code != 0 || !strings.Contains(r.stdout, pods[2].Status.PodIP) {
		t.Errorf("hostname.subdomain: %s; want %s", r, pods[2].Status.PodIP)
	}
	if r := sh("nslookup myservice"); !strings.Contains(r.stdout, myIP) {
		t.Errorf("a Service without a selector resolves: %s; want %s", r, myIP)
	}
	if r := sh("nslookup outside.test"); r.code != 0 || !strings.Contains(r.stdout, "192.0.2.1") {
		t.Errorf("forwarded name: %s", r)
	}
	if r := sh("nslookup nothing.default.svc.cluster.local"); r.code == 0 {
		t.Errorf("an unknown name resolved: %s", r)
	}

	// nc, not wget: the test image's static busybox wget crashes in glibc's NSS.
	get := `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s 80 | tail -n 1`
	r := sh(fmt.Sprintf("for i in $(seq 1 30); do "+get+"; done", webIP))
	if r.code != 0 || !strings.Contains(r.stdout, "web-1") || !strings.Contains(r.stdout, "web-2") {
		t.Errorf("30 requests to the ClusterIP: %s; want both backends", r)
	}
	// Refused (the reject's ICMP port unreachable), not a timeout; the
	// network package's test measures that it comes at once.
	r = sh(fmt.Sprintf(get, myIP))
	if !strings.Contains(r.stderr, "Connection refused") {
		t.Errorf("no endpoints: %s; want connection refused", r)
	}
	// A pod reaching itself through its Service (hairpin).
	if r := e.podrun("exec", "web-1", "--", "sh", "-c", fmt.Sprintf(strings.Repeat(get+";", 6), webIP, webIP, webIP, webIP, webIP, webIP)); !strings.Contains(r.stdout, "web-") {
		t.Errorf("hairpin: %s", r)
	}
}

// Until the host store records Services, a file with one is refused whole
// (its pods are not run without their Services), after the Service was
// validated as the API server would.
func TestApplyRefusesServicesUntilWired(t *testing.T) {
	e := newEnv(t)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: busybox:1.28, command: ['true']}]}\n"
	r := e.podrun("apply", e.manifest(pod+"---\napiVersion: v1\nkind: Service\nmetadata: {name: myservice}\nspec: {ports: [{port: 80, targetPort: 9376}]}\n"))
	if r.code != 2 || !strings.Contains(r.stderr, `kind Service is not supported yet (service "myservice" is valid`) {
		t.Errorf("apply with a Service: %s", r)
	}
	r = e.podrun("apply", e.manifest(pod+"---\napiVersion: v1\nkind: Service\nmetadata: {name: my_service}\nspec: {ports: [{port: 80, protocol: HTTP}]}\n"))
	if r.code != 2 || !strings.Contains(r.stderr, `service "my_service": metadata.name: Invalid value: "my_service": a DNS-1035 label`) ||
		!strings.Contains(r.stderr, `spec.ports[0].protocol: Unsupported value: "HTTP"`) {
		t.Errorf("apply with an invalid Service: %s", r)
	}
	if out := e.must("get").stdout; strings.Contains(out, "p ") {
		t.Errorf("a pod was created: %s", out)
	}
}
