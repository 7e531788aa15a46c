package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strings"

	"github.com/google/nftables"
)

// ServicePort is one port of one Service as the data plane needs it (what
// kube-proxy's servicePortInfo holds): where traffic arrives and the
// endpoints it may go to. services.ProxyPorts builds them from Services and
// EndpointSlices.
type ServicePort struct {
	Namespace, Name string // the Service
	PortName        string // spec.ports[].name, may be empty
	Protocol        string // TCP, UDP or SCTP
	ClusterIP       string // "" for a Service without one (headless): no rules
	Port            int32
	// NodePort is published on every local address of the host, 127.0.0.1
	// included; 0 for none.
	NodePort int32
	// AffinitySeconds > 0 is sessionAffinity ClientIP with that timeout.
	AffinitySeconds int32
	// Endpoints receive the traffic; none makes the port reject at once.
	Endpoints []ServiceEndpoint
}

// ServiceEndpoint is one address and port behind a ServicePort.
type ServiceEndpoint struct {
	IP   string
	Port int32
}

// servicesTable is the nftables table of the Services of a config: apart
// from the pods' table, so that it lives as long as there are Services
// whether or not pods run (the pods' table goes with the last pod).
func (r resolved) servicesTable() string { return r.table + "-svc" }

// SyncServices makes the kernel's Service rules match ports, as kube-proxy's
// nftables mode does (pkg/proxy/nftables, syncProxyRules): every rule and map
// of the table is written again in one nft transaction (the nft binary, as
// kube-proxy runs it through knftables), so a sync is atomic and
// level-triggered; no ports removes the table. The caller serialises syncs
// and computes ports from the current objects under the same lock, so that
// an older view never replaces a newer one.
func SyncServices(ctx context.Context, cfg Config, ports []ServicePort) error {
	r, err := cfg.resolve()
	if err != nil {
		return fmt.Errorf("syncing service rules: %w", err)
	}
	for i := range ports {
		if err := ports[i].validate(); err != nil {
			return fmt.Errorf("syncing service rules: %w", err)
		}
	}
	lk, err := lockState(ctx, r.stateDir)
	if err != nil {
		return fmt.Errorf("syncing service rules: %w", err)
	}
	defer lk.unlock()

	if !HasServiceRules(ports) {
		// No rules: the table goes in one netlink message, no nft process
		// (the services owner does this as the store's last object goes).
		return deleteTable(r.servicesTable())
	}
	have, err := existingServiceObjects(r.servicesTable())
	if err != nil {
		return fmt.Errorf("syncing service rules: %w", err)
	}
	script := renderServices(r.servicesTable(), ports, have)
	if err := runNft(ctx, script); err != nil {
		return fmt.Errorf("syncing service rules in table ip %s: %w", r.servicesTable(), err)
	}
	for _, p := range ports {
		if p.NodePort != 0 {
			// 127.0.0.1:nodePort is DNATed out of the bridge, as 127.0.0.1:hostPort
			// is (ensureBridge sets the same when it makes the bridge).
			if l, err := findLink(r.bridge); err == nil && l != nil {
				if _, err := setSysctl("net/ipv4/conf/"+r.bridge+"/route_localnet", "1"); err != nil {
					return err
				}
			}
			break
		}
	}
	return nil
}

// HasServiceRules reports whether ports make any rule, so that the Service
// rules' table exists: only ports with a ClusterIP do (a headless Service's
// make none), and without them SyncServices deletes the table.
func HasServiceRules(ports []ServicePort) bool {
	for _, p := range ports {
		if p.ClusterIP != "" {
			return true
		}
	}
	return false
}

// ServicesTableExists reports whether the Service rules' table is in the
// kernel, asked over netlink (no nft process): the cheap check of a resync
// that has nothing new to write, as kube-proxy's iptables mode watches its
// canary chain to notice its rules were flushed.
func ServicesTableExists(cfg Config) (bool, error) {
	r, err := cfg.resolve()
	if err != nil {
		return false, err
	}
	c, err := newConn()
	if err != nil {
		return false, err
	}
	t, err := findTable(c, r.servicesTable())
	return t != nil, err
}

// existingServiceObjects lists the chains and sets of the table.
func existingServiceObjects(table string) (existingObjects, error) {
	have := existingObjects{chains: map[string]bool{}, sets: map[string]bool{}}
	c, err := newConn()
	if err != nil {
		return have, err
	}
	t, err := findTable(c, table)
	if err != nil || t == nil {
		return have, err
	}
	have.table = true
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return have, fmt.Errorf("listing nftables chains: %w", err)
	}
	for _, ch := range chains {
		if ch.Table.Name == table {
			have.chains[ch.Name] = true
		}
	}
	sets, err := c.GetSets(t)
	if err != nil {
		return have, fmt.Errorf("listing nftables sets of table ip %s: %w", table, err)
	}
	for _, st := range sets {
		if !st.Anonymous && !strings.HasPrefix(st.Name, "__") { // inline vmaps are anonymous sets
			have.sets[st.Name] = true
		}
	}
	return have, nil
}

// ServicesLeftovers names the Service table when it exists.
func ServicesLeftovers(cfg Config) ([]string, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	c, err := newConn()
	if err != nil {
		return nil, err
	}
	t, err := findTable(c, r.servicesTable())
	if err != nil || t == nil {
		return nil, err
	}
	return []string{"nftables table ip " + r.servicesTable() + " (Service rules)"}, nil
}

func (p *ServicePort) validate() error {
	p.Protocol = strings.ToUpper(p.Protocol)
	if p.Protocol == "" {
		p.Protocol = "TCP"
	}
	if _, ok := protoNumbers[p.Protocol]; !ok {
		return fmt.Errorf("service %s/%s: unsupported protocol %q", p.Namespace, p.Name, p.Protocol)
	}
	if p.ClusterIP != "" {
		a, err := netip.ParseAddr(p.ClusterIP)
		if err != nil || !a.Is4() {
			return fmt.Errorf("service %s/%s: cluster IP %q is not an IPv4 address", p.Namespace, p.Name, p.ClusterIP)
		}
	}
	for _, e := range p.Endpoints {
		a, err := netip.ParseAddr(e.IP)
		if err != nil || !a.Is4() || e.Port < 1 || e.Port > 65535 {
			return fmt.Errorf("service %s/%s: endpoint %s:%d is not an IPv4 address and port", p.Namespace, p.Name, e.IP, e.Port)
		}
	}
	if p.Port < 1 || p.Port > 65535 || p.NodePort < 0 || p.NodePort > 65535 {
		return fmt.Errorf("service %s/%s: port %d or node port %d out of range", p.Namespace, p.Name, p.Port, p.NodePort)
	}
	return nil
}

// runNft feeds a script to `nft -f -`.
func runNft(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("nft: %s", strings.TrimSpace(stderr.String()))
		}
		return fmt.Errorf("running nft (is the nftables package installed?): %w", err)
	}
	return nil
}

// sortPorts orders ports so that the rendered table does not depend on the
// caller's order.
func sortPorts(ports []ServicePort) []ServicePort {
	out := append([]ServicePort(nil), ports...)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Protocol != b.Protocol {
			return a.Protocol < b.Protocol
		}
		return a.Port < b.Port
	})
	return out
}
