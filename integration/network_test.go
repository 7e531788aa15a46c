package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
)

// netIdle is a container command that waits until it is told to stop: a
// shell as PID 1 ignores SIGTERM unless it traps it, and deletes should not
// wait out the grace period.
const netIdle = `['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait']`

// netIdlePod is a pod of one busybox container that idles until stopped.
func netIdlePod(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers: [{name: c, image: busybox:1.28, command: " + netIdle + "}]\n"
}

// netEnvPod is a pod whose container prints its downward-API addresses and then idles.
func netEnvPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: ['sh', '-c', 'echo POD_IP=$POD_IP HOST_IP=$HOST_IP; trap "exit 0" TERM; sleep 3600 & wait']
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
`, name)
}

func TestNetworkPodsReachEachOtherAndReportTheirAddresses(t *testing.T) {
	e := newEnv(t)
	subnet := netip.MustParsePrefix(e.subnet)
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"alpha", "beta"} {
		e.apply(netEnvPod(name), "--wait")
		pods[name] = e.pod(name)
	}
	for name, p := range pods {
		st := p.Status
		ip, err := netip.ParseAddr(st.PodIP)
		if err != nil || !subnet.Contains(ip) || ip == subnet.Addr() || ip == subnet.Addr().Next() {
			t.Fatalf("%s: status.podIP %q is not a pod address in %s (nor the network or bridge address)", name, st.PodIP, subnet)
		}
		if len(st.PodIPs) != 1 || st.PodIPs[0].IP != st.PodIP {
			t.Errorf("%s: status.podIPs %v, want [%s]", name, st.PodIPs, st.PodIP)
		}
		if !netIsHostAddress(t, st.HostIP) {
			t.Errorf("%s: status.hostIP %q is not a global address of this host", name, st.HostIP)
		}
		if len(st.HostIPs) != 1 || st.HostIPs[0].IP != st.HostIP {
			t.Errorf("%s: status.hostIPs %v, want [%s]", name, st.HostIPs, st.HostIP)
		}
		// The downward API sees the same addresses as the status, in the
		// container's environment and in an exec'd process.
		if got, want := e.must("logs", name).stdout, fmt.Sprintf("POD_IP=%s HOST_IP=%s\n", st.PodIP, st.HostIP); got != want {
			t.Errorf("%s printed %q, want %q", name, got, want)
		}
		if got := strings.TrimSpace(e.must("exec", name, "--", "sh", "-c", "echo $POD_IP").stdout); got != st.PodIP {
			t.Errorf("%s: POD_IP in exec is %q, want %q", name, got, st.PodIP)
		}
		// The address is really on the pod's eth0.
		if out := e.must("exec", name, "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0").stdout; !strings.Contains(out, " "+st.PodIP+"/") {
			t.Errorf("%s: eth0 does not carry %s:\n%s", name, st.PodIP, out)
		}
		if got := netWideColumn(t, e.must("get", name, "-o", "wide").stdout, "IP"); got != st.PodIP {
			t.Errorf("get %s -o wide shows IP %q, want %q", name, got, st.PodIP)
		}
	}
	if pods["alpha"].Status.PodIP == pods["beta"].Status.PodIP {
		t.Fatalf("both pods got %s", pods["alpha"].Status.PodIP)
	}
	for _, pair := range [][2]string{{"alpha", "beta"}, {"beta", "alpha"}} {
		target := pods[pair[1]].Status.PodIP
		if r := e.podrun("exec", pair[0], "--", "ping", "-c", "1", "-W", "5", target); r.code != 0 {
			t.Errorf("%s cannot ping %s at %s: %s", pair[0], pair[1], target, r)
		}
	}
}

func TestNetworkHostPortPublishesAContainerPort(t *testing.T) {
	e := newEnv(t)
	hostPort := netFreePort(t)
	e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: httpd
    image: busybox:1.28
    command: ['sh', '-c', 'mkdir /www; echo hello from $(hostname) > /www/index.html; trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait']
    ports: [{containerPort: 8080, hostPort: %d}]
`, hostPort), "--wait")
	p := e.pod("web")
	for _, addr := range []string{
		net.JoinHostPort("127.0.0.1", fmt.Sprint(hostPort)),     // DNAT in the output chain, with route_localnet
		net.JoinHostPort(p.Status.HostIP, fmt.Sprint(hostPort)), // the host's own address
		net.JoinHostPort(p.Status.PodIP, "8080"),                // the pod directly, over the bridge
	} {
		if body, err := netHTTPGet(addr, 20*time.Second); err != nil || body != "hello from web\n" {
			t.Errorf("GET http://%s/: %q, %v", addr, body, err)
		}
	}
	rules := netPodRules(t, string(p.UID))
	if len(rules) != 1 || !rules[0].dnatsTo(p.Status.PodIP, 8080) {
		t.Fatalf("nftables rules of pod web: %v, want one DNAT to %s:8080", rules, p.Status.PodIP)
	}
}

