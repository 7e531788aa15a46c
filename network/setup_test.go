package network

// Integration tests: they build real namespaces, veths, bridges and
// nftables rules, so they run as root. Each test has its own bridge
// (prt<random>), nftables table, pod subnet (10.231.x.0/24), run root and
// state dir, so they do not meet other tests on the host, and every test
// removes what it made even when it fails. Traffic goes only to loopback,
// to the pods' own addresses and to the host's address (DNATed into a pod).

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

const (
	helperEnv       = "PODRUN_NETTEST_HELPER"
	helperConfigEnv = "PODRUN_NETTEST_CONFIG"
	helperPodsEnv   = "PODRUN_NETTEST_PODS"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "setup" {
		os.Exit(setupHelper())
	}
	// Setup turns ip_forward on; give the host back the value it had.
	forward, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	code := m.Run()
	if len(forward) > 0 {
		_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", forward, 0o644)
	}
	os.Exit(code)
}

type helperResult struct {
	PodID, PodIP, NetNSPath string
	Err                     string
}

// setupHelper runs in a child process: it sets up the pods named in the
// environment concurrently, prints the results and exits without tearing
// anything down, like a supervisor that crashed.
func setupHelper() int {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv(helperConfigEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ids := strings.Split(os.Getenv(helperPodsEnv), ",")
	results := make([]helperResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			res, err := Setup(context.Background(), cfg, Request{PodID: id, Namespace: "helper", Name: id})
			results[i].PodID = id
			if err != nil {
				results[i].Err = err.Error()
				return
			}
			results[i].PodIP, results[i].NetNSPath = res.PodIP, res.NetNSPath
		})
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return 2
	}
	return 0
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (network namespaces, links and nftables)")
	}
}

var (
	subnetsMu sync.Mutex
	subnets   = map[int]bool{}
)

// testEnv is one test's private network world.
type testEnv struct {
	t   *testing.T
	cfg Config
	r   resolved

	mu   sync.Mutex
	pods []string
}

func randHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	requireRoot(t)
	var subnet string
	subnetsMu.Lock()
	for range 100 {
		n, err := rand.Int(rand.Reader, big.NewInt(256))
		if err != nil {
			t.Fatal(err)
		}
		x := int(n.Int64())
		p := netip.MustParsePrefix(fmt.Sprintf("10.231.%d.0/24", x))
		if subnets[x] || checkSubnetFree(p, -1) != nil {
			continue
		}
		subnets[x] = true
		subnet = p.String()
		break
	}
	subnetsMu.Unlock()
	if subnet == "" {
		t.Fatal("no free 10.231.x.0/24 subnet for the test")
	}
	dir := t.TempDir()
	e := &testEnv{t: t, cfg: Config{
		RunRoot:  filepath.Join(dir, "run"),
		StateDir: filepath.Join(dir, "state"),
		Bridge:   "prt" + randHex(t, 4),
		Subnet:   subnet,
	}}
	var err error
	if e.r, err = e.cfg.resolve(); err != nil {
		t.Fatal(err)
	}
	// Registered after t.TempDir, so it runs before the directory goes.
	t.Cleanup(e.forceCleanup)
	return e
}

func (e *testEnv) podID() string {
	id := "pod-" + randHex(e.t, 8)
	e.mu.Lock()
	e.pods = append(e.pods, id)
	e.mu.Unlock()
	return id
}

