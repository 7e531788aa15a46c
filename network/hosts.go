package network

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The kubelet's headers for the /etc/hosts it writes (pkg/kubelet/kubelet_pods.go).
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
	hostHostsPath                     = "/etc/hosts"
	// hostnameMaxLen is the kernel's limit for a hostname (64 bytes with the NUL).
	hostnameMaxLen = 63
	// fqdnMaxLen is the limit for an FQDN used as the kernel hostname.
	fqdnMaxLen = 64
)

// HostsOptions is what a pod's /etc/hosts is made of.
type HostsOptions struct {
	PodIP  string
	PodIPs []string // all pod IPs; when empty, PodIP alone
	// Hostname is the pod's short hostname (see HostnameAndDomain).
	Hostname string
	// Subdomain, Namespace and ClusterDomain make the FQDN
	// <hostname>.<subdomain>.<namespace>.svc.<clusterDomain> when Subdomain
	// is set. ClusterDomain "" means DefaultClusterDomain.
	Subdomain, Namespace, ClusterDomain string
	HostAliases                         []corev1.HostAlias
	// HostNetwork pods get the host's /etc/hosts plus the aliases.
	HostNetwork bool
	// HostHostsPath is the host's hosts file; "" means /etc/hosts.
	HostHostsPath string
}

// HostsFile returns the content of a pod's /etc/hosts, as the kubelet writes it.
func HostsFile(opts HostsOptions) ([]byte, error) {
	if opts.HostNetwork {
		path := opts.HostHostsPath
		if path == "" {
			path = hostHostsPath
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the host's hosts file: %w", err)
		}
		var buf bytes.Buffer
		buf.WriteString(managedHostsHeaderWithHostNetwork)
		buf.Write(content)
		buf.Write(hostAliasEntries(opts.HostAliases))
		return buf.Bytes(), nil
	}
	ips := opts.PodIPs
	if len(ips) == 0 && opts.PodIP != "" {
		ips = []string{opts.PodIP}
	}
	domain := ""
	if opts.Subdomain != "" {
		domain = podDomain(opts.Subdomain, opts.Namespace, opts.ClusterDomain)
	}
	var buf bytes.Buffer
	buf.WriteString(managedHostsHeader)
	buf.WriteString("127.0.0.1\tlocalhost\n")
	buf.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	buf.WriteString("fe00::0\tip6-localnet\n")
	buf.WriteString("fe00::0\tip6-mcastprefix\n")
	buf.WriteString("fe00::1\tip6-allnodes\n")
	buf.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if domain != "" {
			fmt.Fprintf(&buf, "%s\t%s.%s\t%s\n", ip, opts.Hostname, domain, opts.Hostname)
		} else {
			fmt.Fprintf(&buf, "%s\t%s\n", ip, opts.Hostname)
		}
	}
	buf.Write(hostAliasEntries(opts.HostAliases))
	return buf.Bytes(), nil
}

func podDomain(subdomain, namespace, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	return fmt.Sprintf("%s.%s.svc.%s", subdomain, namespace, clusterDomain)
}

// hostAliasEntries writes one line per alias IP with all its hostnames, after a blank line and a comment.
func hostAliasEntries(aliases []corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var buf bytes.Buffer
	buf.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&buf, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return buf.Bytes()
}

// HostnameAndDomain returns the pod's short hostname and its domain
// (<subdomain>.<namespace>.svc.<clusterDomain>, or "" without a subdomain),
// as the kubelet's GeneratePodHostNameAndDomain: spec.hostnameOverride
// wins (and has no domain), else spec.hostname, else the pod name; the
// hostname is cut to 63 characters. clusterDomain "" means
// DefaultClusterDomain. hostNetwork is not considered here (see Hostname).
func HostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if pod.Spec.HostnameOverride != nil {
		h := *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(h); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod hostnameOverride %q is not a valid DNS subdomain: %s", h, strings.Join(msgs, ";"))
		}
		h, err := truncateHostname(pod.Name, h)
		return h, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = podDomain(pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncateHostname cuts a hostname to 63 characters and then strips
// trailing '-' and '.', as the kubelet does.
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// Hostname returns the hostname the pod's containers see (the UTS
// hostname): the host's for hostNetwork pods; otherwise the short hostname
// of HostnameAndDomain, or with spec.setHostnameAsFQDN and a subdomain the
// FQDN (at most 64 characters), as the kubelet's GetNodenameForKernel.
func Hostname(pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("reading the host's hostname: %w", err)
		}
		return h, nil
	}
	hostname, domain, err := HostnameAndDomain(pod, "")
	if err != nil {
		return "", err
	}
	if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		fqdn := hostname + "." + domain
		if len(fqdn) > fqdnMaxLen {
			return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, fqdnMaxLen, len(fqdn))
		}
		return fqdn, nil
	}
	return hostname, nil
}

// PodHostsOptions fills HostsOptions for a pod from its spec and its IPs.
func PodHostsOptions(pod *corev1.Pod, podIPs []string) (HostsOptions, error) {
	opts := HostsOptions{
		PodIPs:      podIPs,
		Namespace:   pod.Namespace,
		HostAliases: pod.Spec.HostAliases,
		HostNetwork: pod.Spec.HostNetwork,
	}
	if len(podIPs) > 0 {
		opts.PodIP = podIPs[0]
	}
	hostname, _, err := HostnameAndDomain(pod, "")
	if err != nil {
		return opts, err
	}
	opts.Hostname = hostname
	if pod.Spec.HostnameOverride == nil {
		opts.Subdomain = pod.Spec.Subdomain
	}
	return opts, nil
}