// Published ports go with the pod: its DNAT rules leave on delete, those
// of other pods stay, the table leaves with the last pod, and a pod whose
// supervisor crashed loses its rules on delete too.
func TestNetworkDeleteRemovesThePodsNftablesRules(t *testing.T) {
	e := newEnv(t)
	table := "podrun_" + e.bridge // podrun's table for a non-default bridge
	uids := map[string]string{}
	for _, name := range []string{"keep", "drop", "crash"} {
		e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: c
    image: busybox:1.28
    command: %s
    ports: [{containerPort: 80, hostPort: %d}, {containerPort: 53, hostPort: %d, protocol: UDP}]
`, name, netIdle, netFreePort(t), netFreePort(t)))
	}
	for _, name := range []string{"keep", "drop", "crash"} {
		p := e.waitPhase(name, corev1.PodRunning, time.Minute)
		uids[name] = string(p.UID)
		if rules := netPodRules(t, uids[name]); len(rules) != 2 {
			t.Fatalf("pod %s has nftables rules %v, want one per hostPort (2)", name, rules)
		}
	}

	e.must("delete", "drop")
	if rules := netPodRules(t, uids["drop"]); len(rules) != 0 {
		t.Errorf("rules of deleted pod drop remain: %v", rules)
	}
	if rules := netPodRules(t, uids["keep"]); len(rules) != 2 {
		t.Errorf("deleting pod drop changed the rules of pod keep: %v", rules)
	}

	// A crash: the supervisor dies without tearing anything down.
	e.crashSupervisor(uids["crash"])
	if rules := netPodRules(t, uids["crash"]); len(rules) != 2 {
		t.Fatalf("after the crash the rules should still be there, found %v", rules)
	}
	e.must("delete", "crash")
	if rules := netPodRules(t, uids["crash"]); len(rules) != 0 {
		t.Errorf("rules of pod crash remain after delete: %v", rules)
	}
	if !netTableExists(t, table) {
		t.Errorf("table ip %s went while pod keep still publishes ports", table)
	}

	e.must("delete", "keep")
	if rules := netPodRules(t, uids["keep"]); len(rules) != 0 {
		t.Errorf("rules of pod keep remain: %v", rules)
	}
	if netTableExists(t, table) {
		t.Errorf("table ip %s remains after the last pod was deleted", table)
	}
	if left := e.leftovers(); len(left) != 0 {
		t.Errorf("left after deleting every pod: %v", left)
	}
}

func TestNetworkAppContainersTalkOverLocalhost(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: duo}
spec:
  containers:
  - name: server
    image: busybox:1.28
    # Bound to loopback only: reachable from the pod's other containers, not from outside.
    command: ['sh', '-c', 'mkdir /www; echo local answer > /www/index.html; trap "exit 0" TERM; httpd -f -p 127.0.0.1:8080 -h /www & wait']
  - name: client
    image: busybox:1.28
    command: `+netIdle+`
`, "--wait")
	var r result
	for i := 0; i < 50; i++ { // httpd may still be starting
		if r = e.podrun("exec", "duo", "-c", "client", "--", "wget", "-q", "-O", "-", "http://localhost:8080/"); r.code == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.code != 0 || r.stdout != "local answer\n" {
		t.Fatalf("client could not reach the server over localhost: %s", r)
	}
	podAddr := net.JoinHostPort(e.pod("duo").Status.PodIP, "8080")
	if _, err := netHTTPGet(podAddr, 0); err == nil {
		t.Fatalf("the server bound to 127.0.0.1 answered on %s: the client did not prove a shared loopback", podAddr)
	}
}

func TestNetworkConcurrentAppliesGetDistinctAddresses(t *testing.T) {
	e := newEnv(t)
	const n = 20
	files := make([]string, n)
	for i := range files {
		files[i] = e.manifest(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: many-%02d}
spec:
  containers: [{name: c, image: busybox:1.28, command: %s}]
`, i, netIdle))
	}
	results := netRunAll(e, n, func(i int) []string { return []string{"apply", files[i]} })
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("concurrent apply of many-%02d: %s", i, r)
		}
	}

	subnet := netip.MustParsePrefix(e.subnet)
	var pods []corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods = netListPods(t, e)
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				running++
			}
		}
		if running == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods running after 2m", running, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	owner := map[string]string{}
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !subnet.Contains(ip) || ip == subnet.Addr() || ip == subnet.Addr().Next() {
			t.Errorf("%s got %q, not a pod address of %s", p.Name, p.Status.PodIP, subnet)
		}
		if other, dup := owner[p.Status.PodIP]; dup {
			t.Errorf("%s and %s both got %s", other, p.Name, p.Status.PodIP)
		}
		owner[p.Status.PodIP] = p.Name
	}
	if allocated := netAllocations(t, e); len(allocated) != n {
		t.Errorf("IPAM holds %d allocations for %d pods: %v", len(allocated), n, allocated)
	}

	results = netRunAll(e, n, func(i int) []string { return []string{"delete", pods[i].Name} })
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("concurrent delete of %s: %s", pods[i].Name, r)
		}
	}
	if allocated := netAllocations(t, e); len(allocated) != 0 {
		t.Errorf("addresses still allocated after every pod was deleted: %v", allocated)
	}
	if left := e.leftovers(); len(left) != 0 {
		t.Errorf("left after concurrent deletes: %v", left)
	}
	for _, p := range pods {
		if rules := netPodRules(t, string(p.UID)); len(rules) != 0 {
			t.Errorf("nftables rules of %s remain: %v", p.Name, rules)
		}
	}
}

// /etc/hosts and /etc/resolv.conf are the files the kubelet writes
// (kubelet_pods.go managedHostsFileContent; dns.go with the container
// runtime's rendering), byte for byte.
func TestNetworkEtcHostsAndResolvConf(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, spec        string
		hostname          string
		hosts, resolvConf func(podIP string) string
	}{
		{
			name: "hostname-subdomain-aliases-dnsconfig",
			spec: `
  hostname: db-0
  subdomain: backends
  hostAliases:
  - {ip: 10.1.2.3, hostnames: [foo.local, bar.local]}
  - {ip: 10.1.2.4, hostnames: [baz.remote]}
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.96.0.10, 10.96.0.11]
    searches: [ns1.svc.cluster.local, my.dns.search.suffix]
    options:
    - {name: ndots, value: "2"}
    - {name: edns0}`,
			hostname: "db-0",
			hosts: func(ip string) string {
				return netHostsHeader + ip + "\tdb-0.backends.default.svc.cluster.local\tdb-0\n" +
					"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz.remote\n"
			},
			resolvConf: func(string) string {
				return "search ns1.svc.cluster.local my.dns.search.suffix\nnameserver 10.96.0.10\nnameserver 10.96.0.11\noptions ndots:2 edns0\n"
			},
		},
		{
			// The sandbox's host name is the FQDN, and so is HOSTNAME, which
			// containerd and CRI-O set from it.
			name: "fqdn",
			spec: `
  hostname: web-1
  subdomain: front
  setHostnameAsFQDN: true`,
			hostname: "web-1.front.default.svc.cluster.local",
			hosts: func(ip string) string {
				return netHostsHeader + ip + "\tweb-1.front.default.svc.cluster.local\tweb-1\n"
			},
			resolvConf: func(string) string { return netClusterResolvConf(t, e) },
		},
		{
			// ClusterFirst: the cluster DNS (kube-dns, .10 of the service
			// range), the cluster's search list before the host's, ndots:5.
			name:       "plain",
			hostname:   "plain",
			hosts:      func(ip string) string { return netHostsHeader + ip + "\tplain\n" },
			resolvConf: func(string) string { return netClusterResolvConf(t, e) },
		},
		{
			// Default: the host's file, as the kubelet gives it.
			name:       "default",
			spec:       "\n  dnsPolicy: Default",
			hostname:   "default",
			hosts:      func(ip string) string { return netHostsHeader + ip + "\tdefault\n" },
			resolvConf: func(string) string { return netHostResolvConf(t) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cgSubEnv(e, t)
			e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:%s
  containers: [{name: c, image: busybox:1.28, command: %s}]
`, tc.name, tc.spec, netIdle), "--wait")
			ip := e.pod(tc.name).Status.PodIP
			if got, want := e.must("exec", tc.name, "--", "cat", "/etc/hosts").stdout, tc.hosts(ip); got != want {
				t.Errorf("/etc/hosts:\n%s\nwant:\n%s", got, want)
			}
			if got, want := e.must("exec", tc.name, "--", "cat", "/etc/resolv.conf").stdout, tc.resolvConf(ip); got != want {
				t.Errorf("/etc/resolv.conf:\n%s\nwant:\n%s", got, want)
			}
			for _, cmd := range []string{"hostname", "echo $HOSTNAME", "cat /etc/hostname"} {
				if got := strings.TrimSpace(e.must("exec", tc.name, "--", "sh", "-c", cmd).stdout); got != tc.hostname {
					t.Errorf("%s: %q, want %q", cmd, got, tc.hostname)
				}
			}
		})
	}
}