// forceCleanup removes everything the test may have left, whatever state
// the package got into, and complains if Teardown had not done it already.
func (e *testEnv) forceCleanup() {
	e.mu.Lock()
	pods := append([]string(nil), e.pods...)
	e.mu.Unlock()
	for _, id := range pods {
		if err := Teardown(e.cfg, id); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	if left, err := Leftovers(e.cfg); err != nil || len(left) > 0 {
		e.t.Errorf("cleanup: leftovers after tearing every pod down: %q (%v)", left, err)
	}
	for _, id := range pods {
		_ = deleteLink(hostVethName(id))
		_ = removeNetNS(e.r.netnsPath(id))
	}
	if mps, err := mountPoints(e.cfg.RunRoot); err == nil {
		for _, mp := range mps {
			_ = removeNetNS(mp)
		}
	}
	_ = deleteTable(e.r.table)
	_ = deleteLink(e.r.bridge)
}

func (e *testEnv) setup(req Request) *Result {
	e.t.Helper()
	res, err := Setup(context.Background(), e.cfg, req)
	if err != nil {
		e.t.Fatalf("Setup(%s): %v", req.PodID, err)
	}
	return res
}

// assertPodGone checks with netlink, the mount table and nftables that
// nothing of the pod remains.
func (e *testEnv) assertPodGone(id string) {
	e.t.Helper()
	if l, err := findLink(hostVethName(id)); err != nil || l != nil {
		e.t.Errorf("pod %s: veth %s still exists (%v)", id, hostVethName(id), err)
	}
	if _, err := os.Lstat(e.r.netnsPath(id)); !errors.Is(err, os.ErrNotExist) {
		e.t.Errorf("pod %s: netns file %s still exists (%v)", id, e.r.netnsPath(id), err)
	}
	if m, err := isMountPoint(e.r.netnsPath(id)); err != nil || m {
		e.t.Errorf("pod %s: netns still mounted (%v)", id, err)
	}
	if left, err := PodLeftovers(e.cfg, id); err != nil || len(left) > 0 {
		e.t.Errorf("pod %s: leftovers %q (%v)", id, left, err)
	}
}

// assertAllGone checks that the table and the bridge are gone too.
func (e *testEnv) assertAllGone() {
	e.t.Helper()
	c, err := newConn()
	if err != nil {
		e.t.Fatal(err)
	}
	if tb, err := findTable(c, e.r.table); err != nil || tb != nil {
		e.t.Errorf("nftables table %s still exists after the last pod (%v)", e.r.table, err)
	}
	if l, err := findLink(e.r.bridge); err != nil || l != nil {
		e.t.Errorf("bridge %s still exists after the last pod (%v)", e.r.bridge, err)
	}
	if left, err := Leftovers(e.cfg); err != nil || len(left) > 0 {
		e.t.Errorf("leftovers: %q (%v)", left, err)
	}
}

// inNetNS runs f on a thread that is in the namespace at path.
func inNetNS(path string, f func() error) error {
	errCh := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errCh <- func() error {
			orig, err := netns.Get()
			if err != nil {
				return err
			}
			defer orig.Close()
			ns, err := netns.GetFromPath(path)
			if err != nil {
				return err
			}
			defer ns.Close()
			if err := netns.Set(ns); err != nil {
				return err
			}
			ferr := f()
			if err := netns.Set(orig); err != nil {
				return err // the thread dies locked
			}
			runtime.UnlockOSThread()
			return ferr
		}()
	}()
	return <-errCh
}

// ping sends ICMP echo requests from inside the namespace at nsPath to dst
// over a raw socket and waits for a reply from dst.
func ping(nsPath, dst string) error {
	var conn *icmp.PacketConn
	if err := inNetNS(nsPath, func() (err error) {
		conn, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	}); err != nil {
		return fmt.Errorf("opening a raw ICMP socket in %s: %w", nsPath, err)
	}
	defer conn.Close()
	id := int(time.Now().UnixNano() & 0xffff)
	for seq := 1; seq <= 5; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("podrun")}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := conn.WriteTo(b, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
			return fmt.Errorf("sending echo to %s: %w", dst, err)
		}
		deadline := time.Now().Add(time.Second)
		for {
			_ = conn.SetReadDeadline(deadline)
			buf := make([]byte, 1500)
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				break // no reply within a second: send the next request
			}
			reply, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || reply.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if echo, ok := reply.Body.(*icmp.Echo); ok && echo.ID == id && from.String() == dst {
				return nil
			}
		}
	}
	return fmt.Errorf("no echo reply from %s", dst)
}

