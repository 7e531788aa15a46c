package network

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// svcEnv is a private network for the Service tests: a bridge psv<hex>, a
// 10.215.25x.0/24 pod subnet, service addresses from 10.216.0.0/24, and the
// pods' and Services' nftables tables, all removed with the test.
func svcEnv(t *testing.T) *testEnv {
	t.Helper()
	requireRoot(t)
	var subnet string
	subnetsMu.Lock()
	for x := 250; x < 256; x++ {
		p := netip.MustParsePrefix(fmt.Sprintf("10.215.%d.0/24", x))
		if subnets[1000+x] || checkSubnetFree(p, -1) != nil {
			continue
		}
		subnets[1000+x] = true
		subnet = p.String()
		break
	}
	subnetsMu.Unlock()
	if subnet == "" {
		t.Fatal("no free 10.215.25x.0/24 subnet for the test")
	}
	dir := t.TempDir()
	e := &testEnv{t: t, cfg: Config{
		RunRoot:  filepath.Join(dir, "run"),
		StateDir: filepath.Join(dir, "state"),
		Bridge:   "psv" + randHex(t, 4),
		Subnet:   subnet,
	}}
	var err error
	if e.r, err = e.cfg.resolve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SyncServices(context.Background(), e.cfg, nil); err != nil {
			t.Errorf("cleanup: removing the service rules: %v", err)
		}
		if left, err := ServicesLeftovers(e.cfg); err != nil || len(left) > 0 {
			t.Errorf("cleanup: %q (%v)", left, err)
		}
		subnetsMu.Lock()
		delete(subnets, 1000+int(netip.MustParsePrefix(subnet).Addr().As4()[2]))
		subnetsMu.Unlock()
	})
	t.Cleanup(e.forceCleanup)
	return e
}

func (e *testEnv) sync(ports ...ServicePort) {
	e.t.Helper()
	if err := SyncServices(context.Background(), e.cfg, ports); err != nil {
		e.t.Fatal(err)
	}
}

func randomNodePort(t *testing.T) int32 {
	n, err := rand.Int(rand.Reader, big.NewInt(2700))
	if err != nil {
		t.Fatal(err)
	}
	return 30050 + int32(n.Int64())
}

// spread fetches addr n times from nsPath ("" = the host) and counts the answers.
func spread(t *testing.T, nsPath, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		s, err := fetch(nsPath, addr)
		if err != nil {
			t.Fatalf("fetching %s from %q: %v", addr, nsPath, err)
		}
		got[s]++
	}
	return got
}

func TestServicesClusterIPNodePortHairpinAndReject(t *testing.T) {
	e := svcEnv(t)
	a := e.setup(Request{PodID: e.podID(), Namespace: "default", Name: "a"})
	b := e.setup(Request{PodID: e.podID(), Namespace: "default", Name: "b"})
	client := e.setup(Request{PodID: e.podID(), Namespace: "default", Name: "client"})
	serveInPod(t, a.NetNSPath, 8080, "a")
	serveInPod(t, b.NetNSPath, 8080, "b")
	nodePort := randomNodePort(t)
	web := ServicePort{Namespace: "default", Name: "web", PortName: "http", Protocol: "TCP", ClusterIP: "10.216.0.50", Port: 80, NodePort: nodePort,
		Endpoints: []ServiceEndpoint{{a.PodIP, 8080}, {b.PodIP, 8080}}}
	onlyA := ServicePort{Namespace: "default", Name: "only-a", Protocol: "TCP", ClusterIP: "10.216.0.51", Port: 80,
		Endpoints: []ServiceEndpoint{{a.PodIP, 8080}}}
	empty := ServicePort{Namespace: "default", Name: "empty", Protocol: "TCP", ClusterIP: "10.216.0.52", Port: 80, NodePort: nodePort + 1}
	e.sync(web, onlyA, empty)

	t.Run("ClusterIP from a pod reaches both endpoints", func(t *testing.T) {
		got := spread(t, client.NetNSPath, "10.216.0.50:80", 40)
		if got["a"] == 0 || got["b"] == 0 || got["a"]+got["b"] != 40 {
			t.Errorf("answers %v, want both endpoints", got)
		}
	})
	t.Run("ClusterIP from the host", func(t *testing.T) {
		got := spread(t, "", "10.216.0.50:80", 20)
		if got["a"]+got["b"] != 20 {
			t.Errorf("answers %v", got)
		}
	})
	t.Run("hairpin: a pod reaches itself through its Service", func(t *testing.T) {
		if got := spread(t, a.NetNSPath, "10.216.0.51:80", 3); got["a"] != 3 {
			t.Errorf("answers %v, want a", got)
		}
	})
	t.Run("NodePort on the host's address and 127.0.0.1", func(t *testing.T) {
		hostIP, err := HostIP()
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range []string{hostIP, "127.0.0.1"} {
			got := spread(t, "", net.JoinHostPort(ip, fmt.Sprint(nodePort)), 20)
			if got["a"] == 0 || got["b"] == 0 {
				t.Errorf("%s:%d answers %v, want both endpoints", ip, nodePort, got)
			}
		}
	})
	t.Run("no endpoints: refused at once", func(t *testing.T) {
		for _, tc := range []struct{ ns, addr string }{
			{client.NetNSPath, "10.216.0.52:80"},
			{"", "10.216.0.52:80"},
			{"", fmt.Sprintf("127.0.0.1:%d", nodePort+1)},
			{client.NetNSPath, "10.216.0.50:81"}, // a port the ClusterIP does not serve
		} {
			start := time.Now()
			_, err := fetch(tc.ns, tc.addr)
			if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > time.Second {
				t.Errorf("%s from %q: %v after %v, want connection refused at once", tc.addr, tc.ns, err, time.Since(start))
			}
		}
	})
	t.Run("session affinity ClientIP", func(t *testing.T) {
		sticky := web
		sticky.AffinitySeconds = 60
		e.sync(sticky, onlyA, empty)
		got := spread(t, client.NetNSPath, "10.216.0.50:80", 15)
		if len(got) != 1 {
			t.Errorf("answers %v, want one endpoint for one client", got)
		}
	})
	t.Run("endpoints change with a sync", func(t *testing.T) {
		onlyB := web
		onlyB.Endpoints = []ServiceEndpoint{{b.PodIP, 8080}}
		e.sync(onlyB, onlyA, empty)
		if got := spread(t, client.NetNSPath, "10.216.0.50:80", 10); got["b"] != 10 {
			t.Errorf("answers %v, want only b", got)
		}
	})

	// The Services outlive the last pod: their table is not the pods'.
	for _, id := range e.pods {
		if err := Teardown(e.cfg, id); err != nil {
			t.Fatal(err)
		}
	}
	left, err := ServicesLeftovers(e.cfg)
	if err != nil || len(left) != 1 || !strings.Contains(left[0], e.r.servicesTable()) {
		t.Errorf("after the last pod: %q (%v), want the Service table kept", left, err)
	}
	e.sync()
	if left, err := ServicesLeftovers(e.cfg); err != nil || len(left) != 0 {
		t.Errorf("after syncing no Services: %q (%v)", left, err)
	}
}

