package network

import (
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLastAddr(t *testing.T) {
	tests := []struct{ prefix, want string }{
		{"10.87.0.0/24", "10.87.0.255"},
		{"10.0.0.0/8", "10.255.255.255"},
		{"192.168.4.0/22", "192.168.7.255"},
		{"10.1.2.8/29", "10.1.2.15"},
	}
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			if got := lastAddr(netip.MustParsePrefix(tc.prefix)); got.String() != tc.want {
				t.Errorf("lastAddr(%s) = %s, want %s", tc.prefix, got, tc.want)
			}
		})
	}
}

func TestAllocateIP(t *testing.T) {
	// 10.9.9.0/29: .0 network, .1 gateway, .7 broadcast, so .2-.6 for pods.
	newResolved := func(t *testing.T) resolved {
		dir := t.TempDir()
		if err := os.MkdirAll(dir+"/pods", 0o700); err != nil {
			t.Fatal(err)
		}
		r, err := Config{RunRoot: dir, StateDir: dir, Bridge: "prtunit", Subnet: "10.9.9.0/29"}.resolve()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("round robin over the free addresses, then exhaustion", func(t *testing.T) {
		r := newResolved(t)
		var states []*podState
		var got []string
		for range 5 {
			a, err := allocateIP(r, states, "boot")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, a.String())
			states = append(states, &podState{IP: a.String(), BootID: "boot"})
		}
		want := []string{"10.9.9.2", "10.9.9.3", "10.9.9.4", "10.9.9.5", "10.9.9.6"}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
		if a, err := allocateIP(r, states, "boot"); err == nil {
			t.Fatalf("allocated %s from a full subnet", a)
		}
		// Releasing .3 makes exactly .3 available.
		states = append(states[:1], states[2:]...)
		a, err := allocateIP(r, states, "boot")
		if err != nil || a.String() != "10.9.9.3" {
			t.Fatalf("after release got %s, %v; want 10.9.9.3", a, err)
		}
	})
	t.Run("a released address is not reused at once", func(t *testing.T) {
		r := newResolved(t)
		a1, _ := allocateIP(r, nil, "boot")
		a2, err := allocateIP(r, nil, "boot") // a1 released meanwhile
		if err != nil || a2 == a1 {
			t.Fatalf("got %s then %s (%v); want a different address", a1, a2, err)
		}
	})
	t.Run("addresses of an earlier boot are free", func(t *testing.T) {
		r := newResolved(t)
		var states []*podState
		for _, ip := range []string{"10.9.9.2", "10.9.9.3", "10.9.9.4", "10.9.9.5", "10.9.9.6"} {
			states = append(states, &podState{IP: ip, BootID: "old-boot"})
		}
		if _, err := allocateIP(r, states, "new-boot"); err != nil {
			t.Fatalf("allocating over stale allocations: %v", err)
		}
	})
}

func TestConfigResolve(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		table   string
		gateway string
	}{
		{name: "defaults", cfg: Config{RunRoot: "/run/podrun", StateDir: "/var/lib/podrun/network"}, table: "podrun", gateway: "10.87.0.1"},
		{name: "own bridge has its own table", cfg: Config{RunRoot: "/r", StateDir: "/s", Bridge: "br7", Subnet: "10.5.0.0/16"}, table: "podrun_br7", gateway: "10.5.0.1"},
		{name: "bridge name too long", cfg: Config{RunRoot: "/r", StateDir: "/s", Bridge: "abcdefghijklmnop"}, wantErr: true},
		{name: "bridge name with slash", cfg: Config{RunRoot: "/r", StateDir: "/s", Bridge: "a/b"}, wantErr: true},
		{name: "invalid subnet", cfg: Config{RunRoot: "/r", StateDir: "/s", Subnet: "10.5.0.0/33"}, wantErr: true},
		{name: "host bits set", cfg: Config{RunRoot: "/r", StateDir: "/s", Subnet: "10.5.0.1/24"}, wantErr: true},
		{name: "IPv6 subnet", cfg: Config{RunRoot: "/r", StateDir: "/s", Subnet: "fd00::/64"}, wantErr: true},
		{name: "subnet too small", cfg: Config{RunRoot: "/r", StateDir: "/s", Subnet: "10.5.0.0/30"}, wantErr: true},
		{name: "relative run root", cfg: Config{RunRoot: "run", StateDir: "/s"}, wantErr: true},
		{name: "missing state dir", cfg: Config{RunRoot: "/r"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.cfg.resolve()
			if (err != nil) != tc.wantErr {
				t.Fatalf("resolve() error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (r.table != tc.table || r.gateway.String() != tc.gateway) {
				t.Errorf("table %q gateway %s, want %q %s", r.table, r.gateway, tc.table, tc.gateway)
			}
		})
	}
}

