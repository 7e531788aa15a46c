package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/store"
)

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
    readinessProbe: {exec: {command: ['sh', '-c', 'test ! -f /tmp/unready']}, periodSeconds: 1, timeoutSeconds: 10}
    command: ['sh', '-c', 'mkdir -p /www && hostname > /www/index.html && trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait']
`

const servicesManifest = `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: myservice}
spec:
  ports: [{port: 80, targetPort: 9376}]
`

func (e *env) service(name string) *corev1.Service {
	e.t.Helper()
	r := e.must("get", "svc", name, "-o", "json")
	var s corev1.Service
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		e.t.Fatalf("decoding service %s: %v\n%s", name, err, r.stdout)
	}
	return &s
}

// Services applied with podrun around real pods: names resolved by the
// cluster DNS the pods' resolv.conf names, load over both backends of a
// selector, headless and hostname.subdomain names, a Service without
// endpoints refused, hairpin, a pod turning unready leaving the endpoints,
// service environment variables (and enableServiceLinks: false).
func TestServicesEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.apply(servicesManifest)
	e.apply(fmt.Sprintf(webBackend, "web-1", "web", "web-1", "none")+"---"+
		fmt.Sprintf(webBackend, "web-2", "web", "web-2", "none")+"---"+
		fmt.Sprintf(webBackend, "db-0", "db", "db-0", "db")+"---"+`
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: `+netIdle+`
---
apiVersion: v1
kind: Pod
metadata: {name: nolinks}
spec:
  enableServiceLinks: false
  containers:
  - name: c
    image: busybox:1.28
    command: `+netIdle+`