func TestNetworkHostNetworkUsesTheHostsStack(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: busybox:1.28
    command: `+netIdle+`
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
`, "--wait")
	p := e.pod("hostnet")
	if !netIsHostAddress(t, p.Status.HostIP) || p.Status.PodIP != p.Status.HostIP {
		t.Errorf("status.podIP %q, status.hostIP %q: want both the host's address", p.Status.PodIP, p.Status.HostIP)
	}
	if got := strings.TrimSpace(e.must("exec", "hostnet", "--", "sh", "-c", "echo $POD_IP").stdout); got != p.Status.HostIP {
		t.Errorf("POD_IP %q, want the host's %q", got, p.Status.HostIP)
	}
	if got := strings.TrimSpace(e.must("exec", "hostnet", "--", "readlink", "/proc/self/ns/net").stdout); got != hostNetNS {
		t.Errorf("container network namespace %s, want the host's %s (the tests' own)", got, hostNetNS)
	}
	links := e.must("exec", "hostnet", "--", "cat", "/proc/net/dev").stdout
	if ifname := netDefaultRouteLink(t); !strings.Contains(links, " "+ifname+":") {
		t.Errorf("the host's %s is not visible in the container:\n%s", ifname, links)
	}
	host, _ := os.Hostname()
	if got := strings.TrimSpace(e.must("exec", "hostnet", "--", "hostname").stdout); got != host {
		t.Errorf("hostname %q, want the host's %q", got, host)
	}
	hostHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.must("exec", "hostnet", "--", "cat", "/etc/hosts").stdout, "# Kubernetes-managed hosts file (host network).\n"+string(hostHosts); got != want {
		t.Errorf("/etc/hosts:\n%s\nwant:\n%s", got, want)
	}
	// Nothing of the pod network was built.
	if entries, _ := os.ReadDir(filepath.Join(e.runRoot, "netns")); len(entries) != 0 {
		t.Errorf("a hostNetwork pod got network namespaces %v", entries)
	}
	if br, err := netlink.LinkByName(e.bridge); err == nil {
		t.Errorf("a hostNetwork pod created bridge %s", br.Attrs().Name)
	}
	if allocated := netAllocations(t, e); len(allocated) != 0 {
		t.Errorf("a hostNetwork pod holds pod addresses: %v", allocated)
	}
}

// A finished pod's sandbox is torn down, so its address goes back to the
// pool; its status keeps the IP it ran with, as the kubelet's has since
// kubernetes#125404 (1.31) and as Jobs' consumers rely on.
func TestNetworkFinishedPodReleasesItsAddressButReportsIt(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox:1.28, command: ['sh', '-c', 'ip -4 -o addr show dev eth0']}]
`)
	e.waitPhase("done", corev1.PodSucceeded, time.Minute)
	ran := e.must("logs", "done").stdout
	// The sandbox goes right after the phase turns terminal; the supervisor
	// then writes the final status and exits.
	p := e.waitFor("done", 30*time.Second, "final, its supervisor gone", func(p *corev1.Pod) bool {
		_, err := os.Stat(filepath.Join(e.runRoot, "pods", string(p.UID), "supervisor.pid"))
		return errors.Is(err, os.ErrNotExist)
	})
	p = e.pod("done")
	if allocated := netAllocations(t, e); len(allocated) != 0 {
		t.Errorf("the finished pod still holds an address: %v", allocated)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.runRoot, "netns")); len(entries) != 0 {
		t.Errorf("the finished pod still has its network namespace: %v", entries)
	}
	if p.Status.PodIP == "" || !strings.Contains(ran, " "+p.Status.PodIP+"/") {
		t.Errorf("finished pod reports podIP %q (podIPs %v); it ran with: %q", p.Status.PodIP, p.Status.PodIPs, ran)
	}
	if got := netWideColumn(t, e.must("get", "done", "-o", "wide").stdout, "IP"); got != p.Status.PodIP || got == "<none>" {
		t.Errorf("get -o wide shows IP %q for the finished pod", got)
	}
}

