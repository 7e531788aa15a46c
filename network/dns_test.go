package network

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Cases from the kubelet's TestParseResolvConf (pkg/kubelet/network/dns/dns_test.go).
func TestParseResolvConf(t *testing.T) {
	e := []string{}
	tests := []struct {
		data                       string
		servers, searches, options []string
		wantErr                    bool
	}{
		{"", e, e, e, false},
		{" ", e, e, e, false},
		{"\n", e, e, e, false},
		{"\t\n\t", e, e, e, false},
		{"#comment\n", e, e, e, false},
		{" #comment\n", e, e, e, false},
		{"#comment\n#comment", e, e, e, false},
		{"#comment\nnameserver", e, e, e, true},
		{"#comment\nnameserver\nsearch", e, e, e, true},
		{"#comment\nnameserver 1.2.3.4\nsearch", []string{"1.2.3.4"}, e, e, false},
		{"nameserver 1.2.3.4", []string{"1.2.3.4"}, e, e, false},
		{" nameserver 1.2.3.4", []string{"1.2.3.4"}, e, e, false},
		{"\tnameserver 1.2.3.4", []string{"1.2.3.4"}, e, e, false},
		{"nameserver\t1.2.3.4", []string{"1.2.3.4"}, e, e, false},
		{"nameserver \t 1.2.3.4", []string{"1.2.3.4"}, e, e, false},
		{"nameserver 1.2.3.4\nnameserver 5.6.7.8", []string{"1.2.3.4", "5.6.7.8"}, e, e, false},
		{"nameserver 1.2.3.4 #comment", []string{"1.2.3.4"}, e, e, false},
		{"search ", e, e, e, false},
		{"search foo", e, []string{"foo"}, e, false},
		{"search foo bar", e, []string{"foo", "bar"}, e, false},
		{"search foo. bar", e, []string{"foo", "bar"}, e, false},
		{"search foo bar bat\n", e, []string{"foo", "bar", "bat"}, e, false},
		{"search foo\nsearch bar", e, []string{"bar"}, e, false},
		{"nameserver 1.2.3.4\nsearch foo bar", []string{"1.2.3.4"}, []string{"foo", "bar"}, e, false},
		{"nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar", []string{"1.2.3.4", "5.6.7.8"}, []string{"bar"}, e, false},
		{"#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment", []string{"1.2.3.4"}, []string{"foo"}, e, false},
		{"options ", e, e, e, false},
		{"options ndots:5 attempts:2", e, e, []string{"ndots:5", "attempts:2"}, false},
		{"options ndots:1\noptions ndots:5 attempts:3", e, e, []string{"ndots:5", "attempts:3"}, false},
		{"nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4", []string{"1.2.3.4", "5.6.7.8"}, []string{"bar"}, []string{"ndots:5", "attempts:4"}, false},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(tc.data, "\n", `\n`), func(t *testing.T) {
			s, sr, o, err := parseResolvConf(strings.NewReader(tc.data))
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, tc.servers) || !reflect.DeepEqual(sr, tc.searches) || !reflect.DeepEqual(o, tc.options) {
				t.Errorf("got %q %q %q, want %q %q %q", s, sr, o, tc.servers, tc.searches, tc.options)
			}
		})
	}
}

// Cases from the kubelet's TestFormDNSSearchFitsLimits (ExpandedDNSConfig, now GA).
func TestSearchFitsLimits(t *testing.T) {
	list2048 := []string{strings.Repeat("A", 128)}
	for range 15 {
		list2048 = append(list2048, strings.Repeat("A", 127))
	}
	var n32 []string
	for i := range 32 {
		n32 = append(n32, strings.Repeat("d", i+1))
	}
	tests := []struct {
		name     string
		in, want []string
	}{
		{"3 paths", []string{"testNS.svc.TEST", "svc.TEST", "TEST"}, []string{"testNS.svc.TEST", "svc.TEST", "TEST"}},
		{"a path over 253 characters is dropped", []string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", strings.Repeat("B", 256), "BBB"},
			[]string{"testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"}},
		{"2048 characters fit", list2048, list2048},
		{"2050 characters do not", append(slices.Clone(list2048), "B"), list2048},
		{"32 paths fit", n32, n32},
		{"33 paths do not", append(slices.Clone(n32), "x"), n32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := searchFitsLimits(slices.Clone(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %d paths %q, want %d", len(got), got, len(tc.want))
			}
		})
	}
}