`, "--wait")
	db0 := e.pod("db-0")
	webIP, myIP := e.service("web").Spec.ClusterIP, e.service("myservice").Spec.ClusterIP
	sh := func(script string) result { return e.podrun("exec", "client", "--", "sh", "-c", script) }
	// The owner follows the pods' status writes; on a busy host it may
	// trail `apply --wait` by a moment, as the controllers do on a cluster.
	shUntil := func(script string, ok func(result) bool) result {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := sh(script)
			if ok(r) || time.Now().After(deadline) {
				return r
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// busybox's nslookup asks every search domain at once and exits 1 when
	// one of them is NXDOMAIN (on a cluster too); the answer is what counts.
	for _, name := range []string{"web.default.svc.cluster.local", "web"} {
		if r := sh("nslookup " + name); !strings.Contains(r.stdout, "Name:\tweb.default.svc.cluster.local\nAddress: "+webIP+"\n") {
			t.Errorf("nslookup %s: %s; want %s", name, r, webIP)
		}
	}
	hasDB := func(r result) bool { return strings.Contains(r.stdout, "Address: "+db0.Status.PodIP) }
	if r := shUntil("nslookup db-0.db.default.svc.cluster.local", hasDB); r.code != 0 || !hasDB(r) {
		t.Errorf("hostname.subdomain: %s; want %s", r, db0.Status.PodIP)
	}
	if r := shUntil("nslookup db.default.svc.cluster.local.", hasDB); !hasDB(r) {
		t.Errorf("headless: %s; want the pod IP %s", r, db0.Status.PodIP)
	}
	if r := sh("nslookup myservice"); !strings.Contains(r.stdout, myIP) {
		t.Errorf("a Service without a selector resolves: %s; want %s", r, myIP)
	}
	if r := sh("nslookup nothing.default.svc.cluster.local"); r.code == 0 {
		t.Errorf("an unknown name resolved: %s", r)
	}

	// Service environment variables of the Services that existed at start.
	if r := sh("echo $WEB_SERVICE_HOST:$WEB_SERVICE_PORT_HTTP $MYSERVICE_PORT"); strings.TrimSpace(r.stdout) != webIP+":80 tcp://"+myIP+":80" {
		t.Errorf("service env: %q; want %s:80 tcp://%s:80", r.stdout, webIP, myIP)
	}
	if r := e.podrun("exec", "nolinks", "--", "sh", "-c", "env | grep _SERVICE_ || true"); strings.TrimSpace(r.stdout) != "" {
		t.Errorf("enableServiceLinks false: %q", r.stdout)
	}

	// nc, not wget: the test image's static busybox wget crashes in glibc's NSS.
	get := `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s 80 | tail -n 1`
	both := func(r result) bool { return strings.Contains(r.stdout, "web-1") && strings.Contains(r.stdout, "web-2") }
	r := shUntil(fmt.Sprintf("for i in $(seq 1 30); do "+get+"; done", "web"), both)
	if r.code != 0 || !both(r) {
		t.Errorf("30 requests to web by name: %s; want both backends", r)
	}
	// Refused (the reject's ICMP port unreachable), not a timeout.
	r = sh(fmt.Sprintf(get, myIP))
	if !strings.Contains(r.stderr, "Connection refused") {
		t.Errorf("no endpoints: %s; want connection refused", r)
	}
	// A pod reaching itself through its Service (hairpin).
	if r := e.podrun("exec", "web-1", "--", "sh", "-c", fmt.Sprintf(strings.Repeat(get+";", 6), webIP, webIP, webIP, webIP, webIP, webIP)); !strings.Contains(r.stdout, "web-") {
		t.Errorf("hairpin: %s", r)
	}

	// web-2 turns unready: it leaves the endpoints and gets no more traffic.
	web1, web2 := e.pod("web-1").Status.PodIP, e.pod("web-2").Status.PodIP
	if out := e.must("get", "endpoints", "web").stdout; !strings.Contains(out, web1+":8080") || !strings.Contains(out, web2+":8080") {
		t.Errorf("endpoints: %s; want both pods", out)
	}
	e.must("exec", "web-2", "--", "touch", "/tmp/unready")
	e.waitFor("web-2", 20*time.Second, "unready", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && !p.Status.ContainerStatuses[0].Ready
	})
	deadline := time.Now().Add(5 * time.Second)
	for out := ""; ; time.Sleep(50 * time.Millisecond) {
		out = e.must("get", "endpoints", "web").stdout
		if !strings.Contains(out, web2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-2 still in the endpoints: %s", out)
		}
	}
	time.Sleep(300 * time.Millisecond) // the owner's sync follows the status write
	r = sh(fmt.Sprintf("for i in $(seq 1 12); do "+get+"; done", webIP))
	if strings.Contains(r.stdout, "web-2") || !strings.Contains(r.stdout, "web-1") {
		t.Errorf("after web-2 turned unready: %s; want web-1 only", r)
	}
	e.must("delete", "svc", "web", "db", "myservice")
}

// A Service the API server would refuse is refused with its messages, and
// nothing of the file is created.
func TestApplyRefusesInvalidService(t *testing.T) {
	e := newEnv(t)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: busybox:1.28, command: ['true']}]}\n"
	r := e.podrun("apply", e.manifest(pod+"---\napiVersion: v1\nkind: Service\nmetadata: {name: my_service}\nspec: {ports: [{port: 80, protocol: HTTP}]}\n"))
	if r.code != 2 || !strings.Contains(r.stderr, `service "my_service": metadata.name: Invalid value: "my_service": a DNS-1035 label`) ||
		!strings.Contains(r.stderr, `spec.ports[0].protocol: Unsupported value: "HTTP"`) {
		t.Errorf("apply with an invalid Service: %s", r)
	}
	if out := e.must("get").stdout; strings.Contains(out, "p ") {
		t.Errorf("a pod was created: %s", out)
	}
	if out := e.podrun("get", "svc"); strings.TrimSpace(out.stdout) != "" {
		t.Errorf("a Service was created: %s", out)
	}
}

// A crashed services owner is started again by the next command, and the
// new one answers and keeps the rules: nothing a user must restart.
func TestServicesOwnerRestartsAfterCrash(t *testing.T) {
	e := newEnv(t)
	e.apply(servicesManifest)
	e.apply(netIdlePod("client"), "--wait")
	myIP := e.service("myservice").Spec.ClusterIP
	pidFile := e.runRoot + "/services/owner.pid"
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no services owner: %v", err)
	}
	pid := strings.TrimSpace(string(data))
	if err := syscall.Kill(atoi(t, pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	e.must("get")
	data, _ = os.ReadFile(pidFile)
	if again := strings.TrimSpace(string(data)); again == pid || again == "" {
		t.Fatalf("the owner was not restarted: pid %q (was %s)", again, pid)
	}
	if r := e.podrun("exec", "client", "--", "nslookup", "myservice.default.svc.cluster.local."); !strings.Contains(r.stdout, myIP) {
		t.Errorf("after the restart: %s; want %s", r, myIP)
	}
	e.must("delete", "svc", "--all")
}

// A NodePort Service answers on the host's 127.0.0.1 at its node port.
func TestServiceNodePortFromHost(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---`+fmt.Sprintf(webBackend, "web-1", "web", "web-1", "none"), "--wait")
	svc := e.service("web")
	np := svc.Spec.Ports[0].NodePort
	if np < 30000 || np > 32767 {
		t.Fatalf("node port %d", np)
	}
	if out := e.must("get", "svc", "web").stdout; !strings.Contains(out, fmt.Sprintf("80:%d/TCP", np)) {
		t.Errorf("get svc: %s", out)
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", np), 3*time.Second)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprintf(conn, "GET / HTTP/1.0\r\n\r\n")
			data, _ := io.ReadAll(conn)
			conn.Close()
			body = string(data)
		}
		if strings.Contains(body, "web-1") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(body, "web-1") {
		t.Errorf("127.0.0.1:%d answered %q; want web-1", np, body)
	}
	e.must("delete", "svc", "web")
}