// serveInPod listens on TCP port inside the namespace and answers every
// connection with the greeting; the listener closes with the test.
func serveInPod(t *testing.T, nsPath string, port int, greeting string) {
	t.Helper()
	var ln net.Listener
	if err := inNetNS(nsPath, func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		return err
	}); err != nil {
		t.Fatalf("listening in the pod: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, greeting)
			_ = c.Close()
		}
	}()
}

// fetch connects to addr (from the host, or from inside nsPath when it is
// not empty) and returns what the server sent.
func fetch(nsPath, addr string) (string, error) {
	var c net.Conn
	dial := func() (err error) {
		c, err = net.DialTimeout("tcp4", addr, 3*time.Second)
		return err
	}
	var err error
	if nsPath == "" {
		err = dial()
	} else {
		err = inNetNS(nsPath, dial)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(bufio.NewReader(c))
	return string(b), err
}

func randomPort(t *testing.T) int {
	n, err := rand.Int(rand.Reader, big.NewInt(10000))
	if err != nil {
		t.Fatal(err)
	}
	return 20000 + int(n.Int64())
}

func TestTwoPodsPingEachOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.podID(), e.podID()
	ra := e.setup(Request{PodID: a, Namespace: "ns", Name: "a"})
	rb := e.setup(Request{PodID: b, Namespace: "ns", Name: "b"})

	subnet := netip.MustParsePrefix(e.cfg.Subnet)
	for id, r := range map[string]*Result{a: ra, b: rb} {
		ip := netip.MustParseAddr(r.PodIP)
		if !subnet.Contains(ip) || r.Gateway != e.r.gateway.String() || len(r.PodIPs) != 1 || r.PodIPs[0] != r.PodIP {
			t.Errorf("result %+v: want an address in %s and gateway %s", r, subnet, e.r.gateway)
		}
		if r.HostIP == "" || r.NetNSPath != e.r.netnsPath(id) {
			t.Errorf("result %+v: want the host IP and the netns path %s", r, e.r.netnsPath(id))
		}
	}
	if ra.PodIP == rb.PodIP {
		t.Fatalf("both pods got %s", ra.PodIP)
	}
	if err := ping(ra.NetNSPath, rb.PodIP); err != nil {
		t.Errorf("pod a → pod b: %v", err)
	}
	if err := ping(rb.NetNSPath, ra.PodIP); err != nil {
		t.Errorf("pod b → pod a: %v", err)
	}
	if err := ping(ra.NetNSPath, ra.Gateway); err != nil {
		t.Errorf("pod a → bridge: %v", err)
	}
	if err := ping(ra.NetNSPath, "127.0.0.1"); err != nil {
		t.Errorf("pod a → its loopback: %v", err)
	}

	// The pod sees lo and eth0 up, the address and the default route.
	ns, err := netns.GetFromPath(ra.NetNSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	br, err := netlink.LinkByName(e.r.bridge)
	if err != nil {
		t.Fatal(err)
	}
	host, err := netlink.LinkByName(hostVethName(a))
	if err != nil {
		t.Fatal(err)
	}
	mtu, err := uplinkMTU()
	if err != nil {
		t.Fatal(err)
	}
	if eth.Attrs().MTU != mtu || host.Attrs().MTU != mtu || br.Attrs().MTU != mtu {
		t.Errorf("MTUs: pod %d, host veth %d, bridge %d; want the uplink's %d", eth.Attrs().MTU, host.Attrs().MTU, br.Attrs().MTU, mtu)
	}
	if host.Attrs().MasterIndex != br.Attrs().Index {
		t.Errorf("host veth is not on the bridge")
	}
	routes, err := h.RouteList(eth, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	hasDefault := false
	for _, rt := range routes {
		if (rt.Dst == nil || rt.Dst.String() == "0.0.0.0/0") && rt.Gw.String() == ra.Gateway {
			hasDefault = true
		}
	}
	if !hasDefault {
		t.Errorf("no default route via %s in the pod: %v", ra.Gateway, routes)
	}

	if err := Teardown(e.cfg, a); err != nil {
		t.Fatal(err)
	}
	e.assertPodGone(a)
	if l, _ := findLink(e.r.bridge); l == nil {
		t.Errorf("bridge removed while pod b still uses it")
	}
	if err := Teardown(e.cfg, a); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
	if err := Teardown(e.cfg, b); err != nil {
		t.Fatal(err)
	}
	e.assertPodGone(b)
	e.assertAllGone()
}

func TestHostPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	web, client := e.podID(), e.podID()
	hostPort, localPort := randomPort(t), randomPort(t)+10000
	rw := e.setup(Request{PodID: web, Namespace: "ns", Name: "web", Ports: []PortMapping{
		{HostPort: int32(hostPort), ContainerPort: 8080, Protocol: "TCP"},
		{HostPort: int32(localPort), ContainerPort: 8081, Protocol: "TCP", HostIP: "127.0.0.1"},
		{ContainerPort: 9090}, // not published
	}})
	rc := e.setup(Request{PodID: client, Namespace: "ns", Name: "client"})
	serveInPod(t, rw.NetNSPath, 8080, "hello from web")
	serveInPod(t, rw.NetNSPath, 8081, "hello from local")

	st, err := readState(e.cfg.StateDir, web)
	if err != nil || st == nil || len(st.RuleHandles) != 2 || !st.Complete {
		t.Fatalf("state of the web pod: %+v, %v; want 2 rule handles", st, err)
	}

	tests := []struct {
		name, from, addr, want string
	}{
		{"host via 127.0.0.1", "", fmt.Sprintf("127.0.0.1:%d", hostPort), "hello from web"},
		{"host via the host IP", "", net.JoinHostPort(rw.HostIP, fmt.Sprint(hostPort)), "hello from web"},
		{"host via the pod IP", "", net.JoinHostPort(rw.PodIP, "8080"), "hello from web"},
		{"other pod via the host IP (hairpin)", rc.NetNSPath, net.JoinHostPort(rw.HostIP, fmt.Sprint(hostPort)), "hello from web"},
		{"other pod via the pod IP", rc.NetNSPath, net.JoinHostPort(rw.PodIP, "8080"), "hello from web"},
		{"hostIP 127.0.0.1 port via 127.0.0.1", "", fmt.Sprintf("127.0.0.1:%d", localPort), "hello from local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fetch(tc.from, tc.addr)
			if err != nil || got != tc.want {
				t.Errorf("fetch %s: %q, %v; want %q", tc.addr, got, err, tc.want)
			}
		})
	}
	t.Run("hostIP 127.0.0.1 port is not published on the host IP", func(t *testing.T) {
		got, err := fetch("", net.JoinHostPort(rw.HostIP, fmt.Sprint(localPort)))
		if err == nil && got == "hello from local" {
			t.Errorf("a port published on 127.0.0.1 answered on %s", rw.HostIP)
		}
	})
	t.Run("a second pod cannot take the same hostPort", func(t *testing.T) {
		other := e.podID()
		_, err := Setup(context.Background(), e.cfg, Request{PodID: other, Namespace: "ns", Name: "other",
			Ports: []PortMapping{{HostPort: int32(hostPort), ContainerPort: 80}}})
		if err == nil || !strings.Contains(err.Error(), "already published by pod ns/web") {
			t.Errorf("Setup with a taken hostPort: %v", err)
		}
		e.assertPodGone(other)
	})

	if err := Teardown(e.cfg, web); err != nil {
		t.Fatal(err)
	}
	e.assertPodGone(web)
	if _, err := fetch("", fmt.Sprintf("127.0.0.1:%d", hostPort)); err == nil {
		t.Errorf("the hostPort still answers after Teardown")
	}
	if err := Teardown(e.cfg, client); err != nil {
		t.Fatal(err)
	}
	e.assertAllGone()
}