func TestServicesRenderIsStable(t *testing.T) {
	p1 := ServicePort{Namespace: "b", Name: "x", Protocol: "TCP", ClusterIP: "10.216.0.2", Port: 80, Endpoints: []ServiceEndpoint{{"10.215.250.2", 80}}}
	p2 := ServicePort{Namespace: "a", Name: "y", Protocol: "UDP", ClusterIP: "10.216.0.3", Port: 53}
	none := existingObjects{}
	if renderServices("t", []ServicePort{p1, p2}, none) != renderServices("t", []ServicePort{p2, p1}, none) {
		t.Error("the rules depend on the order of the ports")
	}
	if got := renderServices("t", nil, existingObjects{table: true}); got != "" {
		t.Errorf("no ports: %q (SyncServices deletes the table itself)", got)
	}
	stale := renderServices("t", []ServicePort{p1}, existingObjects{table: true,
		chains: map[string]bool{"services": true, p2.svcChain(): true}, sets: map[string]bool{"affinity-OLD": true, "cluster-ips": true}})
	if !strings.Contains(stale, "delete chain ip t "+p2.svcChain()+"\n") || !strings.Contains(stale, "delete set ip t affinity-OLD\n") ||
		strings.Contains(stale, "delete chain ip t services") || strings.Contains(stale, "delete set ip t cluster-ips") {
		t.Errorf("stale objects not removed (or wanted ones removed):\n%s", stale)
	}
	bad := p1
	bad.ClusterIP = "fd00::1"
	if err := SyncServices(context.Background(), Config{RunRoot: "/nonexistent", StateDir: "/nonexistent"}, []ServicePort{bad}); err == nil || !strings.Contains(err.Error(), "not an IPv4 address") {
		t.Errorf("IPv6 cluster IP: %v", err)
	}
}

// BenchmarkSyncServices measures one level-triggered sync of 100 Services
// with 2 endpoints each (the whole table rewritten in one transaction).
func BenchmarkSyncServices(b *testing.B) {
	dir := b.TempDir()
	cfg := Config{RunRoot: filepath.Join(dir, "run"), StateDir: filepath.Join(dir, "state"), Bridge: "psvbench", Subnet: "10.215.249.0/24"}
	var ports []ServicePort
	for i := range 100 {
		ports = append(ports, ServicePort{Namespace: "default", Name: fmt.Sprintf("s%d", i), Protocol: "TCP",
			ClusterIP: fmt.Sprintf("10.216.%d.%d", 100+i/250, 1+i%250), Port: 80,
			Endpoints: []ServiceEndpoint{{"10.215.249.2", 8080}, {"10.215.249.3", 8080}}})
	}
	b.Cleanup(func() { _ = SyncServices(context.Background(), cfg, nil) })
	for b.Loop() {
		if err := SyncServices(context.Background(), cfg, ports); err != nil {
			b.Fatal(err)
		}
	}
}