// Names outside cluster.local go from a pod through the cluster DNS to the
// nameservers of --resolv-conf (the kubelet's flag), here a DNS server the
// test runs on a loopback address; cluster names are answered by podrun and
// never leave. Pods see the file as the kubelet gives it: its search domains
// after the cluster's (ClusterFirst), the file itself (dnsPolicy Default).
func TestClusterDNSForwardsOtherNames(t *testing.T) {
	upstream := "127." + strings.Split(testNet, ".")[1] + ".0.53"
	var mu sync.Mutex
	var asked []string
	mux := mdns.NewServeMux()
	mux.HandleFunc(".", func(w mdns.ResponseWriter, r *mdns.Msg) {
		q := r.Question[0]
		mu.Lock()
		asked = append(asked, q.Name)
		mu.Unlock()
		m := new(mdns.Msg)
		m.SetReply(r)
		switch {
		case q.Name == "upstream.example.test." && q.Qtype == mdns.TypeA:
			rr, _ := mdns.NewRR("upstream.example.test. 60 IN A 192.0.2.77")
			m.Answer = append(m.Answer, rr)
		case q.Name == "upstream.example.test.":
		default:
			m.SetRcode(r, mdns.RcodeNameError)
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", net.JoinHostPort(upstream, "53"))
	if err != nil {
		t.Fatalf("the test's upstream resolver: %v", err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mux}
	go func() { _ = srv.ActivateAndServe() }()
	defer func() { _ = srv.Shutdown() }()
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver "+upstream+"\nsearch corp.example.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers: [{name: c, image: busybox:1.28, command: `+netIdle+`}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostdns}
spec:
  dnsPolicy: Default
  containers: [{name: c, image: busybox:1.28, command: `+netIdle+`}]
`, "--wait", "--resolv-conf", conf)
	dnsIP := strings.TrimSuffix(e.serviceCIDR, "0/24") + "10"
	if got, want := e.must("exec", "client", "--", "cat", "/etc/resolv.conf").stdout,
		"search default.svc.cluster.local svc.cluster.local cluster.local corp.example.test\nnameserver "+dnsIP+"\noptions ndots:5\n"; got != want {
		t.Errorf("ClusterFirst resolv.conf:\n%s\nwant:\n%s", got, want)
	}
	if got, want := e.must("exec", "hostdns", "--", "cat", "/etc/resolv.conf").stdout, "search corp.example.test\nnameserver "+upstream+"\n"; got != want {
		t.Errorf("dnsPolicy Default resolv.conf:\n%s\nwant:\n%s", got, want)
	}
	r := e.podrun("exec", "client", "--", "nslookup", "upstream.example.test.")
	if !strings.Contains(r.stdout, "Address: 192.0.2.77") {
		t.Errorf("nslookup upstream.example.test. through the cluster DNS: %s", r)
	}
	// The short name goes through the search list: the cluster domains are
	// answered by podrun, the host's search domain and the name forwarded.
	r = e.podrun("exec", "client", "--", "nslookup", "upstream.example.test")
	if !strings.Contains(r.stdout, "Address: 192.0.2.77") {
		t.Errorf("nslookup upstream.example.test: %s", r)
	}
	if r := e.podrun("exec", "client", "--", "nslookup", "nothing.example.test."); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "NXDOMAIN") {
		t.Errorf("an upstream NXDOMAIN: %s", r)
	}
	mu.Lock()
	seen := strings.Join(asked, " ")
	mu.Unlock()
	if !strings.Contains(seen, "upstream.example.test. ") && !strings.HasSuffix(seen, "upstream.example.test.") {
		t.Errorf("the upstream was never asked for upstream.example.test.: %q", seen)
	}
	if strings.Contains(seen, "cluster.local.") {
		t.Errorf("cluster names reached the upstream: %q", seen)
	}
	// One --resolv-conf per host while pods exist, as one kubelet has one.
	if r := e.podrun("apply", e.manifest("apiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec: {containers: [{name: c, image: busybox:1.28}]}\n"), "--resolv-conf", "/etc/resolv.conf"); r.code != 2 || !strings.Contains(r.stderr, "--resolv-conf /etc/resolv.conf: the cluster DNS forwards to the resolvers of "+conf) {
		t.Errorf("another --resolv-conf while pods exist: %s", r)
	}
}

// The services owner's resync (kube-proxy's 30 s --sync-period) writes the
// Service rules again when their table was deleted behind its back, and a
// store change that leaves the rules as they are runs no nft rewrite (the
// rules keep their handles).
func TestServicesResyncRestoresTableAndSkipsUnchanged(t *testing.T) {
	e := newEnv(t)
	e.apply(servicesManifest)
	table := "podrun_" + e.bridge + "-svc"
	list := func() (string, bool) {
		out, err := exec.Command("nft", "-a", "list", "table", "ip", table).CombinedOutput()
		return string(out), err == nil
	}
	before, ok := list()
	if !ok || !strings.Contains(before, "handle") {
		t.Fatalf("no table ip %s after apply: %s", table, before)
	}
	// A pod no Service selects: the owner wakes and syncs, and nothing of
	// the rules changes.
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: bystander}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: `+netIdle+`
`, "--wait")
	time.Sleep(2 * time.Second) // the owner's pass on the pod's status writes
	if after, _ := list(); after != before {
		t.Errorf("the rules were rewritten although nothing changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out, err := exec.Command("nft", "delete", "table", "ip", table).CombinedOutput(); err != nil {
		t.Fatalf("deleting table ip %s: %v: %s", table, err, out)
	}
	deadline := time.Now().Add(45 * time.Second * timeoutScale)
	for {
		if _, ok := list(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("table ip %s not restored by the owner's resync", table)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if ip := e.service("myservice").Spec.ClusterIP; ip == "" {
		t.Fatal("myservice has no ClusterIP")
	} else if restored, _ := list(); !strings.Contains(restored, ip) {
		t.Errorf("the restored table has no rule for %s:\n%s", ip, restored)
	}
	e.must("delete", "bystander", "--force")
	e.must("delete", "svc", "--all")
}

// The cluster DNS of a store without Services: the kube-dns ClusterIP and
// the kubernetes Service's address are local addresses of the host (on lo,
// labelled) while the services owner runs, the pod's queries reach the
// server through its gateway and get the server's own answers, the
// kubernetes Service resolves as on a cluster and a connection to it is
// refused at once (no API server), and no Service rules exist (the first pod
// of a store runs no nft). The addresses go with the owner; the leak check
// after the test sees that they did.
func TestClusterDNSWithoutServiceRules(t *testing.T) {
	e := newEnv(t)
	e.apply(netIdlePod("asker"), "--wait")
	prefix := strings.TrimSuffix(e.serviceCIDR, "0/24")
	dnsIP, apiIP := prefix+"10", prefix+"1"
	lo := func() string {
		out, err := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "lo").CombinedOutput()
		if err != nil {
			t.Fatalf("ip addr: %v: %s", err, out)
		}
		return string(out)
	}
	for _, ip := range []string{dnsIP, apiIP} {
		if out := lo(); !strings.Contains(out, "inet "+ip+"/32 scope host lo:podrun-svc") {
			t.Errorf("lo while the owner runs: %s; want %s/32 labelled lo:podrun-svc", out, ip)
		}
	}
	table := "podrun_" + e.bridge + "-svc"
	if out, err := exec.Command("nft", "list", "table", "ip", table).CombinedOutput(); err == nil {
		t.Errorf("Service rules with no Service:\n%s", out)
	}
	r := e.podrun("exec", "asker", "--", "nslookup", "nothing.default.svc.cluster.local.")
	if !strings.Contains(r.stdout, "Address:\t"+dnsIP+":53") || !strings.Contains(r.stdout+r.stderr, "NXDOMAIN") {
		t.Errorf("a query from the pod: %s; want NXDOMAIN from %s:53", r, dnsIP)
	}
	// (This busybox's nslookup applies no search domain to a name with a
	// dot, as on a cluster: the docs pin busybox 1.28 for that.)
	for _, name := range []string{"kubernetes.default.svc.cluster.local", "kubernetes.default.svc.cluster.local."} {
		if r := e.podrun("exec", "asker", "--", "nslookup", name); !strings.Contains(r.stdout, "Name:\tkubernetes.default.svc.cluster.local\nAddress: "+apiIP+"\n") {
			t.Errorf("nslookup %s: %s; want %s", name, r, apiIP)
		}
	}
	if r := e.podrun("exec", "asker", "--", "sh", "-c", "nc -w 5 "+apiIP+" 443 </dev/null"); r.code == 0 || !strings.Contains(r.stderr, "Connection refused") {
		t.Errorf("a connection to the kubernetes Service: %s; want refused", r)
	}
	e.must("delete", "pod", "asker")
	for _, ip := range []string{dnsIP, apiIP} {
		if out := lo(); strings.Contains(out, " "+ip+"/") {
			t.Errorf("lo after the last pod went: %s", out)
		}
	}
}

// A delete after the services owner crashed, with no command in between to
// start another, still leaves the host as it was: the Service rules' table
// and the owner's addresses on lo go with the last object.
func TestServicesDeleteAfterOwnerCrash(t *testing.T) {
	e := newEnv(t)
	e.apply(servicesManifest)
	pidFile := e.runRoot + "/services/owner.pid"
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no services owner: %v", err)
	}
	pid := strings.TrimSpace(string(data))
	if err := syscall.Kill(atoi(t, pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	e.must("delete", "svc", "--all")
	if out, err := exec.Command("nft", "list", "table", "ip", "podrun_"+e.bridge+"-svc").CombinedOutput(); err == nil {
		t.Errorf("the Service rules after the last Service went:\n%s", out)
	}
	prefix := strings.TrimSuffix(e.serviceCIDR, "0/24")
	out, _ := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "lo").CombinedOutput()
	for _, ip := range []string{prefix + "10", prefix + "1"} {
		if strings.Contains(string(out), " "+ip+"/") {
			t.Errorf("lo after the last Service went: %s", out)
		}
	}
}

// A store's first pod starts beside the services owner that serves its
// cluster DNS; its first container runs only once that serves, as on a node
// where CoreDNS runs before the pods that use it, so a lookup at the very
// start of the container succeeds (runtime's waitClusterDNS). The owner's
// start is held back for 2 s here (its lifetime lock taken, as an exiting
// owner would hold it): without the wait the lookup would run with no server.
func TestFirstPodLooksUpAtOnce(t *testing.T) {
	e := newEnv(t)
	apiIP := strings.TrimSuffix(e.serviceCIDR, "0/24") + "1"
	lockPath := store.Layout{RunRoot: e.runRoot}.ServicesOwner().LockFile()
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(2 * time.Second)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}()
	r := e.podrun("apply", "--wait", "--timeout", "2m", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: lookup}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ['nslookup', 'kubernetes.default.svc.cluster.local.']
`))
	<-released
	logs := e.podrun("logs", "lookup")
	if r.code != 0 || !strings.Contains(logs.stdout, "Address: "+apiIP) {
		t.Errorf("a lookup at the start of the store's first pod, its owner late: %s\nlogs: %s; want it to succeed with %s", r, logs, apiIP)
	}
	e.must("delete", "pod", "lookup")
}
