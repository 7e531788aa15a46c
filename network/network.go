// Package network builds and removes a pod's network sandbox: a bind-mounted
// network namespace, a veth pair into a host bridge, an IPv4 address from a
// file-backed IPAM, outbound NAT and hostPort publishing in an nftables table
// of podrun's own, and the contents of the pod's /etc/hosts and
// /etc/resolv.conf.
//
// Everything a pod gets can be found again from its ID alone (the netns file
// <RunRoot>/netns/<podID>, the host veth name derived from the ID, the nft
// rules carrying the ID in their comment, the state file
// <StateDir>/pods/<podID>.json), so Teardown works from any process, after a
// crash, after a half-finished Prepare or Connect, and when called twice.
//
// Processes coordinate through one file lock per StateDir: Prepare, Connect and Teardown
// hold it for their whole run, which serialises IP allocation, bridge
// creation and removal, and changes to the nftables table.
package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
)

const (
	// DefaultBridge is the host bridge pods attach to unless Config.Bridge says otherwise.
	DefaultBridge = "podrun0"
	// DefaultSubnet is the pod subnet unless Config.Subnet says otherwise. It
	// avoids the defaults of podman (10.88.0.0/16, 10.89.x.0/24), docker
	// (172.17.0.0/16 and its 172.18-31 and 192.168 pools), kind/flannel
	// (10.244.0.0/16), k3s (10.42.0.0/16, 10.43.0.0/16), Kubernetes services
	// (10.96.0.0/12), cri-o (10.85.0.0/16) and libvirt (192.168.122.0/24).
	DefaultSubnet = "10.87.0.0/24"
	// DefaultClusterDomain is the cluster domain used for pod FQDNs in /etc/hosts.
	DefaultClusterDomain = "cluster.local"
	// SubnetFlag is the command-line flag the collision error tells the user to set.
	SubnetFlag = "--subnet"

	defaultTable = "podrun"
	containerIf  = "eth0"
	// maxIfName is IFNAMSIZ-1: Linux interface names are at most 15 bytes.
	maxIfName = 15
)

// Config says where podrun keeps network state and which bridge and subnet pods use.
type Config struct {
	// RunRoot is podrun's --run-root: netns files live under RunRoot/netns.
	RunRoot string
	// StateDir holds the IPAM and per-pod network state (podrun uses
	// <--root>/network). It may survive a reboot: every allocation records the
	// boot it was made in, and allocations from an earlier boot (whose netns,
	// veth and rules died with that boot) are free again; their files go when
	// the pod is deleted.
	StateDir string
	// Bridge is the host bridge name; "" means DefaultBridge.
	Bridge string
	// Subnet is the pod subnet in CIDR form; "" means DefaultSubnet.
	Subnet string

	// failAt makes Prepare or Connect fail after the named step; tests use it to prove that
	// a setup failing half-way leaves nothing behind.
	failAt string
}

// PortMapping publishes a container port on the host (a container's ports[] entry with a hostPort).
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // TCP (default), UDP or SCTP
	HostIP        string // "" or 0.0.0.0: every host address, including 127.0.0.1
}

// Request describes the pod whose network Prepare and Connect build.
type Request struct {
	PodID           string // metadata.uid
	Namespace, Name string
	HostNetwork     bool
	Ports           []PortMapping
}

// Result is what the runtime needs from the pod's network.
type Result struct {
	NetNSPath string // "" for hostNetwork; give it to libcontainer as the NEWNET path
	PodIP     string
	PodIPs    []string
	HostIP    string
	Gateway   string   // the bridge address; "" for hostNetwork
	Notes     []string // things the user should be told once
}

// resolved is a validated Config with defaults applied.
type resolved struct {
	runRoot  string
	stateDir string
	bridge   string
	subnet   netip.Prefix
	gateway  netip.Addr
	table    string
	failAt   string
}

// validatePodID accepts 1-128 letters, digits, '.', '_' or '-', not
// starting with a punctuation mark (checked by hand: a regexp compiled in
// every supervisor costs more than the check).
func validatePodID(id string) error {
	ok := len(id) >= 1 && len(id) <= 128
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("invalid pod ID %q: want 1-128 letters, digits, '.', '_' or '-'", id)
	}
	return nil
}

