package network

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits the kubelet applies to a pod's resolv.conf (pkg/apis/core/validation:
// MaxDNSNameservers, MaxDNSSearchPathsExpanded, MaxDNSSearchListCharsExpanded;
// ExpandedDNSConfig is GA) and the longest search domain it keeps.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxSearchDomainLen    = 253
	maxResolvConfLength   = 10 << 20

	hostResolvConf = "/etc/resolv.conf"
	// systemdResolvConf lists the real upstream servers when /etc/resolv.conf
	// points at the systemd-resolved stub, which a pod cannot reach; kubeadm
	// sets the kubelet's --resolv-conf to it on such hosts.
	systemdResolvConf = "/run/systemd/resolve/resolv.conf"
	systemdStub       = "127.0.0.53"
)

// dnsConfig is the kubelet's runtimeapi.DNSConfig.
type dnsConfig struct {
	Servers, Searches, Options []string
}

// ClusterDNS is the kubelet's --cluster-dns and --cluster-domain.
type ClusterDNS struct {
	// Servers are the cluster DNS addresses; none means there is no cluster
	// DNS and ClusterFirst falls back to Default, as the kubelet does.
	Servers []string
	// Domain is the cluster domain (DefaultClusterDomain when empty).
	Domain string
	// ResolvConf is the kubelet's --resolv-conf, the file a pod's DNS
	// configuration starts from; empty: HostResolvConf's choice.
	ResolvConf string
}

// ResolvConf returns the content of the pod's /etc/resolv.conf without a
// cluster DNS (ClusterFirst falls back to Default): ClusterResolvConf with
// no servers.
func ResolvConf(pod *corev1.Pod) ([]byte, error) {
	return ClusterResolvConf(pod, ClusterDNS{})
}

// ClusterResolvConf returns the content of the pod's /etc/resolv.conf,
// following the kubelet (pkg/kubelet/network/dns GetPodDNS): dnsPolicy None
// starts empty; ClusterFirst (not on the host network) and
// ClusterFirstWithHostNet get the cluster DNS servers only, the search list
// <ns>.svc.<domain> svc.<domain> <domain> followed by the host's, and
// options ndots:5 — or, without cluster DNS servers, fall back to Default;
// Default starts from the host's resolv.conf. Then spec.dnsConfig is merged
// in and the kubelet's limits applied. The rendering is the container
// runtime's (containerd, CRI-O): search, nameserver and options lines.
func ClusterResolvConf(pod *corev1.Pod, cluster ClusterDNS) ([]byte, error) {
	path := cluster.ResolvConf
	if path == "" {
		var err error
		if path, err = HostResolvConf(); err != nil {
			return nil, err
		}
	}
	cfg, err := podDNS(pod, path, cluster)
	if err != nil {
		return nil, err
	}
	return renderResolvConf(cfg), nil
}

// HostResolvConf is the host file the kubelet reads (its --resolv-conf as
// kubeadm sets it): /etc/resolv.conf, or systemd-resolved's list of real
// upstream servers when /etc/resolv.conf only names the stub.
func HostResolvConf() (string, error) {
	return hostResolvConfPath(hostResolvConf, systemdResolvConf)
}

// UsesClusterDNS is the kubelet's getPodDNSType: ClusterFirstWithHostNet
// and ClusterFirst off the host network (and an invalid policy) use the
// cluster DNS; ClusterFirst on the host network is Default.
func UsesClusterDNS(pod *corev1.Pod) bool {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone, corev1.DNSDefault:
		return false
	case corev1.DNSClusterFirst:
		return !pod.Spec.HostNetwork
	}
	return true
}

// hostResolvConfPath picks the host file to start from: etc, unless it only
// names the systemd-resolved stub and the systemd file exists.
func hostResolvConfPath(etc, systemd string) (string, error) {
	f, err := os.Open(etc)
	if err != nil {
		return "", fmt.Errorf("reading the host's resolv.conf: %w", err)
	}
	defer f.Close()
	servers, _, _, err := parseResolvConf(f)
	if err != nil {
		return "", fmt.Errorf("reading the host's resolv.conf %s: %w", etc, err)
	}
	if slices.Contains(servers, systemdStub) {
		if _, err := os.Stat(systemd); err == nil {
			return systemd, nil
		}
	}
	return etc, nil
}