func TestConcurrentSetups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfgJSON, err := json.Marshal(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const procs, perProc, inProc = 2, 5, 10
	type outcome struct {
		id, ip, ns string
	}
	var mu sync.Mutex
	var got []outcome
	var wg sync.WaitGroup
	for range procs {
		var ids []string
		for range perProc {
			ids = append(ids, e.podID())
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=setup", helperConfigEnv+"="+string(cfgJSON), helperPodsEnv+"="+strings.Join(ids, ","))
		cmd.Stderr = os.Stderr
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("helper process: %v", err)
				return
			}
			var results []helperResult
			if err := json.Unmarshal(out, &results); err != nil {
				t.Errorf("helper output %q: %v", out, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range results {
				if r.Err != "" {
					t.Errorf("Setup in the helper process: %s", r.Err)
					continue
				}
				got = append(got, outcome{r.PodID, r.PodIP, r.NetNSPath})
			}
		})
	}
	for range inProc {
		id := e.podID()
		wg.Go(func() {
			res, err := Setup(context.Background(), e.cfg, Request{PodID: id, Namespace: "ns", Name: id})
			if err != nil {
				t.Errorf("Setup: %v", err)
				return
			}
			mu.Lock()
			got = append(got, outcome{id, res.PodIP, res.NetNSPath})
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != procs*perProc+inProc {
		t.Fatalf("%d pods set up, want %d", len(got), procs*perProc+inProc)
	}
	seen := map[string]string{}
	for _, o := range got {
		if prev, ok := seen[o.ip]; ok {
			t.Errorf("pods %s and %s both got %s", prev, o.id, o.ip)
		}
		seen[o.ip] = o.id
		if m, err := isMountPoint(o.ns); err != nil || !m {
			t.Errorf("pod %s: netns %s not mounted (%v)", o.id, o.ns, err)
		}
	}
	// The first pod reaches the last one: the bridge serves them all.
	if err := ping(got[0].ns, got[len(got)-1].ip); err != nil {
		t.Errorf("ping between concurrently created pods: %v", err)
	}

	// Tear down concurrently too, from this process: the helpers' pods
	// are torn down by a process that never saw them.
	for _, o := range got {
		wg.Go(func() {
			if err := Teardown(e.cfg, o.id); err != nil {
				t.Errorf("Teardown(%s): %v", o.id, err)
			}
		})
	}
	wg.Wait()
	for _, o := range got {
		e.assertPodGone(o.id)
	}
	e.assertAllGone()
}

func TestSetupFailingHalfWayLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"allocate", "bridge", "netns", "veth", "nftables", "done"} {
		t.Run("after "+step, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.cfg
			cfg.failAt = step
			id := e.podID()
			_, err := Setup(context.Background(), cfg, Request{PodID: id, Namespace: "ns", Name: "x",
				Ports: []PortMapping{{HostPort: int32(randomPort(t)), ContainerPort: 80}}})
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("Setup: %v, want the injected failure", err)
			}
			e.assertPodGone(id)
			e.assertAllGone()
		})
	}
	t.Run("with another pod running, only the failed pod goes", func(t *testing.T) {
		e := newEnv(t)
		keep, fail := e.podID(), e.podID()
		rk := e.setup(Request{PodID: keep, Namespace: "ns", Name: "keep", Ports: []PortMapping{{HostPort: int32(randomPort(t)), ContainerPort: 80}}})
		cfg := e.cfg
		cfg.failAt = "nftables"
		if _, err := Setup(context.Background(), cfg, Request{PodID: fail, Namespace: "ns", Name: "fail",
			Ports: []PortMapping{{HostPort: int32(randomPort(t)) + 10000, ContainerPort: 80}}}); err == nil {
			t.Fatal("Setup did not fail")
		}
		e.assertPodGone(fail)
		left, err := PodLeftovers(e.cfg, keep)
		if err != nil {
			t.Fatal(err)
		}
		// state file, netns file and mount, veth, one nft rule
		if len(left) != 5 {
			t.Errorf("the running pod lost parts of its network: %q", left)
		}
		if err := ping(rk.NetNSPath, rk.Gateway); err != nil {
			t.Errorf("running pod after a failed Setup: %v", err)
		}
		if err := Teardown(e.cfg, keep); err != nil {
			t.Fatal(err)
		}
		e.assertAllGone()
	})
	t.Run("invalid config creates nothing", func(t *testing.T) {
		e := newEnv(t)
		for _, mod := range []func(*Config){
			func(c *Config) { c.Bridge = "prt-name-too-long-for-linux" },
			func(c *Config) { c.Subnet = "10.231.0.0/33" },
			func(c *Config) { c.Subnet = "not-a-subnet" },
		} {
			cfg := e.cfg
			mod(&cfg)
			id := e.podID()
			if _, err := Setup(context.Background(), cfg, Request{PodID: id, Namespace: "ns", Name: "x"}); err == nil {
				t.Errorf("Setup with %+v succeeded", cfg)
			}
			e.assertPodGone(id)
		}
		if _, err := os.Stat(e.cfg.StateDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state dir created for an invalid config: %v", err)
		}
		e.assertAllGone()
	})
}