func (c Config) resolve() (resolved, error) {
	r := resolved{runRoot: c.RunRoot, stateDir: c.StateDir, bridge: c.Bridge, failAt: c.failAt}
	if r.runRoot == "" || !filepath.IsAbs(r.runRoot) {
		return r, fmt.Errorf("network config: RunRoot must be an absolute path, got %q", c.RunRoot)
	}
	if r.stateDir == "" || !filepath.IsAbs(r.stateDir) {
		return r, fmt.Errorf("network config: StateDir must be an absolute path, got %q", c.StateDir)
	}
	if r.bridge == "" {
		r.bridge = DefaultBridge
	}
	if err := validIfName(r.bridge); err != nil {
		return r, fmt.Errorf("network config: bridge: %w", err)
	}
	subnet := c.Subnet
	if subnet == "" {
		subnet = DefaultSubnet
	}
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return r, fmt.Errorf("network config: invalid pod subnet %q: %w", subnet, err)
	}
	if !p.Addr().Is4() {
		return r, fmt.Errorf("network config: pod subnet %q is not IPv4 (only IPv4 pod networks are supported)", subnet)
	}
	if p.Bits() > 29 || p.Bits() < 8 {
		return r, fmt.Errorf("network config: pod subnet %q must be between /8 and /29", subnet)
	}
	if p != p.Masked() {
		return r, fmt.Errorf("network config: pod subnet %q has host bits set (did you mean %s?)", subnet, p.Masked())
	}
	r.subnet = p
	r.gateway = p.Addr().Next()
	r.table = defaultTable
	if r.bridge != DefaultBridge {
		// A table per bridge keeps podrun instances with different bridges
		// (and tests) from removing each other's rules.
		r.table = defaultTable + "_" + r.bridge
	}
	return r, nil
}

// validIfName checks a Linux interface name.
func validIfName(name string) error {
	if len(name) > maxIfName {
		return fmt.Errorf("interface name %q is longer than %d characters", name, maxIfName)
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n") {
		return fmt.Errorf("invalid interface name %q", name)
	}
	return nil
}

func (r resolved) netnsDir() string              { return filepath.Join(r.runRoot, "netns") }
func (r resolved) netnsPath(podID string) string { return filepath.Join(r.netnsDir(), podID) }

// PodNetNSPath is where the network namespace of the pod podID is mounted.
func PodNetNSPath(c Config, podID string) string {
	return resolved{runRoot: c.RunRoot}.netnsPath(podID)
}

// port is a validated PortMapping.
type port struct {
	HostPort      uint16 `json:"hostPort"`
	ContainerPort uint16 `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"` // "" = every local address
}

func validatePorts(ports []PortMapping) ([]port, error) {
	var out []port
	seen := map[string]bool{}
	for i, p := range ports {
		if p.HostPort == 0 {
			continue // not published, as in Kubernetes
		}
		if p.HostPort < 1 || p.HostPort > 65535 {
			return nil, fmt.Errorf("ports[%d]: hostPort %d is out of range 1-65535", i, p.HostPort)
		}
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			return nil, fmt.Errorf("ports[%d]: containerPort %d is out of range 1-65535", i, p.ContainerPort)
		}
		proto := strings.ToUpper(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		if proto != "TCP" && proto != "UDP" && proto != "SCTP" {
			return nil, fmt.Errorf("ports[%d]: unsupported protocol %q (want TCP, UDP or SCTP)", i, p.Protocol)
		}
		hostIP := p.HostIP
		if hostIP != "" {
			a, err := netip.ParseAddr(hostIP)
			if err != nil {
				return nil, fmt.Errorf("ports[%d]: invalid hostIP %q: %w", i, p.HostIP, err)
			}
			if !a.Is4() && !a.Is4In6() {
				return nil, fmt.Errorf("ports[%d]: hostIP %q is IPv6; only IPv4 is supported", i, p.HostIP)
			}
			a = a.Unmap()
			if a.IsUnspecified() {
				hostIP = ""
			} else {
				hostIP = a.String()
			}
		}
		q := port{HostPort: uint16(p.HostPort), ContainerPort: uint16(p.ContainerPort), Protocol: proto, HostIP: hostIP}
		key := fmt.Sprintf("%s/%d/%s", q.HostIP, q.HostPort, q.Protocol)
		if seen[key] {
			return nil, fmt.Errorf("ports[%d]: hostPort %d/%s is published twice", i, p.HostPort, proto)
		}
		seen[key] = true
		out = append(out, q)
	}
	return out, nil
}