const netHostsHeader = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"

// netHostResolvConf is the pod resolv.conf the host's file gives with no
// dnsConfig: its search, nameserver and options lines (last search and
// options line wins, as in the kubelet's parser), rendered in the runtime's order.
func netHostResolvConf(t *testing.T) string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	var search, options string
	var servers []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if f[1] == "127.0.0.53" {
				t.Fatal("this host uses the systemd-resolved stub; expected content not derived for it")
			}
			servers = append(servers, "nameserver "+f[1]+"\n")
		case "search":
			search = "search " + strings.Join(f[1:], " ") + "\n"
		case "options":
			options = "options " + strings.Join(f[1:], " ") + "\n"
		}
	}
	if len(servers) > 3 {
		servers = servers[:3]
	}
	return search + strings.Join(servers, "") + options
}

// netClusterResolvConf is the kubelet's resolv.conf for dnsPolicy
// ClusterFirst in the default namespace with the env's cluster DNS.
func netClusterResolvConf(t *testing.T, e *env) string {
	search := "default.svc.cluster.local svc.cluster.local cluster.local"
	if host := netHostResolvConf(t); strings.HasPrefix(host, "search ") {
		search += " " + strings.TrimSpace(strings.SplitN(strings.TrimPrefix(host, "search "), "\n", 2)[0])
	}
	return "search " + search + "\nnameserver " + strings.TrimSuffix(e.serviceCIDR, "0/24") + "10\noptions ndots:5\n"
}