func podDNS(pod *corev1.Pod, hostPath string, cluster ClusterDNS) (dnsConfig, error) {
	var cfg dnsConfig
	if pod.Spec.DNSPolicy != corev1.DNSNone {
		f, err := os.Open(hostPath)
		if err != nil {
			return cfg, fmt.Errorf("reading the host's resolv.conf: %w", err)
		}
		defer f.Close()
		servers, searches, options, err := parseResolvConf(f)
		if err != nil {
			return cfg, fmt.Errorf("reading the host's resolv.conf %s: %w", hostPath, err)
		}
		cfg = dnsConfig{Servers: servers, Searches: searches, Options: options}
		if UsesClusterDNS(pod) && len(cluster.Servers) > 0 {
			domain := cluster.Domain
			if domain == "" {
				domain = DefaultClusterDomain
			}
			// generateSearchesForDNSClusterFirst and defaultDNSOptions.
			cfg.Servers = append([]string{}, cluster.Servers...)
			cfg.Searches = omitDuplicates(append([]string{pod.Namespace + ".svc." + domain, "svc." + domain, domain}, searches...))
			cfg.Options = []string{"ndots:5"}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
	}
	cfg.Searches = searchFitsLimits(cfg.Searches)
	return cfg, nil
}

// parseResolvConf reads nameservers (accumulated), search domains and
// options (the last line of each wins), as the kubelet's parseResolvConf.
func parseResolvConf(r io.Reader) (servers, searches, options []string, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxResolvConfLength+1))
	if err != nil {
		return nil, nil, nil, err
	}
	if len(data) > maxResolvConfLength {
		return nil, nil, nil, fmt.Errorf("resolv.conf is longer than %d bytes", maxResolvConfLength)
	}
	servers, searches, options = []string{}, []string{}, []string{}
	var errs []error
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) >= 2 {
				servers = append(servers, fields[1])
			} else {
				errs = append(errs, errors.New("nameserver list is empty"))
			}
		case "search":
			// The same domain with and without the trailing dot counts once.
			searches = []string{}
			for _, s := range fields[1:] {
				searches = append(searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			options = fields[1:]
		}
	}
	return servers, searches, options, errors.Join(errs...)
}

func omitDuplicates(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions merges the pod's dnsConfig options into the existing
// ones; a pod option overrides an existing one of the same name. (The
// kubelet goes through a map, so its order is random; here existing
// options keep their place and new ones follow in the pod's order.)
func mergeDNSOptions(existing []string, podOpts []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		set(name, value)
	}
	for _, op := range podOpts {
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		set(op.Name, value)
	}
	out := []string{}
	for _, name := range names {
		if values[name] != "" {
			out = append(out, name+":"+values[name])
		} else {
			out = append(out, name)
		}
	}
	return out
}

// searchFitsLimits applies the kubelet's limits to the search list: at most
// 32 domains, none longer than 253 characters, at most 2048 characters in
// all (dropping domains from the end).
func searchFitsLimits(search []string) []string {
	if len(search) > maxDNSSearchPaths {
		search = search[:maxDNSSearchPaths]
	}
	var kept []string
	for _, s := range search {
		if len(s) <= maxSearchDomainLen {
			kept = append(kept, s)
		}
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept = kept[:len(kept)-1]
	}
	return kept
}

// renderResolvConf writes the config as containerd and CRI-O do.
func renderResolvConf(cfg dnsConfig) []byte {
	var b strings.Builder
	if len(cfg.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(cfg.Searches, " "))
	}
	for _, s := range cfg.Servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(cfg.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(cfg.Options, " "))
	}
	return []byte(b.String())
}