func TestSubnetCollision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A bridge of the test's own owns the subnet; the pod subnet overlaps it.
	dummy := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "prd" + randHex(t, 4)}}
	if err := netlink.LinkAdd(dummy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteLink(dummy.Name) })
	p := netip.MustParsePrefix(e.cfg.Subnet)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().Next().Next().AsSlice(), Mask: net.CIDRMask(24, 32)}}
	if err := netlink.AddrAdd(dummy, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(dummy); err != nil {
		t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Subnet = netip.PrefixFrom(p.Addr(), 25).String()
	id := e.podID()
	_, err := Setup(context.Background(), cfg, Request{PodID: id, Namespace: "ns", Name: "x"})
	var ce *SubnetCollisionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), SubnetFlag) || !strings.Contains(err.Error(), dummy.Name) {
		t.Fatalf("Setup on a taken subnet: %v; want a SubnetCollisionError naming %s and %s", err, dummy.Name, SubnetFlag)
	}
	e.assertPodGone(id)
	e.assertAllGone()
}

func TestSetupAgainReplacesThePodsNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.podID()
	hp := randomPort(t)
	req := Request{PodID: id, Namespace: "ns", Name: "again", Ports: []PortMapping{{HostPort: int32(hp), ContainerPort: 80}}}
	e.setup(req)
	// A supervisor that crashed and starts over calls Setup again.
	r2 := e.setup(req)
	left, err := PodLeftovers(e.cfg, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 5 { // state, netns file, netns mount, veth, one rule
		t.Errorf("after a second Setup: %q; want exactly one set", left)
	}
	if err := ping(r2.NetNSPath, r2.Gateway); err != nil {
		t.Error(err)
	}
	if err := Teardown(e.cfg, id); err != nil {
		t.Fatal(err)
	}
	e.assertPodGone(id)
	e.assertAllGone()
}

