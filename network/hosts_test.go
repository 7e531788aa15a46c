package network

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hostsPreamble = `# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

// Cases and expected contents from the kubelet's TestManagedHostsFileContent
// and TestNodeHostsFileContent (pkg/kubelet/kubelet_pods_test.go).
func TestHostsFile(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "hosts")
	rawHosts := "# hosts file for testing.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n123.45.67.89\tsome.domain\n"
	if err := os.WriteFile(hostFile, []byte(rawHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts HostsOptions
		want string
	}{
		{
			name: "pod IP and name",
			opts: HostsOptions{PodIP: "123.45.67.89", Hostname: "podFoo", HostAliases: []corev1.HostAlias{}},
			want: hostsPreamble + "123.45.67.89\tpodFoo\n",
		},
		{
			name: "subdomain gives the FQDN first",
			opts: HostsOptions{PodIP: "203.0.113.1", Hostname: "podFoo", Subdomain: "sub", Namespace: "ns", ClusterDomain: "kubernetes.io"},
			want: hostsPreamble + "203.0.113.1\tpodFoo.sub.ns.svc.kubernetes.io\tpodFoo\n",
		},
		{
			name: "default cluster domain",
			opts: HostsOptions{PodIP: "203.0.113.1", Hostname: "podFoo", Subdomain: "sub", Namespace: "ns"},
			want: hostsPreamble + "203.0.113.1\tpodFoo.sub.ns.svc.cluster.local\tpodFoo\n",
		},
		{
			name: "one alias line",
			opts: HostsOptions{PodIP: "203.0.113.1", Hostname: "podFoo", Subdomain: "sub", Namespace: "ns", ClusterDomain: "kubernetes.io",
				HostAliases: []corev1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}}}},
			want: hostsPreamble + "203.0.113.1\tpodFoo.sub.ns.svc.kubernetes.io\tpodFoo\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n",
		},
		{
			name: "two alias lines",
			opts: HostsOptions{PodIP: "203.0.113.1", Hostname: "podFoo", HostAliases: []corev1.HostAlias{
				{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}},
				{IP: "456.78.90.123", Hostnames: []string{"park", "doo", "boo"}},
			}},
			want: hostsPreamble + "203.0.113.1\tpodFoo\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n",
		},
		{
			name: "dual stack IPs",
			opts: HostsOptions{PodIPs: []string{"203.0.113.1", "fd00::6"}, Hostname: "podFoo", Subdomain: "sub", Namespace: "ns", ClusterDomain: "kubernetes.io"},
			want: hostsPreamble + "203.0.113.1\tpodFoo.sub.ns.svc.kubernetes.io\tpodFoo\nfd00::6\tpodFoo.sub.ns.svc.kubernetes.io\tpodFoo\n",
		},
		{
			name: "host network copies the host file",
			opts: HostsOptions{HostNetwork: true, HostHostsPath: hostFile, PodIP: "10.0.0.1", Hostname: "ignored"},
			want: "# Kubernetes-managed hosts file (host network).\n" + rawHosts,
		},
		{
			name: "host network with aliases",
			opts: HostsOptions{HostNetwork: true, HostHostsPath: hostFile, HostAliases: []corev1.HostAlias{
				{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}},
				{IP: "456.78.90.123", Hostnames: []string{"park", "doo", "boo"}},
			}},
			want: "# Kubernetes-managed hosts file (host network).\n" + rawHosts + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostsFile(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("HostsFile() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	t.Run("missing host file", func(t *testing.T) {
		if _, err := HostsFile(HostsOptions{HostNetwork: true, HostHostsPath: filepath.Join(t.TempDir(), "none")}); err == nil {
			t.Fatal("want an error for a missing host hosts file")
		}
	})
}

func TestHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	override := "my.override"
	badOverride := "Not_Valid"
	longOverride := strings.Repeat("a", 62) + ".b"
	yes := true
	tests := []struct {
		name        string
		pod         corev1.Pod
		wantHost    string
		wantDomain  string
		wantKernel  string
		wantErr     bool
		wantKernErr bool
	}{
		{name: "pod name", pod: pod("web", "ns", corev1.PodSpec{}), wantHost: "web", wantKernel: "web"},
		{name: "spec.hostname", pod: pod("web", "ns", corev1.PodSpec{Hostname: "db"}), wantHost: "db", wantKernel: "db"},
		{name: "subdomain", pod: pod("web", "ns", corev1.PodSpec{Hostname: "db", Subdomain: "svc1"}),
			wantHost: "db", wantDomain: "svc1.ns.svc.cluster.local", wantKernel: "db"},
		{name: "setHostnameAsFQDN", pod: pod("web", "ns", corev1.PodSpec{Hostname: "db", Subdomain: "svc1", SetHostnameAsFQDN: &yes}),
			wantHost: "db", wantDomain: "svc1.ns.svc.cluster.local", wantKernel: "db.svc1.ns.svc.cluster.local"},
		{name: "setHostnameAsFQDN without subdomain", pod: pod("web", "ns", corev1.PodSpec{SetHostnameAsFQDN: &yes}),
			wantHost: "web", wantKernel: "web"},
		{name: "FQDN too long for the kernel", pod: pod(strings.Repeat("x", 50), "ns", corev1.PodSpec{Subdomain: "svc1", SetHostnameAsFQDN: &yes}),
			wantHost: strings.Repeat("x", 50), wantDomain: "svc1.ns.svc.cluster.local", wantKernErr: true},
		// The kubelet cuts at 63 and strips a trailing '-' or '.'.
		{name: "long pod name truncated", pod: pod(long, "ns", corev1.PodSpec{}), wantHost: strings.Repeat("a", 62), wantKernel: strings.Repeat("a", 62)},
		{name: "hostnameOverride wins and has no domain", pod: pod("web", "ns", corev1.PodSpec{Hostname: "db", Subdomain: "svc1", HostnameOverride: &override}),
			wantHost: "my.override", wantKernel: "my.override"},
		{name: "hostnameOverride of 64 bytes cut to 63", pod: pod("web", "ns", corev1.PodSpec{HostnameOverride: &longOverride}),
			wantHost: strings.Repeat("a", 62), wantKernel: strings.Repeat("a", 62)},
		{name: "invalid hostnameOverride", pod: pod("web", "ns", corev1.PodSpec{HostnameOverride: &badOverride}), wantErr: true, wantKernErr: true},
		{name: "invalid hostname", pod: pod("web", "ns", corev1.PodSpec{Hostname: "a.b"}), wantErr: true, wantKernErr: true},
		{name: "invalid subdomain", pod: pod("web", "ns", corev1.PodSpec{Subdomain: "A_B"}), wantErr: true, wantKernErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d, err := HostnameAndDomain(&tc.pod, "")
			if (err != nil) != tc.wantErr {
				t.Fatalf("HostnameAndDomain() error = %v, want error %v", err, tc.wantErr)
			}
			if h != tc.wantHost || d != tc.wantDomain {
				t.Errorf("HostnameAndDomain() = %q, %q; want %q, %q", h, d, tc.wantHost, tc.wantDomain)
			}
			k, err := Hostname(&tc.pod)
			if (err != nil) != tc.wantKernErr {
				t.Fatalf("Hostname() error = %v, want error %v", err, tc.wantKernErr)
			}
			if k != tc.wantKernel {
				t.Errorf("Hostname() = %q, want %q", k, tc.wantKernel)
			}
		})
	}
	t.Run("host network uses the host's name", func(t *testing.T) {
		want, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		p := pod("web", "ns", corev1.PodSpec{HostNetwork: true, Hostname: "db"})
		got, err := Hostname(&p)
		if err != nil || got != want {
			t.Errorf("Hostname() = %q, %v; want %q", got, err, want)
		}
	})
}

func TestPodHostsOptions(t *testing.T) {
	override, dotted := "over", "override.example.host"
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{name: "subdomain", pod: pod("web", "ns", corev1.PodSpec{Subdomain: "s", HostAliases: []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"a"}}}}),
			want: hostsPreamble + "10.87.0.9\tweb.s.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n"},
		{name: "hostnameOverride drops the domain", pod: pod("web", "ns", corev1.PodSpec{Subdomain: "s", HostnameOverride: &override}),
			want: hostsPreamble + "10.87.0.9\tover\n"},
		{name: "hostnameOverride with hostname and aliases", pod: pod("web", "ns", corev1.PodSpec{Hostname: "h", HostnameOverride: &dotted,
			HostAliases: []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"a"}}}}),
			want: hostsPreamble + "10.87.0.9\toverride.example.host\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := PodHostsOptions(&tc.pod, []string{"10.87.0.9"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := HostsFile(opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func pod(name, ns string, spec corev1.PodSpec) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}
