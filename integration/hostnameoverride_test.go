package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Kubernetes' test/e2e/common/node/pod_hostnameoverride.go (HostnameOverride,
// KEP-4762, GA in 1.37) run against podrun: the override is the pod's whole
// host name, whatever spec.hostname and spec.subdomain say, and the API
// server refuses it with setHostnameAsFQDN, with hostNetwork, and when it is
// not an RFC 1123 subdomain.
func TestHostnameOverrideE2E(t *testing.T) {
	e := newEnv(t)
	const cmd = `[sh, -c, "echo $(hostname)';'$(hostname -f)';'"]`
	pod := func(name, spec string) string {
		return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never%s
  containers:
  - {name: test-pod-hostname-override, image: busybox:1.28, command: %s}
`, name, spec, cmd)
	}
	// The kubelet cuts a 64-byte override to 63 bytes, then strips the '.'
	// it ends with (truncatePodHostnameIfNeeded).
	long := strings.Repeat("a", 62) + ".b"
	e.apply(strings.Join([]string{
		pod("ho-subdomain-value", "\n  hostnameOverride: override.example.host"),
		pod("ho-with-hostname", "\n  hostname: custom-host\n  hostnameOverride: override-host"),
		pod("ho-only", "\n  hostnameOverride: override-host"),
		pod("ho-with-subdomain", "\n  subdomain: t\n  hostnameOverride: override-host"),
		pod("ho-long", "\n  hostnameOverride: "+long),
	}, "---"))
	for name, want := range map[string]string{
		"ho-subdomain-value": "override.example.host;override.example.host;\n",
		"ho-with-hostname":   "override-host;override-host;\n",
		"ho-only":            "override-host;override-host;\n",
		"ho-with-subdomain":  "override-host;override-host;\n",
		"ho-long":            strings.Repeat("a", 62) + ";" + strings.Repeat("a", 62) + ";\n",
	} {
		e.waitPhase(name, corev1.PodSucceeded, time.Minute)
		if out := e.must("logs", name, "-c", "test-pod-hostname-override").stdout; out != want {
			t.Errorf("%s printed %q, want %q", name, out, want)
		}
	}

	// Refused with the API server's field errors (validatePodHostName) in
	// podrun's form for a manifest's pod: exit 2, nothing stored.
	for _, tc := range []struct{ name, spec, msg string }{
		{"ho-fqdn", "\n  setHostnameAsFQDN: true\n  hostnameOverride: override-host",
			`pod "ho-fqdn": spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true`},
		{"ho-hostnet", "\n  hostNetwork: true\n  hostnameOverride: override-host",
			`pod "ho-hostnet": spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true`},
		{"ho-not-rfc1123", "\n  hostnameOverride: Not-RFC1123",
			`pod "ho-not-rfc1123": spec.hostnameOverride: Invalid value: "Not-RFC1123": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`},
		{"ho-too-long", "\n  hostnameOverride: " + strings.Repeat("a", 32) + "." + strings.Repeat("b", 32),
			`pod "ho-too-long": spec.hostnameOverride: Too long: may not be more than 64 bytes`},
	} {
		r := e.podrun("apply", "-f", e.manifest(pod(tc.name, tc.spec)))
		if r.code != 2 || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("apply %s: %s\nwant exit 2 and %q", tc.name, r, tc.msg)
		}
		if r := e.podrun("get", "pod", tc.name); r.code == 0 {
			t.Errorf("refused pod %s was stored: %s", tc.name, r)
		}
	}
}

// The kubelet's files for a pod with an override (managedHostsFileContent
// with GeneratePodHostNameAndDomain's empty domain: one line, the pod IP
// and the override, no FQDN though the pod has a subdomain; the host
// aliases after it), a container mounting /etc/hosts itself keeping its own
// (kubelet_etc_hosts.go), and the cluster DNS, which, as the endpoint
// controllers (ShouldSetHostname), names the pod by spec.hostname.
func TestHostnameOverrideEtcHostsAndDNS(t *testing.T) {
	e := newEnv(t)
	e.apply(fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: ho-svc}
spec:
  clusterIP: None
  selector: {app: ho}
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: ho-hosts, labels: {app: ho}}
spec:
  hostname: h0
  subdomain: ho-svc
  hostnameOverride: override.example.host
  hostAliases:
  - {ip: 10.1.2.3, hostnames: [foo.local, bar.local]}
  volumes:
  - name: host-etc-hosts
    hostPath: {path: /etc/hosts, type: File}
  containers:
  - {name: managed, image: busybox:1.28, command: %[1]s}
  - name: unmanaged
    image: busybox:1.28
    command: %[1]s
    volumeMounts: [{name: host-etc-hosts, mountPath: /etc/hosts, readOnly: true}]
`, netIdle), "--wait")
	ip := e.pod("ho-hosts").Status.PodIP
	want := netHostsHeader + ip + "\toverride.example.host\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n"
	if got := e.must("exec", "ho-hosts", "-c", "managed", "--", "cat", "/etc/hosts").stdout; got != want {
		t.Errorf("/etc/hosts:\n%s\nwant:\n%s", got, want)
	}
	hostHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.must("exec", "ho-hosts", "-c", "unmanaged", "--", "cat", "/etc/hosts").stdout; got != string(hostHosts) {
		t.Errorf("/etc/hosts of the container that mounts the host's:\n%s\nwant the host's:\n%s", got, hostHosts)
	}
	for _, c := range []string{"managed", "unmanaged"} {
		for _, cmd := range []string{"hostname", "echo $HOSTNAME", "cat /etc/hostname"} {
			if got := strings.TrimSpace(e.must("exec", "ho-hosts", "-c", c, "--", "sh", "-c", cmd).stdout); got != "override.example.host" {
				t.Errorf("%s in %s: %q, want override.example.host", cmd, c, got)
			}
		}
	}

	// The endpoint's hostname, and so the DNS name under the headless
	// Service, is spec.hostname.
	const zone = "default.svc.cluster.local."
	r := neAskUntil(t, e, "h0.ho-svc."+zone, mdns.TypeA, func(m *mdns.Msg) bool { return len(m.Answer) > 0 })
	if want := "h0.ho-svc." + zone + " 30 IN A " + ip; neRRs(r.Answer) != want {
		t.Errorf("A h0.ho-svc:\n%s\nwant %s", neRRs(r.Answer), want)
	}
	var slices struct{ Items []discoveryv1.EndpointSlice }
	out := e.must("get", "endpointslices", "-l", "kubernetes.io/service-name=ho-svc", "-o", "json").stdout
	if err := json.Unmarshal([]byte(out), &slices); err != nil {
		t.Fatalf("decoding the slices: %v\n%s", err, out)
	}
	var hostnames []string
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ep.Hostname != nil {
				hostnames = append(hostnames, *ep.Hostname)
			}
		}
	}
	if len(hostnames) != 1 || hostnames[0] != "h0" {
		t.Errorf("endpoint hostnames %q, want [h0]\n%s", hostnames, out)
	}
}