func TestTeardownAfterACrashMidSetup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.podID()
	// Build the pieces by hand as a Setup killed before writing its final
	// state would leave them: state file without Complete, netns, veth.
	r := e.r
	if err := os.MkdirAll(filepath.Join(r.stateDir, "pods"), 0o700); err != nil {
		t.Fatal(err)
	}
	boot, err := currentBootID()
	if err != nil {
		t.Fatal(err)
	}
	st := &podState{PodID: id, BootID: boot, IP: r.gateway.Next().String(), Table: r.table, NetNSPath: r.netnsPath(id), HostVeth: hostVethName(id)}
	if err := writeState(r.stateDir, st); err != nil {
		t.Fatal(err)
	}
	if err := createNetNS(st.NetNSPath); err != nil {
		t.Fatal(err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = st.HostVeth
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "prp" + randHex(t, 4)}); err != nil {
		t.Fatal(err)
	}
	if left, _ := PodLeftovers(e.cfg, id); len(left) != 4 {
		t.Fatalf("crash leftovers: %q", left)
	}
	if err := Teardown(e.cfg, id); err != nil {
		t.Fatal(err)
	}
	e.assertPodGone(id)
	e.assertAllGone()
	if err := Teardown(e.cfg, id); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
}

func TestHostNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.podID()
	res := e.setup(Request{PodID: id, Namespace: "ns", Name: "h", HostNetwork: true, Ports: []PortMapping{{HostPort: 80, ContainerPort: 80}}})
	hostIP, err := HostIP()
	if err != nil {
		t.Fatal(err)
	}
	if res.NetNSPath != "" || res.PodIP != hostIP || res.HostIP != hostIP || len(res.PodIPs) != 1 || res.PodIPs[0] != hostIP || res.Gateway != "" {
		t.Errorf("hostNetwork result %+v; want no netns and the host IP %s", res, hostIP)
	}
	if _, err := os.Stat(e.cfg.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hostNetwork Setup touched the state dir: %v", err)
	}
	if err := Teardown(e.cfg, id); err != nil {
		t.Fatal(err)
	}
	e.assertAllGone()
}