// Cases from the kubelet's TestMergeDNSOptions (compared as sets there; the order here is fixed).
func TestMergeDNSOptions(t *testing.T) {
	three := "3"
	tests := []struct {
		name     string
		existing []string
		pod      []corev1.PodDNSConfigOption
		want     []string
	}{
		{"no pod options", []string{"ndots:5", "debug"}, nil, []string{"ndots:5", "debug"}},
		{"new options", []string{"ndots:5", "debug"}, []corev1.PodDNSConfigOption{{Name: "single-request"}, {Name: "attempts", Value: &three}},
			[]string{"ndots:5", "debug", "single-request", "attempts:3"}},
		{"overrides", []string{"ndots:5", "debug"}, []corev1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}, {Name: "single-request"}, {Name: "attempts", Value: &three}},
			[]string{"ndots:3", "debug", "single-request", "attempts:3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeDNSOptions(tc.existing, tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Cases from the kubelet's TestGetPodDNS and TestGetPodDNSCustom, without a
// cluster DNS (ClusterFirst falls back to Default as the kubelet does) and with one.
func TestPodDNS(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(host, []byte("nameserver 8.8.8.8\nsearch host.domain\noptions ndots:2 edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	three := "3"
	custom := &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.11"},
		Searches:    []string{"my.domain"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}},
	}
	tests := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		dnsConfig   *corev1.PodDNSConfig
		cluster     bool // the kubelet has --cluster-dns 10.0.0.10
		want        string
	}{
		{name: "None without dnsConfig is empty", policy: corev1.DNSNone, want: ""},
		{name: "None with dnsConfig", policy: corev1.DNSNone, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"203.0.113.1"}, Searches: []string{"my.domain", "second.domain"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &three}, {Name: "debug"}}},
			want: "search my.domain second.domain\nnameserver 203.0.113.1\noptions ndots:3 debug\n"},
		{name: "Default is the host's", policy: corev1.DNSDefault,
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "ClusterFirst without cluster DNS falls back to Default", policy: corev1.DNSClusterFirst,
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "unset policy is ClusterFirst", policy: "",
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "ClusterFirstWithHostNet on the host network", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true,
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "Default merged with dnsConfig", policy: corev1.DNSDefault, dnsConfig: custom,
			want: "search host.domain my.domain\nnameserver 8.8.8.8\nnameserver 10.0.0.11\noptions ndots:3 edns0 debug\n"},
		{name: "ClusterFirst merged with dnsConfig", policy: corev1.DNSClusterFirst, dnsConfig: custom,
			want: "search host.domain my.domain\nnameserver 8.8.8.8\nnameserver 10.0.0.11\noptions ndots:3 edns0 debug\n"},
		{name: "duplicates merged, nameservers cut to 3", policy: corev1.DNSDefault, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"8.8.8.8", "1.1.1.1", "9.9.9.9", "4.4.4.4"}, Searches: []string{"host.domain"}},
			want: "search host.domain\nnameserver 8.8.8.8\nnameserver 1.1.1.1\nnameserver 9.9.9.9\noptions ndots:2 edns0\n"},
		// With a cluster DNS (TestGetPodDNS, TestGetPodDNSCustom).
		{name: "ClusterFirst with cluster DNS", policy: corev1.DNSClusterFirst, cluster: true,
			want: "search ns.svc.cluster.local svc.cluster.local cluster.local host.domain\nnameserver 10.0.0.10\noptions ndots:5\n"},
		{name: "unset policy with cluster DNS", policy: "", cluster: true,
			want: "search ns.svc.cluster.local svc.cluster.local cluster.local host.domain\nnameserver 10.0.0.10\noptions ndots:5\n"},
		{name: "ClusterFirst on the host network is Default", policy: corev1.DNSClusterFirst, hostNetwork: true, cluster: true,
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "ClusterFirstWithHostNet with cluster DNS", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true, cluster: true,
			want: "search ns.svc.cluster.local svc.cluster.local cluster.local host.domain\nnameserver 10.0.0.10\noptions ndots:5\n"},
		{name: "Default ignores the cluster DNS", policy: corev1.DNSDefault, cluster: true,
			want: "search host.domain\nnameserver 8.8.8.8\noptions ndots:2 edns0\n"},
		{name: "None ignores the cluster DNS", policy: corev1.DNSNone, cluster: true, want: ""},
		{name: "ClusterFirst with cluster DNS merged with dnsConfig", policy: corev1.DNSClusterFirst, cluster: true, dnsConfig: custom,
			want: "search ns.svc.cluster.local svc.cluster.local cluster.local host.domain my.domain\nnameserver 10.0.0.10\nnameserver 10.0.0.11\noptions ndots:3 debug\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("web", "ns", corev1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.dnsConfig})
			var cl ClusterDNS
			if tc.cluster {
				cl = ClusterDNS{Servers: []string{"10.0.0.10"}, Domain: "cluster.local"}
			}
			cfg, err := podDNS(&p, host, cl)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(renderResolvConf(cfg)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestHostResolvConfPath(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub.conf")
	plain := filepath.Join(dir, "plain.conf")
	systemd := filepath.Join(dir, "systemd.conf")
	for path, content := range map[string]string{
		stub:    "# systemd-resolved stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n",
		plain:   "nameserver 192.0.2.53\n",
		systemd: "nameserver 192.0.2.1\nsearch lan\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, etc, systemd, want string
	}{
		{"stub uses the systemd file", stub, systemd, systemd},
		{"stub without the systemd file stays", stub, filepath.Join(dir, "missing"), stub},
		{"plain file", plain, systemd, plain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hostResolvConfPath(tc.etc, tc.systemd)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := hostResolvConfPath(filepath.Join(dir, "missing"), systemd); err == nil {
		t.Error("want an error for a missing resolv.conf")
	}
}

func TestResolvConfOfThisHost(t *testing.T) {
	p := pod("web", "ns", corev1.PodSpec{DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.10"}}})
	got, err := ResolvConf(&p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "nameserver 192.0.2.10\n" {
		t.Errorf("got %q", got)
	}
	p = pod("web", "ns", corev1.PodSpec{DNSPolicy: corev1.DNSDefault})
	if _, err := ResolvConf(&p); err != nil {
		t.Errorf("ResolvConf with the host's file: %v", err)
	}
}
