package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	gort "runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// inNetNS runs f on a thread that has entered the network namespace at path;
// processes f starts (iptables) inherit it.
func inNetNS(t *testing.T, path string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		gort.LockOSThread()
		// The thread goes back to the pool only once it is back in its own
		// namespace; otherwise it stays locked and exits with the goroutine. (Had
		// it stayed in the namespace on the main thread, which Go never ends, the
		// whole process would show that namespace in /proc/self/ns/net.)
		orig, err := netns.Get()
		if err != nil {
			t.Errorf("the thread's own network namespace: %v", err)
			return
		}
		defer func() {
			if netns.Set(orig) == nil {
				gort.UnlockOSThread()
			}
			orig.Close()
		}()
		ns, err := netns.GetFromPath(path)
		if err != nil {
			t.Errorf("opening %s: %v", path, err)
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			t.Errorf("entering %s: %v", path, err)
			return
		}
		f()
	}()
	<-done
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dockerLikeHost makes two network namespaces: "host", whose FORWARD policy
// is DROP with bridged traffic passing iptables (what Docker leaves behind,
// see Docker's setupIPForwarding and br_netfilter), and "outside", a
// neighbour at 10.x.254.2 the host routes to by default, serving HTTP on
// port 8080. It returns the host namespace's file and the outside address.
func dockerLikeHost(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Fatal("this test needs the iptables command (Debian package iptables; make deps installs it)")
	}
	host := fmt.Sprintf("pho-fwd-%d", os.Getpid())
	outside := fmt.Sprintf("pho-out-%d", os.Getpid())
	hostAddr, outAddr := testNet+".254.1", testNet+".254.2"
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", host).Run()
		_ = exec.Command("ip", "netns", "del", outside).Run()
	})
	run(t, "ip", "netns", "add", host)
	run(t, "ip", "netns", "add", outside)
	hostNS, outNS := "/run/netns/"+host, "/run/netns/"+outside
	for _, ns := range []string{host, outside} {
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	run(t, "ip", "-n", host, "link", "add", "pho-up", "type", "veth", "peer", "name", "pho-down", "netns", outside)
	run(t, "ip", "-n", host, "addr", "add", hostAddr+"/24", "dev", "pho-up")
	run(t, "ip", "-n", outside, "addr", "add", outAddr+"/24", "dev", "pho-down")
	run(t, "ip", "-n", host, "link", "set", "pho-up", "up")
	run(t, "ip", "-n", outside, "link", "set", "pho-down", "up")
	run(t, "ip", "-n", host, "route", "add", "default", "via", outAddr)
	run(t, "nsenter", "--net="+hostNS, "--", "iptables", "-P", "FORWARD", "DROP")
	run(t, "nsenter", "--net="+hostNS, "--", "sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1")

	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("hello from outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command("nsenter", "--net="+outNS, "--", busybox, "httpd", "-f", "-p", outAddr+":8080", "-h", www)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	return hostNS, outAddr
}

func iptablesIn(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + ns, "--", "iptables", "-w"}, args...)...).CombinedOutput()
	return string(out), err
}

// On a host whose FORWARD policy is DROP and whose bridges pass iptables
// (a Docker host), pods still reach each other, a hostPort through the
// host's address, and addresses outside; without podrun's accept rules the
// same traffic is dropped; the rules leave with the last pod.
func TestNetworkForwardDropHost(t *testing.T) {
	hostNS, outAddr := dockerLikeHost(t)
	e := newEnv(t)
	e.netns = hostNS
	hostPort := 18080
	// podrun info sees what the host does to forwarded traffic.
	var info struct {
		Host struct {
			Forward     string `json:"forwardPolicy"`
			BrNetfilter string `json:"brNetfilter"`
		} `json:"host"`
	}
	if err := json.Unmarshal([]byte(e.must("info", "-o", "json").stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.Host.Forward != "DROP" || info.Host.BrNetfilter != "bridge-nf-call-iptables=1" {
		t.Errorf("podrun info: FORWARD policy %q, br_netfilter %q; want DROP, bridge-nf-call-iptables=1", info.Host.Forward, info.Host.BrNetfilter)
	}
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
	e.apply(netEnvPod("client"), "--wait")
	web := e.pod("web")
	if web.Status.HostIP != testNet+".254.1" {
		t.Fatalf("hostIP %q, want the private host namespace's %s.254.1", web.Status.HostIP, testNet)
	}
	chain := "PODRUN-FWD-" + e.bridge
	rules, err := iptablesIn(t, hostNS, "-S", chain)
	if err != nil {
		t.Fatalf("podrun made no iptables chain %s: %v\n%s", chain, err, rules)
	}
	for _, want := range []string{
		"-A " + chain + " -s " + e.subnet + " -j ACCEPT",
		"-A " + chain + " -d " + e.subnet + " -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("chain %s lacks %q:\n%s", chain, want, rules)
		}
	}

	// An HTTP GET with nc (Debian's static busybox wget crashes).
	get := func(addr string, timeout int) result {
		return e.podrun("exec", "client", "--", "sh", "-c", fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w %d %s`, timeout, addr))
	}
	checks := map[string]string{
		"pod to pod":       fmt.Sprintf("%s 8080", web.Status.PodIP),
		"pod to host port": fmt.Sprintf("%s %d", web.Status.HostIP, hostPort),
		"pod egress":       fmt.Sprintf("%s 8080", outAddr),
	}
	wantBody := map[string]string{"pod to pod": "hello from web\n", "pod to host port": "hello from web\n", "pod egress": "hello from outside\n"}
	for what, addr := range checks {
		if r := get(addr, 5); r.code != 0 || !strings.HasPrefix(r.stdout, "HTTP/1.") || !strings.HasSuffix(r.stdout, "\r\n\r\n"+wantBody[what]) {
			t.Errorf("%s (%s): %s", what, addr, r)
		}
	}

	// The same traffic without podrun's jump is dropped: the test host
	// really filters, and the rules are what let the pods through.
	jump := []string{"FORWARD", "-m", "comment", "--comment", "podrun firewall rules", "-j", chain}
	if out, err := iptablesIn(t, hostNS, append([]string{"-D"}, jump...)...); err != nil {
		t.Fatalf("removing podrun's jump: %v\n%s", err, out)
	}
	start := time.Now()
	if r := get(checks["pod to pod"], 2); strings.Contains(r.stdout, "hello") {
		t.Errorf("pod to pod passed a FORWARD DROP host without podrun's rules: %s", r)
	}
	t.Logf("without the rules, pod to pod failed after %s", time.Since(start).Round(time.Millisecond))
	if out, err := iptablesIn(t, hostNS, append([]string{"-I"}, jump...)...); err != nil {
		t.Fatalf("restoring podrun's jump: %v\n%s", err, out)
	}

	e.must("delete", "web")
	if _, err := iptablesIn(t, hostNS, "-S", chain); err != nil {
		t.Errorf("chain %s went with the first of two pods", chain)
	}
	e.must("delete", "client")
	if out, err := iptablesIn(t, hostNS, "-S", chain); err == nil {
		t.Errorf("chain %s is still there after the last pod:\n%s", chain, out)
	}
	if out, _ := iptablesIn(t, hostNS, "-S", "FORWARD"); strings.Contains(out, chain) || !strings.Contains(out, "-P FORWARD DROP") {
		t.Errorf("FORWARD after the last pod:\n%s", out)
	}
}