func TestHostIP(t *testing.T) {
	ip, err := HostIP()
	if err != nil {
		t.Fatal(err)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || a.IsLoopback() || a.IsUnspecified() {
		t.Fatalf("HostIP() = %q (%v); want a global address", ip, err)
	}
	// It must be one of the host's addresses.
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		t.Fatal(err)
	}
	for _, ad := range addrs {
		if ad.IP.String() == ip {
			return
		}
	}
	t.Errorf("HostIP() = %s is not an address of this host", ip)
}

// outsideNetwork is a namespace of the test's own standing for "another
// network": a veth from the host into it, with its own subnet and no route
// to the pods, so only masquerading lets pods talk to it.
func outsideNetwork(t *testing.T, e *testEnv) (nsPath string, hostAddr, outsideAddr netip.Addr) {
	t.Helper()
	other := newEnv(t) // only for a free subnet and a private run root
	p := netip.MustParsePrefix(other.cfg.Subnet)
	hostAddr, outsideAddr = p.Addr().Next(), p.Addr().Next().Next()
	nsPath = filepath.Join(other.cfg.RunRoot, "outside")
	if err := createNetNS(nsPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeNetNS(nsPath) })
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "pro" + randHex(t, 4)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteLink(attrs.Name) })
	host, err := netlink.LinkByName(attrs.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: &net.IPNet{IP: hostAddr.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, name := range []string{"lo", "eth0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "eth0" {
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: outsideAddr.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return nsPath, hostAddr, outsideAddr
}

// serveRemoteAddr answers every connection with the caller's address as the server sees it.
func serveRemoteAddr(t *testing.T, nsPath string, port int) {
	t.Helper()
	var ln net.Listener
	if err := inNetNS(nsPath, func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			_, _ = io.WriteString(c, host)
			_ = c.Close()
		}
	}()
}

func TestOutboundNAT(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.podID(), e.podID()
	ra := e.setup(Request{PodID: a, Namespace: "ns", Name: "a"})
	rb := e.setup(Request{PodID: b, Namespace: "ns", Name: "b"})
	outside, hostAddr, outsideAddr := outsideNetwork(t, e)
	serveRemoteAddr(t, outside, 7000)
	serveRemoteAddr(t, rb.NetNSPath, 7000)

	tests := []struct {
		name, addr, want string
	}{
		{"leaving the pod subnet is masqueraded", net.JoinHostPort(outsideAddr.String(), "7000"), hostAddr.String()},
		{"pod to pod keeps the pod address", net.JoinHostPort(rb.PodIP, "7000"), ra.PodIP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fetch(ra.NetNSPath, tc.addr)
			if err != nil || got != tc.want {
				t.Errorf("from pod a to %s the server saw %q (%v), want %q", tc.addr, got, err, tc.want)
			}
		})
	}
	for _, id := range []string{a, b} {
		if err := Teardown(e.cfg, id); err != nil {
			t.Fatal(err)
		}
	}
	e.assertAllGone()
}