func TestValidatePorts(t *testing.T) {
	tests := []struct {
		name    string
		in      []PortMapping
		want    []port
		wantErr bool
	}{
		{name: "no hostPort is not published", in: []PortMapping{{ContainerPort: 80}}},
		{name: "defaults to TCP", in: []PortMapping{{HostPort: 8080, ContainerPort: 80}}, want: []port{{HostPort: 8080, ContainerPort: 80, Protocol: "TCP"}}},
		{name: "0.0.0.0 means every address", in: []PortMapping{{HostPort: 53, ContainerPort: 53, Protocol: "UDP", HostIP: "0.0.0.0"}},
			want: []port{{HostPort: 53, ContainerPort: 53, Protocol: "UDP"}}},
		{name: "hostIP kept", in: []PortMapping{{HostPort: 1, ContainerPort: 2, Protocol: "sctp", HostIP: "127.0.0.1"}},
			want: []port{{HostPort: 1, ContainerPort: 2, Protocol: "SCTP", HostIP: "127.0.0.1"}}},
		{name: "same port, other protocol", in: []PortMapping{{HostPort: 53, ContainerPort: 53, Protocol: "UDP"}, {HostPort: 53, ContainerPort: 53}},
			want: []port{{HostPort: 53, ContainerPort: 53, Protocol: "UDP"}, {HostPort: 53, ContainerPort: 53, Protocol: "TCP"}}},
		{name: "duplicate", in: []PortMapping{{HostPort: 80, ContainerPort: 80}, {HostPort: 80, ContainerPort: 81}}, wantErr: true},
		{name: "bad protocol", in: []PortMapping{{HostPort: 80, ContainerPort: 80, Protocol: "ICMP"}}, wantErr: true},
		{name: "bad hostIP", in: []PortMapping{{HostPort: 80, ContainerPort: 80, HostIP: "localhost"}}, wantErr: true},
		{name: "IPv6 hostIP", in: []PortMapping{{HostPort: 80, ContainerPort: 80, HostIP: "::1"}}, wantErr: true},
		{name: "port out of range", in: []PortMapping{{HostPort: 70000, ContainerPort: 80}}, wantErr: true},
		{name: "container port missing", in: []PortMapping{{HostPort: 80}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := validatePorts(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestHostVethName(t *testing.T) {
	a, b := hostVethName("0b7c5f3e-1111-4e3a-9a4b-5a3f2d1c0e9f"), hostVethName("0b7c5f3e-1111-4e3a-9a4b-5a3f2d1c0e9e")
	if len(a) != maxIfName || a == b || a != hostVethName("0b7c5f3e-1111-4e3a-9a4b-5a3f2d1c0e9f") {
		t.Errorf("hostVethName: %q, %q: want distinct, stable, %d characters", a, b, maxIfName)
	}
}

func TestValidatePodID(t *testing.T) {
	long := strings.Repeat("a", 128)
	for id, want := range map[string]bool{
		"0b6f1c2e-2b1c-4f5e-9d0a-1b2c3d4e5f60": true, "a": true, "A.b_c-d": true, long: true,
		"": false, long + "a": false, "-a": false, ".a": false, "_a": false, "a/b": false, "a b": false, "ä": false,
	} {
		if err := validatePodID(id); (err == nil) != want {
			t.Errorf("validatePodID(%q) = %v, want ok %v", id, err, want)
		}
	}
}

// A state file a host crash cut short (the states are written without
// fsync) is an earlier boot's and holds nothing; one of this boot that does
// not parse is still an error.
func TestLoadStatesCutShortByACrash(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/pods", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeState(dir, &podState{PodID: "kept", IP: "10.9.9.2", BootID: "b"}); err != nil {
		t.Fatal(err)
	}
	cut := statePath(dir, "cut")
	if err := os.WriteFile(cut, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadStates(dir); err == nil || !strings.Contains(err.Error(), "cut") {
		t.Fatalf("an unreadable state of this boot: got %v, want an error naming it", err)
	}
	old := time.Unix(1, 0) // before any boot
	if err := os.Chtimes(cut, old, old); err != nil {
		t.Fatal(err)
	}
	states, err := loadStates(dir)
	if err != nil || len(states) != 1 || states[0].PodID != "kept" {
		t.Fatalf("got %v, %v; want only the readable state", states, err)
	}
}