// netWideColumn returns a column of the one pod row in `get -o wide` output.
// Columns are located by the header's offsets: RESTARTS may hold spaces.
func netWideColumn(t *testing.T, out, column string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("get -o wide printed %q", out)
	}
	at := strings.Index(lines[0], " "+column+" ")
	if at < 0 || len(lines[1]) <= at+1 {
		t.Fatalf("no column %s in %q", column, out)
	}
	f := strings.Fields(lines[1][at+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// netIsHostAddress reports whether ip is a global unicast address of this host.
func netIsHostAddress(t *testing.T, ip string) bool {
	t.Helper()
	want := net.ParseIP(ip)
	if want == nil || !want.IsGlobalUnicast() {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
			return true
		}
	}
	return false
}

// netDefaultRouteLink names the interface of the host's IPv4 default route.
func netDefaultRouteLink(t *testing.T) string {
	t.Helper()
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() && r.Dst.Mask != nil && net.IP(r.Dst.Mask).IsUnspecified() {
			l, err := netlink.LinkByIndex(r.LinkIndex)
			if err == nil {
				return l.Attrs().Name
			}
		}
	}
	t.Fatal("this host has no IPv4 default route")
	return ""
}

// netFreePort returns a TCP port nothing on the host listens on now.
func netFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// netHTTPGet fetches http://addr/, retrying for up to patience while the
// server comes up (no retry when patience is 0).
func netHTTPGet(addr string, patience time.Duration) (string, error) {
	client := &http.Client{Timeout: 3 * time.Second}
	deadline := time.Now().Add(patience)
	for {
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode != http.StatusOK {
				rerr = fmt.Errorf("status %s", resp.Status)
			}
			return string(body), rerr
		}
		if time.Now().After(deadline) {
			return "", err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// netRunAll runs n podrun processes at once and returns their results.
// It does not touch t: Fatal must not be called off the test goroutine.
func netRunAll(e *env, n int, args func(i int) []string) []result {
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(podrunBin, e.args(args(i)...)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			results[i] = result{stdout: out.String(), stderr: errb.String()}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				results[i].code = ee.ExitCode()
			} else if err != nil {
				results[i].code, results[i].stderr = -1, err.Error()
			}
		}()
	}
	wg.Wait()
	return results
}

