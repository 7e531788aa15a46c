//go:build !podrun_lean

package podspec

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSafeSysctlsFollowTheKernel(t *testing.T) {
	if got := SafeSysctls("6.18.0-1-amd64"); len(got) != 12 || !slices.Contains(got, "net.ipv4.tcp_fin_timeout") {
		t.Fatalf("6.18: %v", got)
	}
	got := SafeSysctls("4.5.0")
	if slices.Contains(got, "net.ipv4.tcp_fin_timeout") || !slices.Contains(got, "net.ipv4.tcp_keepalive_time") {
		t.Fatalf("4.5: %v, want tcp_keepalive_time but not tcp_fin_timeout (4.6)", got)
	}
	if got := SafeSysctls("garbage"); slices.Contains(got, "net.ipv4.ip_local_reserved_ports") || !slices.Contains(got, "kernel.shm_rmid_forced") {
		t.Fatalf("unknown kernel: %v, want only the unversioned sysctls", got)
	}
}

func TestSysctlAdmission(t *testing.T) {
	pod := func(hostNet, hostIPC bool, names ...string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Spec.HostNetwork, p.Spec.HostIPC = hostNet, hostIPC
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		allowed []string
		pod     *corev1.Pod
		want    string // "" = admitted
	}{
		{"no sysctls", nil, &corev1.Pod{}, ""},
		{"safe", nil, pod(false, false, "net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced"), ""},
		{"safe with slashes", nil, pod(false, false, "net/ipv4/tcp_syncookies"), ""},
		{"unsafe", nil, pod(false, false, "net.ipv4.tcp_syncookies", "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"not namespaced", nil, pod(false, false, "vm.swappiness"), `forbidden sysctl: "vm.swappiness" not allowlisted`},
		{"allowed unsafe", []string{"kernel.msgmax"}, pod(false, false, "kernel.msgmax"), ""},
		{"allowed pattern", []string{"kernel.msg*", "net.core.*"}, pod(false, false, "kernel.msgmnb", "net.core.somaxconn"), ""},
		{"pattern does not cover", []string{"net.core.*"}, pod(false, false, "net.ipv6.conf.all.forwarding"), `forbidden sysctl: "net.ipv6.conf.all.forwarding" not allowlisted`},
		{"host IPC", nil, pod(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"host network", nil, pod(true, false, "net.ipv4.ip_local_port_range"), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewSysctlAllowlist("6.18.0", tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			msg, ok := w.Admit(tc.pod)
			if ok != (tc.want == "") || msg != tc.want {
				t.Fatalf("Admit = %q, %v; want %q", msg, ok, tc.want)
			}
		})
	}
}

func TestAllowedUnsafeSysctlsMustBeNamespaced(t *testing.T) {
	for pattern, want := range map[string]string{
		"vm.swappiness": `the sysctls "vm.swappiness" are not known to be namespaced`,
		"kernel.*":      `the sysctls "kernel." are not known to be namespaced`,
		"Net.Core":      `sysctl "Net.Core" must have at most 253 characters and match regex`,
	} {
		_, err := NewSysctlAllowlist("6.18.0", []string{pattern})
		if err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("%s: error %v, want %q", pattern, err, want)
		}
	}
	if _, err := NewSysctlAllowlist("6.18.0", []string{"fs.mqueue.*", "kernel.sem", "net.*"}); err != nil {
		t.Fatal(err)
	}
}