func TestBridgeOwnership(t *testing.T) {
	t.Parallel()
	t.Run("a bridge of another state dir is refused", func(t *testing.T) {
		e := newEnv(t)
		id := e.podID()
		e.setup(Request{PodID: id, Namespace: "ns", Name: "first"})
		other := e.cfg
		other.StateDir = filepath.Join(t.TempDir(), "other-state")
		otherID := e.podID()
		_, err := Setup(context.Background(), other, Request{PodID: otherID, Namespace: "ns", Name: "second"})
		if err == nil || !strings.Contains(err.Error(), "belongs to another podrun state directory") {
			t.Fatalf("Setup on another state dir's bridge: %v", err)
		}
		if l, _ := findLink(e.r.bridge); l == nil {
			t.Fatal("the failed Setup removed the first state dir's bridge")
		}
		if err := Teardown(other, otherID); err != nil {
			t.Fatal(err)
		}
		if err := Teardown(e.cfg, id); err != nil {
			t.Fatal(err)
		}
		e.assertAllGone()
	})
	t.Run("a bridge the user made is used and kept", func(t *testing.T) {
		e := newEnv(t)
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: e.r.bridge}}
		if err := netlink.LinkAdd(br); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = deleteLink(e.r.bridge) })
		id := e.podID()
		res := e.setup(Request{PodID: id, Namespace: "ns", Name: "x"})
		if err := ping(res.NetNSPath, res.Gateway); err != nil {
			t.Error(err)
		}
		if err := Teardown(e.cfg, id); err != nil {
			t.Fatal(err)
		}
		e.assertPodGone(id)
		if l, _ := findLink(e.r.bridge); l == nil {
			t.Error("podrun removed a bridge it did not create")
		}
		if left, err := Leftovers(e.cfg); err != nil || len(left) > 0 {
			t.Errorf("leftovers: %q (%v)", left, err)
		}
	})
}

// Not parallel: it owns the host's ip_forward while it runs (TestMain
// restores the original value at the end).
func TestIPForwardNote(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := e.podID(), e.podID()
	ra := e.setup(Request{PodID: a, Namespace: "ns", Name: "a"})
	if len(ra.Notes) != 1 || !strings.Contains(ra.Notes[0], "net.ipv4.ip_forward") {
		t.Errorf("notes %q; want one about net.ipv4.ip_forward", ra.Notes)
	}
	if v, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(v)) != "1" {
		t.Errorf("ip_forward = %q after Setup, want 1", v)
	}
	if rb := e.setup(Request{PodID: b, Namespace: "ns", Name: "b"}); len(rb.Notes) != 0 {
		t.Errorf("second pod's notes %q; the note is said once", rb.Notes)
	}
	for _, id := range []string{a, b} {
		if err := Teardown(e.cfg, id); err != nil {
			t.Fatal(err)
		}
	}
	e.assertAllGone()
}

func TestSetupWithCanceledContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	id := e.podID()
	if _, err := Setup(ctx, e.cfg, Request{PodID: id, Namespace: "ns", Name: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Setup with a canceled context: %v", err)
	}
	e.assertPodGone(id)
	e.assertAllGone()
}

// Setup is what the supervisor does in two steps, Prepare then Connect
// (with the containers created between), in one call for these tests. For
// hostNetwork pods it creates nothing and reports the host's address. If
// Setup fails, it removes what it made; if the pod already has a network (a
// crashed supervisor's), that is torn down first.
func Setup(ctx context.Context, cfg Config, req Request) (*Result, error) {
	res, p, err := Prepare(ctx, cfg, req)
	if err != nil {
		return nil, err
	}
	if err := p.Connect(ctx); err != nil {
		return nil, err
	}
	return res, nil
}