func netListPods(t *testing.T, e *env) []corev1.Pod {
	t.Helper()
	var list struct{ Items []corev1.Pod }
	out := e.must("get", "-o", "json").stdout
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decoding pod list: %v\n%s", err, out)
	}
	return list.Items
}

// netAllocations lists the addresses podrun's IPAM has handed out (one state
// file per pod under <root>/network/pods).
func netAllocations(t *testing.T, e *env) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(e.root, "network", "pods", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		var st struct{ IP, Name string }
		data, err := os.ReadFile(f)
		if err != nil {
			continue // released meanwhile
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("IPAM state %s: %v", f, err)
		}
		out = append(out, st.Name+"="+st.IP)
	}
	return out
}

// netRule is an nftables rule that mentions a pod.
type netRule struct {
	table, chain, comment string
	exprs                 []expr.Any
}

func (r netRule) String() string { return fmt.Sprintf("%s/%s %q", r.table, r.chain, r.comment) }

// dnatsTo reports whether the rule rewrites the destination to ip:port.
func (r netRule) dnatsTo(ip string, port uint16) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr := a.As4()
	var haveAddr, havePort, nat bool
	for _, x := range r.exprs {
		switch v := x.(type) {
		case *expr.Immediate:
			haveAddr = haveAddr || bytes.Equal(v.Data, addr[:])
			havePort = havePort || bytes.Equal(v.Data, []byte{byte(port >> 8), byte(port)})
		case *expr.NAT:
			nat = nat || v.Type == expr.NATTypeDestNAT
		}
	}
	return haveAddr && havePort && nat
}

// netPodRules finds, in every nftables table of the host, the rules whose
// comment names the pod's UID.
func netPodRules(t *testing.T, uid string) []netRule {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatalf("opening nftables: %v", err)
	}
	chains, err := c.ListChains()
	if err != nil {
		t.Fatalf("listing nftables chains: %v", err)
	}
	var out []netRule
	for _, ch := range chains {
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue // removed meanwhile by someone else's test
			}
			t.Fatalf("listing rules of %s/%s: %v", ch.Table.Name, ch.Name, err)
		}
		for _, r := range rules {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			if strings.Contains(comment, uid) {
				out = append(out, netRule{table: ch.Table.Name, chain: ch.Name, comment: strings.TrimRight(comment, "\x00"), exprs: r.Exprs})
			}
		}
	}
	return out
}

func netTableExists(t *testing.T, name string) bool {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatalf("opening nftables: %v", err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatalf("listing nftables tables: %v", err)
	}
	for _, tb := range tables {
		if tb.Name == name {
			return true
		}
	}
	return false
}

// hostNetNS is the network namespace the tests (and the podrun they run) start
// in, read before any test enters another namespace on one of its threads.
var hostNetNS = func() string {
	ns, _ := os.Readlink("/proc/self/ns/net")
	return ns
}()
