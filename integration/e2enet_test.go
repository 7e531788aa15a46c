package integration

// Scenarios of Kubernetes' test/e2e/network (dns.go, service.go,
// endpointslice.go) that apply to one host, run against podrun. The DNS
// questions go from the test straight to the cluster DNS (the kube-dns
// address, local to the host while the services owner runs), so the answers
// (rcode, TTL, sections) are checked as dig shows them.

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// neClusterDNS is the kube-dns address (.10 of the env's Service range),
// where the services owner serves DNS.
func neClusterDNS(e *env) string {
	return strings.TrimSuffix(e.serviceCIDR, "0/24") + "10"
}

// neAsk sends one question to the env's cluster DNS over UDP.
func neAsk(t *testing.T, e *env, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), qtype)
	m.RecursionDesired = true
	c := &mdns.Client{Timeout: 3 * time.Second}
	var lastErr error
	for i := 0; i < 3; i++ {
		r, _, err := c.Exchange(m, net.JoinHostPort(neClusterDNS(e), "53"))
		if err == nil {
			return r
		}
		lastErr = err
	}
	t.Fatalf("%s %s: %v", name, mdns.TypeToString[qtype], lastErr)
	return nil
}

// neAskUntil repeats a question until ok holds (the owner follows the
// store's changes after its debounce) or 10 s pass.
func neAskUntil(t *testing.T, e *env, name string, qtype uint16, ok func(*mdns.Msg) bool) *mdns.Msg {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second * timeoutScale)
	for {
		r := neAsk(t, e, name, qtype)
		if ok(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// neRRs prints a section's records one a line, as dig shows them.
func neRRs(rrs []mdns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return strings.Join(out, "\n")
}

func neHas(rrs []mdns.RR, want string) bool {
	for _, rr := range rrs {
		if strings.ReplaceAll(rr.String(), "\t", " ") == want {
			return true
		}
	}
	return false
}

const neDNSManifest = `
apiVersion: v1
kind: Service
metadata: {name: ne-dns-test-service}
spec:
  clusterIP: None
  selector: {ne-dns-test: "true"}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-test-service-2}
spec:
  selector: {ne-dns-test: "true"}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-unready}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {ne-unready: "true"}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: ne-querier, labels: {ne-dns-test: "true"}}
spec:
  hostname: dns-querier-1
  subdomain: ne-dns-test-service
  containers:
  - name: c
    image: busybox:1.28
    ports: [{name: http, containerPort: 8080}]
    command: ` + netIdle + `
`

// neNotReadyPod never turns Ready.
const neNotReadyPod = `
apiVersion: v1
kind: Pod
metadata: {name: ne-notready, labels: {ne-unready: "true"}}
spec:
  hostname: nr-0
  subdomain: ne-unready
  containers:
  - name: c
    image: busybox:1.28
    readinessProbe: {exec: {command: ['false']}, periodSeconds: 1}
    command: ` + netIdle + `
`

// dns.go "should provide DNS for services", "... for pods for Hostname and
// Subdomain", "... /etc/hosts entries for the cluster", "should create
// endpoints for unready pods" (publishNotReadyAddresses), with the answers
// CoreDNS's kubernetes plugin gives (kubeadm's Corefile: ttl 30).
func TestE2ENetDNSRecords(t *testing.T) {
	e := newEnv(t)
	e.apply(neDNSManifest, "--wait")
	e.apply(neNotReadyPod)
	q := e.pod("ne-querier")
	ip := q.Status.PodIP
	nr := e.waitFor("ne-notready", 30*time.Second, "an address", func(p *corev1.Pod) bool { return p.Status.PodIP != "" })
	nrIP := nr.Status.PodIP
	svcIP := e.service("ne-test-service-2").Spec.ClusterIP
	dashed := strings.ReplaceAll(ip, ".", "-")
	const zone = "default.svc.cluster.local."

	// A of the ClusterIP Service, authoritative, TTL 30.
	r := neAsk(t, e, "ne-test-service-2."+zone, mdns.TypeA)
	if want := "ne-test-service-2." + zone + " 30 IN A " + svcIP; r.Rcode != 0 || !r.Authoritative || neRRs(r.Answer) != want {
		t.Errorf("A ne-test-service-2: rcode %d aa %v\n%s\nwant %s", r.Rcode, r.Authoritative, neRRs(r.Answer), want)
	}
	// A of the headless Service: its ready pod; and the pod's own name.
	hasIP := func(ip string) func(*mdns.Msg) bool {
		return func(m *mdns.Msg) bool { return strings.Contains(neRRs(m.Answer), " A "+ip) }
	}
	r = neAskUntil(t, e, "ne-dns-test-service."+zone, mdns.TypeA, hasIP(ip))
	if want := "ne-dns-test-service." + zone + " 30 IN A " + ip; neRRs(r.Answer) != want {
		t.Errorf("A headless:\n%s\nwant %s", neRRs(r.Answer), want)
	}
	r = neAsk(t, e, "dns-querier-1.ne-dns-test-service."+zone, mdns.TypeA)
	if want := "dns-querier-1.ne-dns-test-service." + zone + " 30 IN A " + ip; neRRs(r.Answer) != want {
		t.Errorf("A hostname.subdomain:\n%s\nwant %s", neRRs(r.Answer), want)
	}
	// SRV _http._tcp of both: the headless one names the pod, the other the Service.
	r = neAsk(t, e, "_http._tcp.ne-dns-test-service."+zone, mdns.TypeSRV)
	if want := "_http._tcp.ne-dns-test-service." + zone + " 30 IN SRV 0 100 8080 dns-querier-1.ne-dns-test-service." + zone; neRRs(r.Answer) != want ||
		!neHas(r.Extra, "dns-querier-1.ne-dns-test-service."+zone+" 30 IN A "+ip) {
		t.Errorf("SRV headless:\n%s\nextra:\n%s\nwant %s", neRRs(r.Answer), neRRs(r.Extra), want)
	}
	r = neAsk(t, e, "_http._tcp.ne-test-service-2."+zone, mdns.TypeSRV)
	if want := "_http._tcp.ne-test-service-2." + zone + " 30 IN SRV 0 100 80 ne-test-service-2." + zone; neRRs(r.Answer) != want ||
		!neHas(r.Extra, "ne-test-service-2."+zone+" 30 IN A "+svcIP) {
		t.Errorf("SRV cluster IP:\n%s\nextra:\n%s\nwant %s", neRRs(r.Answer), neRRs(r.Extra), want)
	}
	// PTR of the ClusterIP names the Service; of the pod IP, its endpoints.
	rev, _ := mdns.ReverseAddr(svcIP)
	r = neAsk(t, e, rev, mdns.TypePTR)
	if want := rev + " 30 IN PTR ne-test-service-2." + zone; neRRs(r.Answer) != want {
		t.Errorf("PTR cluster IP:\n%s\nwant %s", neRRs(r.Answer), want)
	}
	rev, _ = mdns.ReverseAddr(ip)
	r = neAsk(t, e, rev, mdns.TypePTR)
	if !neHas(r.Answer, rev+" 30 IN PTR dns-querier-1.ne-dns-test-service."+zone) ||
		!neHas(r.Answer, rev+" 30 IN PTR "+dashed+".ne-test-service-2."+zone) {
		t.Errorf("PTR pod IP:\n%s", neRRs(r.Answer))
	}
	// The pod A record (pods insecure): a-b-c-d.<ns>.pod.
	r = neAsk(t, e, dashed+".default.pod.cluster.local.", mdns.TypeA)
	if want := dashed + ".default.pod.cluster.local. 30 IN A " + ip; neRRs(r.Answer) != want {
		t.Errorf("pod A record:\n%s\nwant %s", neRRs(r.Answer), want)
	}
	// publishNotReadyAddresses: the unready pod is answered.
	r = neAskUntil(t, e, "nr-0.ne-unready."+zone, mdns.TypeA, hasIP(nrIP))
	if !hasIP(nrIP)(r) {
		t.Errorf("publishNotReadyAddresses: %s; want %s", neRRs(r.Answer), nrIP)
	}

	// NXDOMAIN and NODATA, each with the zone's SOA in the authority section.
	soa := func(m *mdns.Msg) bool {
		return len(m.Ns) == 1 && strings.HasPrefix(neRRs(m.Ns), "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. ")
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"nothing." + zone, mdns.TypeA, mdns.RcodeNameError},
		{"ne-test-service-2.nonamespace.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError},
		{"a.b.c.ne-test-service-2." + zone, mdns.TypeA, mdns.RcodeNameError},
		{"ne-test-service-2." + zone, mdns.TypeAAAA, mdns.RcodeSuccess},
		{"ne-test-service-2." + zone, mdns.TypeTXT, mdns.RcodeSuccess},
		{zone, mdns.TypeA, mdns.RcodeSuccess},
		{"_https._tcp.ne-test-service-2." + zone, mdns.TypeSRV, mdns.RcodeNameError},
	} {
		r := neAsk(t, e, tc.name, tc.qtype)
		if r.Rcode != tc.rcode || len(r.Answer) != 0 || !soa(r) {
			t.Errorf("%s %s: rcode %s answer %q authority %q; want %s, no answer, the SOA", tc.name, mdns.TypeToString[tc.qtype],
				mdns.RcodeToString[r.Rcode], neRRs(r.Answer), neRRs(r.Ns), mdns.RcodeToString[tc.rcode])
		}
	}

	// /etc/hosts entries for the cluster: getent finds the FQDN and the short name.
	for _, name := range []string{"dns-querier-1.ne-dns-test-service.default.svc.cluster.local", "dns-querier-1"} {
		if r := e.podrun("exec", "ne-querier", "--", "grep", "-w", name, "/etc/hosts"); !strings.HasPrefix(r.stdout, ip+"\t") {
			t.Errorf("/etc/hosts for %s: %s", name, r)
		}
	}
	// `get endpoints` lists the unready pod's address of a Service that publishes it.
	if out := e.must("get", "endpoints", "ne-unready").stdout; !strings.Contains(out, nrIP+":8080") {
		t.Errorf("get endpoints ne-unready:\n%s", out)
	}
}

// dns.go "should provide DNS for ExternalName services": a CNAME to the
// external name, which follows an update of the name and a change of type to
// ClusterIP and back (service.go "should be able to change the type from
// ExternalName to ClusterIP" and the reverse).
func TestE2ENetExternalName(t *testing.T) {
	e := newEnv(t)
	ext := func(name string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: ne-ext}\nspec: {type: ExternalName, externalName: " + name + "}\n"
	}
	e.apply(ext("foo.example.test")+"---\napiVersion: v1\nkind: Pod\nmetadata: {name: ne-ext-client}\nspec: {containers: [{name: c, image: busybox:1.28, command: "+netIdle+"}]}\n", "--wait")
	const name = "ne-ext.default.svc.cluster.local."
	cname := func(target string) func(*mdns.Msg) bool {
		return func(m *mdns.Msg) bool { return neRRs(m.Answer) == name+" 30 IN CNAME "+target }
	}
	if r := neAskUntil(t, e, name, mdns.TypeCNAME, cname("foo.example.test.")); !cname("foo.example.test.")(r) {
		t.Errorf("CNAME: %s", neRRs(r.Answer))
	}
	if out := e.must("get", "svc", "ne-ext").stdout; !strings.Contains(out, "ExternalName") || !strings.Contains(out, "foo.example.test") {
		t.Errorf("get svc ne-ext:\n%s", out)
	}
	e.apply(ext("bar.example.test"))
	if r := neAskUntil(t, e, name, mdns.TypeCNAME, cname("bar.example.test.")); !cname("bar.example.test.")(r) {
		t.Errorf("CNAME after the update: %s", neRRs(r.Answer))
	}
	e.apply("apiVersion: v1\nkind: Service\nmetadata: {name: ne-ext}\nspec: {type: ClusterIP, ports: [{port: 80}]}\n")
	svcIP := e.service("ne-ext").Spec.ClusterIP
	if svcIP == "" || svcIP == "None" {
		t.Fatalf("ExternalName → ClusterIP has no cluster IP: %q", svcIP)
	}
	a := func(m *mdns.Msg) bool { return neRRs(m.Answer) == name+" 30 IN A "+svcIP }
	if r := neAskUntil(t, e, name, mdns.TypeA, a); !a(r) {
		t.Errorf("A after ExternalName → ClusterIP: %s; want %s", neRRs(r.Answer), svcIP)
	}
	e.apply(ext("foo.example.test"))
	if r := neAskUntil(t, e, name, mdns.TypeCNAME, cname("foo.example.test.")); !cname("foo.example.test.")(r) {
		t.Errorf("CNAME after ClusterIP → ExternalName: %s", neRRs(r.Answer))
	}
	if s := e.service("ne-ext"); s.Spec.ClusterIP != "" || len(s.Spec.ClusterIPs) != 0 {
		t.Errorf("ClusterIP → ExternalName kept its cluster IP: %q %q", s.Spec.ClusterIP, s.Spec.ClusterIPs)
	}

	// An ExternalName naming a Service of the cluster: CoreDNS's plugin.A
	// follows the CNAME inside the zone and answers the ClusterIP with it.
	e.apply("apiVersion: v1\nkind: Service\nmetadata: {name: ne-target}\nspec: {ports: [{port: 80}]}\n---\n" +
		"apiVersion: v1\nkind: Service\nmetadata: {name: ne-inner}\nspec: {type: ExternalName, externalName: ne-target.default.svc.cluster.local}\n")
	target := e.service("ne-target").Spec.ClusterIP
	inner := "ne-inner.default.svc.cluster.local."
	want := inner + " 30 IN CNAME ne-target.default.svc.cluster.local.\nne-target.default.svc.cluster.local. 30 IN A " + target
	if r := neAskUntil(t, e, inner, mdns.TypeA, func(m *mdns.Msg) bool { return neRRs(m.Answer) == want }); neRRs(r.Answer) != want {
		t.Errorf("A of an ExternalName in the zone:\n%s\nwant:\n%s", neRRs(r.Answer), want)
	}
}

const neProxyManifest = `
apiVersion: v1
kind: Service
metadata: {name: ne-affinity}
spec:
  selector: {app: ne-web}
  sessionAffinity: ClientIP
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-multi, labels: {tier: ne-front}}
spec:
  selector: {app: ne-web}
  ports: [{name: portname1, port: 80, targetPort: http}, {name: portname2, port: 81, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-proxyname, labels: {service.kubernetes.io/service-proxy-name: ne-other-proxy}}
spec:
  selector: {app: ne-web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-headlesslabel, labels: {service.kubernetes.io/headless: ""}}
spec:
  selector: {app: ne-web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-afftimeout}
spec:
  selector: {app: ne-web}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 2}}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-nopods}
spec:
  selector: {app: ne-nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: ne-headless}
spec:
  clusterIP: None
  selector: {app: ne-web}
  ports: [{port: 80, targetPort: http}]
`

// service.go "should have session affinity work for service with type
// clusterIP", "should serve multiport endpoints from pods", "should implement
// service.kubernetes.io/service-proxy-name" and ".../headless" (kube-proxy
// leaves such Services alone, and serves them once the label goes), and
// endpointslice.go's slices as `get endpointslices` prints them.
func TestE2ENetServiceProxy(t *testing.T) {
	e := newEnv(t)
	e.apply(neProxyManifest)
	e.apply(fmt.Sprintf(webBackend, "ne-web-1", "ne-web", "ne-web-1", "none")+"---"+
		fmt.Sprintf(webBackend, "ne-web-2", "ne-web", "ne-web-2", "none")+"---"+`
apiVersion: v1
kind: Pod
metadata: {name: ne-client}
spec:
  containers: [{name: c, image: busybox:1.28, command: `+netIdle+`}]
`, "--wait")
	ip1, ip2 := e.pod("ne-web-1").Status.PodIP, e.pod("ne-web-2").Status.PodIP
	get := `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %d | tail -n 1;`
	sh := func(script string, ok func(string) bool) string {
		deadline := time.Now().Add(10 * time.Second * timeoutScale)
		for {
			r := e.podrun("exec", "ne-client", "--", "sh", "-c", script)
			if ok(r.stdout) || time.Now().After(deadline) {
				return r.stdout
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	// ClientIP affinity: every request goes to the backend of the first.
	aff := e.service("ne-affinity").Spec.ClusterIP
	out := sh(strings.Repeat(fmt.Sprintf(get, aff, 80), 12), func(s string) bool { return strings.Count(s, "ne-web-") == 12 })
	if n1, n2 := strings.Count(out, "ne-web-1"), strings.Count(out, "ne-web-2"); n1+n2 != 12 || n1 != 0 && n2 != 0 {
		t.Errorf("ClientIP affinity: %d to ne-web-1, %d to ne-web-2; want all 12 to one", n1, n2)
	}
	// "should have session affinity timeout work": within the timeout the
	// same backend, and once it has passed a new pick (within 10 tries).
	at := e.service("ne-afftimeout").Spec.ClusterIP
	first := sh(fmt.Sprintf(get, at, 80), func(s string) bool { return strings.Contains(s, "ne-web-") })
	if out := sh(strings.Repeat(fmt.Sprintf(get, at, 80), 4), func(string) bool { return true }); strings.Count(out, strings.TrimSpace(first)) != 4 {
		t.Errorf("affinity within the timeout: first %q, then %q", first, out)
	}
	moved := false
	for i := 0; i < 10 && !moved; i++ {
		time.Sleep(3 * time.Second)
		out := sh(fmt.Sprintf(get, at, 80), func(s string) bool { return strings.Contains(s, "ne-web-") })
		moved = strings.TrimSpace(out) != strings.TrimSpace(first)
	}
	if !moved {
		t.Errorf("affinity outlived its 2 s timeout: always %q", first)
	}
	// Both ports of a multi-port Service, named and numbered target ports.
	multi := e.service("ne-multi").Spec.ClusterIP
	for _, port := range []int{80, 81} {
		if out := sh(fmt.Sprintf(get, multi, port), func(s string) bool { return strings.Contains(s, "ne-web-") }); !strings.Contains(out, "ne-web-") {
			t.Errorf("ne-multi port %d: %q", port, out)
		}
	}

	// kube-proxy's label selector: no rule at all for the labelled Services.
	table := "podrun_" + e.bridge + "-svc"
	rules := func() string {
		out, _ := exec.Command("nft", "list", "table", "ip", table).CombinedOutput()
		return string(out)
	}
	for _, name := range []string{"ne-proxyname", "ne-headlesslabel"} {
		if ip := e.service(name).Spec.ClusterIP; strings.Contains(rules(), ip+" ") {
			t.Errorf("%s (%s) has rules although kube-proxy ignores it:\n%s", name, ip, rules())
		}
	}
	// Without the label it is served.
	e.apply("apiVersion: v1\nkind: Service\nmetadata: {name: ne-proxyname}\nspec: {selector: {app: ne-web}, ports: [{port: 80, targetPort: http}]}\n")
	pn := e.service("ne-proxyname").Spec.ClusterIP
	if out := sh(fmt.Sprintf(get, pn, 80), func(s string) bool { return strings.Contains(s, "ne-web-") }); !strings.Contains(out, "ne-web-") {
		t.Errorf("ne-proxyname after its label went: %q\n%s", out, rules())
	}

	// get endpointslices: kubectl's columns, the controller's labels.
	out = e.must("get", "endpointslices", "-l", "kubernetes.io/service-name=ne-multi").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME ADDRESSTYPE PORTS ENDPOINTS AGE" {
		t.Fatalf("get endpointslices -l:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if !strings.HasPrefix(f[0], "ne-multi-") || f[1] != "IPv4" || f[2] != "8080,8080" || (f[3] != ip1+","+ip2 && f[3] != ip2+","+ip1) {
		t.Errorf("get endpointslices row: %q; want ne-multi-xxxxx IPv4 8080,8080 %s,%s", lines[1], ip1, ip2)
	}
	var sl discoveryv1.EndpointSlice
	if err := json.Unmarshal([]byte(e.must("get", "endpointslice", f[0], "-o", "json").stdout), &sl); err != nil {
		t.Fatal(err)
	}
	if sl.Kind != "EndpointSlice" || sl.Labels["tier"] != "ne-front" || sl.Labels["endpointslice.kubernetes.io/managed-by"] != "endpointslice-controller.k8s.io" ||
		sl.Labels["kubernetes.io/service-name"] != "ne-multi" || len(sl.Endpoints) != 2 {
		t.Errorf("get endpointslice %s -o json: %+v", f[0], sl)
	}
	if out := e.must("get", "endpointslices", "-l", "service.kubernetes.io/headless", "-o", "name").stdout; !strings.HasPrefix(out, "endpointslice.discovery.k8s.io/ne-headless-") || strings.Count(out, "\n") != 1 {
		t.Errorf("the headless Service's slices carry service.kubernetes.io/headless: %q", out)
	}
	// A Service whose selector matches no pod: the controller's placeholder
	// slice, and Endpoints without addresses.
	out = e.must("get", "endpointslices", "-l", "kubernetes.io/service-name=ne-nopods").stdout
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "ne-nopods-") ||
		strings.Join(strings.Fields(lines[1])[1:4], " ") != "IPv4 <unset> <unset>" {
		t.Errorf("placeholder slice:\n%s", out)
	}
	if out := e.must("get", "endpoints", "ne-nopods").stdout; strings.Join(strings.Fields(strings.Split(out, "\n")[1])[:2], " ") != "ne-nopods <none>" {
		t.Errorf("get endpoints ne-nopods:\n%s", out)
	}
	e.must("delete", "svc", "--all")
}