// portsConflict reports whether two published ports would catch the same traffic.
func portsConflict(a, b port) bool {
	return a.HostPort == b.HostPort && a.Protocol == b.Protocol &&
		(a.HostIP == "" || b.HostIP == "" || a.HostIP == b.HostIP)
}

// Pending is a pod network that Prepare made and Connect has not finished:
// its namespace and address exist, its veth and rules not yet.
type Pending struct {
	r   resolved
	req Request
	st  *podState
	br  netlink.Link
	mtu int
	ip  netip.Addr
}

// Prepare makes the part of the pod's network that the pod's containers
// need to be created: its address (reserved in the state file), the bridge
// and the network namespace. What links the namespace to the bridge (veth,
// routes, nftables rules) is Connect's, which may run while the containers
// are being created: they join the namespace as it is, and run nothing
// before the pod's sandbox is ready. If Prepare fails it removes what it
// made.
func Prepare(ctx context.Context, cfg Config, req Request) (*Result, *Pending, error) {
	fail := func(err error) (*Result, *Pending, error) {
		return nil, nil, fmt.Errorf("setting up network for pod %s/%s: %w", req.Namespace, req.Name, err)
	}
	if err := validatePodID(req.PodID); err != nil {
		return fail(err)
	}
	if req.HostNetwork {
		hostIP, err := HostIP()
		if err != nil {
			return nil, nil, fmt.Errorf("setting up host network for pod %s/%s: %w", req.Namespace, req.Name, err)
		}
		return &Result{PodIP: hostIP, PodIPs: []string{hostIP}, HostIP: hostIP}, &Pending{req: req}, nil
	}
	r, err := cfg.resolve()
	if err != nil {
		return fail(err)
	}
	ports, err := validatePorts(req.Ports)
	if err != nil {
		return fail(err)
	}
	lk, err := lockState(ctx, r.stateDir)
	if err != nil {
		return fail(err)
	}
	defer lk.unlock()
	res, p, err := prepareLocked(ctx, r, req, ports)
	if err != nil {
		if terr := teardownLocked(r, req.PodID); terr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up after the failed setup: %w", terr))
		}
		return fail(err)
	}
	return res, p, nil
}

// Connect finishes what Prepare began: the veth pair into the bridge, the
// pod's nftables rules and FORWARD accepts. If it fails it removes the pod's
// whole network.
func (p *Pending) Connect(ctx context.Context) error {
	if p.req.HostNetwork {
		return nil
	}
	lk, err := lockState(ctx, p.r.stateDir)
	if err == nil {
		defer lk.unlock()
		err = p.connectLocked(ctx)
		if err != nil {
			if terr := teardownLocked(p.r, p.req.PodID); terr != nil {
				err = errors.Join(err, fmt.Errorf("cleaning up after the failed setup: %w", terr))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting up network for pod %s/%s: %w", p.req.Namespace, p.req.Name, err)
	}
	return nil
}

func (r resolved) step(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.failAt == name {
		return fmt.Errorf("injected failure after step %q", name)
	}
	return nil
}

func prepareLocked(ctx context.Context, r resolved, req Request, ports []port) (*Result, *Pending, error) {
	// An earlier setup of this pod (a supervisor that crashed, a pod being
	// re-created) may have left things behind: start clean.
	if _, err := removePodLocked(r, req.PodID); err != nil {
		return nil, nil, fmt.Errorf("removing the pod's previous network: %w", err)
	}
	bootID, err := currentBootID()
	if err != nil {
		return nil, nil, err
	}
	states, err := loadStates(r.stateDir)
	if err != nil {
		return nil, nil, err
	}
	for _, st := range states {
		if st.BootID != bootID || st.PodID == req.PodID {
			continue
		}
		for _, p := range ports {
			for _, q := range st.Ports {
				if portsConflict(p, q) {
					return nil, nil, fmt.Errorf("hostPort %d/%s is already published by pod %s/%s", p.HostPort, p.Protocol, st.Namespace, st.Name)
				}
			}
		}
	}

	// Reserve the address first: the state file is what Teardown and the
	// "last pod" check go by, so it must exist before anything else does.
	ip, err := allocateIP(r, states, bootID)
	if err != nil {
		return nil, nil, err
	}
	st := &podState{
		PodID: req.PodID, Namespace: req.Namespace, Name: req.Name, BootID: bootID,
		IP: ip.String(), Gateway: r.gateway.String(), Subnet: r.subnet.String(),
		Bridge: r.bridge, Table: r.table, NetNSPath: r.netnsPath(req.PodID),
		HostVeth: hostVethName(req.PodID), Ports: ports,
	}
	if err := writeState(r.stateDir, st); err != nil {
		return nil, nil, err
	}
	if err := r.step(ctx, "allocate"); err != nil {
		return nil, nil, err
	}

	br, mtu, notes, err := ensureBridge(r)
	if err != nil {
		return nil, nil, err
	}
	if err := r.step(ctx, "bridge"); err != nil {
		return nil, nil, err
	}

	if err := createNetNS(st.NetNSPath); err != nil {
		return nil, nil, err
	}
	if err := r.step(ctx, "netns"); err != nil {
		return nil, nil, err
	}
	hostIP, err := HostIP()
	if err != nil {
		return nil, nil, err
	}
	return &Result{
		NetNSPath: st.NetNSPath,
		PodIP:     st.IP,
		PodIPs:    []string{st.IP},
		HostIP:    hostIP,
		Gateway:   st.Gateway,
		Notes:     notes,
	}, &Pending{r: r, req: req, st: st, br: br, mtu: mtu, ip: ip}, nil
}

func (p *Pending) connectLocked(ctx context.Context) error {
	r, st := p.r, p.st
	if err := setupVeth(r, st, p.br, p.mtu, p.ip); err != nil {
		return err
	}
	if err := r.step(ctx, "veth"); err != nil {
		return err
	}
	handles, err := addPodRules(r, st)
	if err != nil {
		return err
	}
	st.RuleHandles = handles
	if err := r.step(ctx, "nftables"); err != nil {
		return err
	}
	// A FORWARD chain that drops (Docker, firewalld, ufw) gets podrun's accept rules.
	if err := ensureForward(r); err != nil {
		return err
	}
	st.Complete = true
	if err := writeState(r.stateDir, st); err != nil {
		return err
	}
	return r.step(ctx, "done")
}

// Teardown removes everything Prepare and Connect made for the pod: its nftables rules,
// the veth pair, the network namespace (unmounted and its file removed) and
// its IP address; with the last pod gone it also removes podrun's nftables
// table and the bridge podrun created. It needs nothing from those calls:
// it works from another process, after a crash, after a failed setup, and
// when nothing is left (a second call is a no-op).
func Teardown(cfg Config, podID string) error {
	if err := validatePodID(podID); err != nil {
		return fmt.Errorf("tearing down network of pod %s: %w", podID, err)
	}
	r, err := cfg.resolve()
	if err != nil {
		return fmt.Errorf("tearing down network of pod %s: %w", podID, err)
	}
	lk, err := lockState(context.Background(), r.stateDir)
	if err != nil {
		return fmt.Errorf("tearing down network of pod %s: %w", podID, err)
	}
	defer lk.unlock()
	if err := teardownLocked(r, podID); err != nil {
		return fmt.Errorf("tearing down network of pod %s: %w", podID, err)
	}
	return nil
}

func teardownLocked(r resolved, podID string) error {
	table, err := removePodLocked(r, podID)
	if err != nil {
		return err
	}
	return removeSharedIfUnused(r, table)
}

// removePodLocked removes the pod's own pieces and releases its IP; it
// returns the nftables table the pod's rules were in.
func removePodLocked(r resolved, podID string) (string, error) {
	st, err := readState(r.stateDir, podID)
	if err != nil {
		return "", err
	}
	table := r.table
	nsPath := r.netnsPath(podID)
	if st != nil {
		// Trust what Prepare recorded over the current config: the user may
		// have changed the flags since.
		table = st.Table
		nsPath = st.NetNSPath
	}

	var errs []error
	if err := deletePodRules(table, podID); err != nil {
		errs = append(errs, err)
	}
	if st != nil && st.IP != "" {
		forgetConntrack(st.IP)
	}
	if err := deleteLink(hostVethName(podID)); err != nil {
		errs = append(errs, err)
	}
	if err := removeNetNS(nsPath); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Keep the state file (and with it the IP) so that a retry finds the
		// pod again and no other pod gets an address still in use.
		return "", errors.Join(errs...)
	}
	return table, removeState(r.stateDir, podID)
}

// removeSharedIfUnused removes the nftables table and the bridge podrun
// created once no pod of this boot uses them.
func removeSharedIfUnused(r resolved, table string) error {
	bootID, err := currentBootID()
	if err != nil {
		return err
	}
	states, err := loadStates(r.stateDir)
	if err != nil {
		return err
	}
	for _, st := range states {
		if st.BootID == bootID {
			return nil
		}
	}
	var errs []error
	if err := deleteTable(table); err != nil {
		errs = append(errs, err)
	}
	if table != r.table {
		if err := deleteTable(r.table); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeForward(r.bridge); err != nil {
		errs = append(errs, err)
	}
	if err := deleteOwnedBridge(r); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Leftovers describes what of podrun's pod networking is still present for
// this config: state files (allocated IPs), netns files and mounts, host
// veths on the bridge or named after a recorded pod, nftables rules and the
// table, and the bridge podrun created. With no pod running it returns
// nothing.
func Leftovers(cfg Config) ([]string, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	var out []string
	states, err := loadStates(r.stateDir)
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	vethNames := map[string]bool{}
	for _, st := range states {
		out = append(out, fmt.Sprintf("IP %s allocated to pod %s/%s (%s)", st.IP, st.Namespace, st.Name, statePath(r.stateDir, st.PodID)))
		vethNames[hostVethName(st.PodID)] = true
	}
	files, mounts, err := netnsLeftovers(r.netnsDir())
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	for _, f := range files {
		out = append(out, "netns file "+f)
	}
	for _, m := range mounts {
		out = append(out, "netns mount "+m)
	}
	links, err := linkLeftovers(r, vethNames)
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	out = append(out, links...)
	rules, err := tableLeftovers(r.table, "")
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	out = append(out, rules...)
	fwd, err := forwardLeftovers(r.bridge)
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	out = append(out, fwd...)
	svcTable, err := ServicesLeftovers(cfg)
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers: %w", err)
	}
	return append(out, svcTable...), nil
}

// PodLeftovers describes what of one pod's network is still present: its
// state file, netns file or mount, host veth and nftables rules.
func PodLeftovers(cfg Config, podID string) ([]string, error) {
	if err := validatePodID(podID); err != nil {
		return nil, err
	}
	r, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("listing network leftovers of pod %s: %w", podID, err)
	}
	var out []string
	if _, err := os.Stat(statePath(r.stateDir, podID)); err == nil {
		out = append(out, "state file "+statePath(r.stateDir, podID))
	}
	nsPath := r.netnsPath(podID)
	if _, err := os.Lstat(nsPath); err == nil {
		out = append(out, "netns file "+nsPath)
	}
	mounted, err := isMountPoint(nsPath)
	if err != nil {
		return nil, err
	}
	if mounted {
		out = append(out, "netns mount "+nsPath)
	}
	if l, err := findLink(hostVethName(podID)); err != nil {
		return nil, err
	} else if l != nil {
		out = append(out, "veth "+l.Attrs().Name)
	}
	rules, err := tableLeftovers(r.table, podID)
	if err != nil {
		return nil, err
	}
	out = append(out, rules...)
	return out, nil
}

// ipToAddr converts a net.IP to an IPv4 netip.Addr.
func ipToAddr(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	return a, a.Is4()
}
