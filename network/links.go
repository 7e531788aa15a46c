package network

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// hostVethPrefix starts the host-side veth names; the rest is derived from
// the pod ID so that Teardown finds the veth without any saved state.
const hostVethPrefix = "prv"

func hostVethName(podID string) string {
	sum := sha256.Sum256([]byte(podID))
	return hostVethPrefix + hex.EncodeToString(sum[:])[:maxIfName-len(hostVethPrefix)]
}

// SubnetCollisionError says the pod subnet overlaps a network the host already uses.
type SubnetCollisionError struct {
	Subnet   string // the pod subnet
	Conflict string // what it overlaps, e.g. "route 10.87.0.0/16 dev eth0"
}

func (e *SubnetCollisionError) Error() string {
	return fmt.Sprintf("pod subnet %s overlaps %s on this host; choose a free one with %s (for example %s 10.123.0.0/24)",
		e.Subnet, e.Conflict, SubnetFlag, SubnetFlag)
}

// retryDump repeats a netlink dump that the kernel interrupted because the
// list changed meanwhile (other pods come and go all the time).
func retryDump[T any](f func() (T, error)) (T, error) {
	var v T
	var err error
	for range 20 {
		v, err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, err
}

// findLink returns the link with that name, or nil when there is none.
func findLink(name string) (netlink.Link, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, fmt.Errorf("looking up link %s: %w", name, err)
	}
	return l, nil
}

func deleteLink(name string) error {
	l, err := findLink(name)
	if err != nil || l == nil {
		return err
	}
	if err := netlink.LinkDel(l); err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil
		}
		return fmt.Errorf("deleting link %s: %w", name, err)
	}
	return nil
}

// bridgeMarker records that podrun created the bridge, so that podrun
// removes it with the last pod but never removes a bridge the user made.
func bridgeMarker(r resolved) string {
	return filepath.Join(r.stateDir, "bridge-"+r.bridge+".created")
}

// bridgeAliasPrefix starts the alias (IFLA_IFALIAS) podrun gives the
// bridges it creates; the rest names the StateDir whose IPAM hands out the
// bridge's addresses. Two StateDirs on one bridge would hand out the same
// addresses and remove each other's table, so that is refused.
const bridgeAliasPrefix = "podrun state "

func bridgeAlias(r resolved) string {
	a := bridgeAliasPrefix + r.stateDir
	if len(a) > 255 { // IFALIASZ-1
		sum := sha256.Sum256([]byte(r.stateDir))
		a = bridgeAliasPrefix + "sha256:" + hex.EncodeToString(sum[:])
	}
	return a
}

// ensureBridge returns the pod bridge, creating it on first use, and the MTU
// for the pod's veth. It also makes sure the host forwards and lets
// 127.0.0.1 hostPort traffic reach pods.
func ensureBridge(r resolved) (netlink.Link, int, []string, error) {
	gw := &net.IPNet{IP: r.gateway.AsSlice(), Mask: net.CIDRMask(r.subnet.Bits(), 32)}
	br, err := findLink(r.bridge)
	if err != nil {
		return nil, 0, nil, err
	}
	if br == nil {
		if err := checkSubnetFree(r.subnet, -1); err != nil {
			return nil, 0, nil, err
		}
		mtu, err := uplinkMTU()
		if err != nil {
			return nil, 0, nil, err
		}
		// Mark first: a crash right after LinkAdd must still leave the
		// bridge recognisable as podrun's.
		if err := os.WriteFile(bridgeMarker(r), []byte(r.subnet.String()+"\n"), 0o600); err != nil {
			return nil, 0, nil, fmt.Errorf("recording bridge %s: %w", r.bridge, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = r.bridge
		attrs.MTU = mtu
		// A fixed MAC keeps the bridge's address from changing as ports
		// come and go (it would otherwise follow the lowest port MAC).
		attrs.HardwareAddr = randomMAC()
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
			_ = os.Remove(bridgeMarker(r))
			return nil, 0, nil, fmt.Errorf("creating bridge %s: %w", r.bridge, err)
		}
		if br, err = netlink.LinkByName(r.bridge); err != nil {
			return nil, 0, nil, fmt.Errorf("looking up the new bridge %s: %w", r.bridge, err)
		}
		// The kernel ignores an alias given at creation.
		if err := netlink.LinkSetAlias(br, bridgeAlias(r)); err != nil {
			return nil, 0, nil, fmt.Errorf("labelling bridge %s: %w", r.bridge, err)
		}
	} else if br.Type() != "bridge" {
		return nil, 0, nil, fmt.Errorf("%s exists and is a %s, not a bridge; choose another bridge name", r.bridge, br.Type())
	} else if a := br.Attrs().Alias; strings.HasPrefix(a, bridgeAliasPrefix) && a != bridgeAlias(r) {
		return nil, 0, nil, fmt.Errorf("bridge %s belongs to another podrun state directory (%s); give this --root its own --bridge and --subnet",
			r.bridge, strings.TrimPrefix(a, bridgeAliasPrefix))
	}

	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(br, netlink.FAMILY_V4) })
	if err != nil {
		return nil, 0, nil, fmt.Errorf("listing addresses of bridge %s: %w", r.bridge, err)
	}
	hasGW := false
	for _, a := range addrs {
		if a.IPNet.IP.Equal(gw.IP) && slices.Equal(a.IPNet.Mask, gw.Mask) {
			hasGW = true
			continue
		}
		return nil, 0, nil, fmt.Errorf("bridge %s has address %s, not %s: it serves another pod subnet; use the same subnet or another bridge", r.bridge, a.IPNet, gw)
	}
	if !hasGW {
		if err := checkSubnetFree(r.subnet, br.Attrs().Index); err != nil {
			return nil, 0, nil, err
		}
		if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: gw}); err != nil {
			return nil, 0, nil, fmt.Errorf("adding %s to bridge %s: %w", gw, r.bridge, err)
		}
	}
	// Output-chain DNAT of 127.0.0.1:hostPort sends packets with a loopback
	// source out of the bridge; the kernel drops those as martians unless
	// route_localnet is on (as CNI portmap does). The postrouting chain
	// masquerades them to the bridge address.
	if _, err := setSysctl("net/ipv4/conf/"+r.bridge+"/route_localnet", "1"); err != nil {
		return nil, 0, nil, err
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, 0, nil, fmt.Errorf("bringing bridge %s up: %w", r.bridge, err)
	}
	var notes []string
	changed, err := setSysctl("net/ipv4/ip_forward", "1")
	if err != nil {
		return nil, 0, nil, err
	}
	if changed {
		notes = append(notes, "podrun enabled net.ipv4.ip_forward (it was 0) so that pods can reach other networks; it stays on until reboot")
	}
	return br, br.Attrs().MTU, notes, nil
}

// deleteOwnedBridge removes the bridge if podrun created it and nothing is attached to it any more.
func deleteOwnedBridge(r resolved) error {
	if _, err := os.Stat(bridgeMarker(r)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	br, err := findLink(r.bridge)
	if err != nil {
		return err
	}
	// A bridge without an alias is still ours: podrun crashed between
	// creating and labelling it. One with another alias is not ours any more.
	if br != nil && (br.Attrs().Alias == "" || br.Attrs().Alias == bridgeAlias(r)) {
		links, err := retryDump(netlink.LinkList)
		if err != nil {
			return fmt.Errorf("listing links: %w", err)
		}
		for _, l := range links {
			if l.Attrs().MasterIndex == br.Attrs().Index {
				return nil // something else still uses it
			}
		}
		if err := deleteLink(r.bridge); err != nil {
			return err
		}
	}
	if err := os.Remove(bridgeMarker(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing bridge record: %w", err)
	}
	return nil
}

// checkSubnetFree fails when a host route or address (other than on the
// link with index except) overlaps the subnet.
func checkSubnetFree(subnet netip.Prefix, except int) error {
	routes, err := retryDump(func() ([]netlink.Route, error) {
		return netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return fmt.Errorf("listing host routes: %w", err)
	}
	for _, rt := range routes {
		if rt.Dst == nil || rt.LinkIndex == except {
			continue
		}
		p, ok := ipNetToPrefix(rt.Dst)
		if !ok || p.Bits() == 0 || !p.Overlaps(subnet) {
			continue
		}
		return &SubnetCollisionError{Subnet: subnet.String(), Conflict: "the route " + describeRoute(p, rt.LinkIndex)}
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return fmt.Errorf("listing host addresses: %w", err)
	}
	for _, a := range addrs {
		if a.LinkIndex == except {
			continue
		}
		p, ok := ipNetToPrefix(a.IPNet)
		if ok && p.Overlaps(subnet) {
			return &SubnetCollisionError{Subnet: subnet.String(), Conflict: "the address " + describeRoute(p, a.LinkIndex)}
		}
	}
	return nil
}

func describeRoute(p netip.Prefix, linkIndex int) string {
	if l, err := netlink.LinkByIndex(linkIndex); err == nil {
		return fmt.Sprintf("%s dev %s", p, l.Attrs().Name)
	}
	return p.String()
}

func ipNetToPrefix(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := ipToAddr(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits != 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

// uplinkMTU is the MTU of the interface behind the default route (pods
// should not send bigger packets than the host can), or 1500.
func uplinkMTU() (int, error) {
	routes, err := retryDump(func() ([]netlink.Route, error) {
		return netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return 0, fmt.Errorf("listing host routes: %w", err)
	}
	for _, rt := range defaultRoutes(routes) {
		if l, err := netlink.LinkByIndex(rt.LinkIndex); err == nil && l.Attrs().MTU >= 576 {
			return l.Attrs().MTU, nil
		}
	}
	return 1500, nil
}

func defaultRoutes(routes []netlink.Route) []netlink.Route {
	var out []netlink.Route
	for _, rt := range routes {
		if rt.Dst == nil || rt.Dst.IP.IsUnspecified() && isZeroMask(rt.Dst.Mask) {
			out = append(out, rt)
		}
	}
	slices.SortStableFunc(out, func(a, b netlink.Route) int { return a.Priority - b.Priority })
	return out
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

func randomMAC() net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	_, _ = rand.Read(mac)
	mac[0] = (mac[0] | 0x02) &^ 0x01 // locally administered, unicast
	return mac
}

// setSysctl writes value to /proc/sys/<name> unless it is already set, and
// reports whether it changed anything.
func setSysctl(name, value string) (bool, error) {
	p := filepath.Join("/proc/sys", name)
	cur, err := os.ReadFile(p)
	if err != nil {
		return false, fmt.Errorf("reading sysctl %s: %w", strings.ReplaceAll(name, "/", "."), err)
	}
	if strings.TrimSpace(string(cur)) == value {
		return false, nil
	}
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return false, fmt.Errorf("setting sysctl %s=%s: %w", strings.ReplaceAll(name, "/", "."), value, err)
	}
	return true, nil
}

// setupVeth creates the pod's veth pair (host end on the bridge, eth0 in
// the pod's namespace) and configures the namespace: loopback up, the pod
// address on eth0, a default route via the bridge.
func setupVeth(r resolved, st *podState, br netlink.Link, mtu int, ip netip.Addr) error {
	ns, err := netns.GetFromPath(st.NetNSPath)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", st.NetNSPath, err)
	}
	defer ns.Close()

	attrs := netlink.NewLinkAttrs()
	attrs.Name = st.HostVeth
	attrs.MTU = mtu
	// Creating the peer directly inside the namespace avoids a temporary
	// name in the host and lets every pod's peer be called eth0.
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: containerIf, PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth pair %s/%s: %w", st.HostVeth, containerIf, err)
	}
	host, err := netlink.LinkByName(st.HostVeth)
	if err != nil {
		return fmt.Errorf("looking up veth %s: %w", st.HostVeth, err)
	}
	if err := netlink.LinkSetMaster(host, br); err != nil {
		return fmt.Errorf("attaching veth %s to bridge %s: %w", st.HostVeth, r.bridge, err)
	}
	// Hairpin mode, as the CNI bridge plugin's hairpinMode and the kubelet's
	// hairpin-veth: when br_netfilter DNATs a pod's packet back to the same
	// pod (through a Service or a hostPort), the bridge must send it out of
	// the port it came in on.
	if err := netlink.LinkSetHairpin(host, true); err != nil {
		return fmt.Errorf("setting hairpin mode on veth %s: %w", st.HostVeth, err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("bringing veth %s up: %w", st.HostVeth, err)
	}

	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("opening netlink in network namespace %s: %w", st.NetNSPath, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("looking up loopback in the pod: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing loopback up in the pod: %w", err)
	}
	eth, err := h.LinkByName(containerIf)
	if err != nil {
		return fmt.Errorf("looking up %s in the pod: %w", containerIf, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(r.subnet.Bits(), 32)}}
	if err := h.AddrAdd(eth, addr); err != nil {
		return fmt.Errorf("adding %s to %s in the pod: %w", addr.IPNet, containerIf, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("bringing %s up in the pod: %w", containerIf, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: r.gateway.AsSlice()}); err != nil {
		return fmt.Errorf("adding the default route via %s in the pod: %w", r.gateway, err)
	}
	return nil
}

// HostIP returns the host's primary address: the source address of the
// default route, else the first global address of the default route's
// interface, else the first global address of any interface (IPv4 first,
// then IPv6).
func HostIP() (string, error) {
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := retryDump(func() ([]netlink.Route, error) {
			return netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		})
		if err != nil {
			return "", fmt.Errorf("finding the host IP: listing routes: %w", err)
		}
		for _, rt := range defaultRoutes(routes) {
			if rt.Src != nil && !rt.Src.IsUnspecified() {
				return rt.Src.String(), nil
			}
			if ip, err := firstGlobalAddr(rt.LinkIndex, family); err != nil {
				return "", err
			} else if ip != "" {
				return ip, nil
			}
		}
		if ip, err := firstGlobalAddr(0, family); err != nil {
			return "", err
		} else if ip != "" {
			return ip, nil
		}
	}
	return "", errors.New("finding the host IP: the host has no global IP address")
}

// firstGlobalAddr returns the first global-scope address on the link (any link when linkIndex is 0).
func firstGlobalAddr(linkIndex, family int) (string, error) {
	var link netlink.Link
	if linkIndex != 0 {
		l, err := netlink.LinkByIndex(linkIndex)
		if err != nil {
			return "", nil // the route's link vanished: try the next candidate
		}
		link = l
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(link, family) })
	if err != nil {
		return "", fmt.Errorf("finding the host IP: listing addresses: %w", err)
	}
	for _, a := range addrs {
		if a.Scope == unix.RT_SCOPE_UNIVERSE && !a.IP.IsLoopback() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
			return a.IP.String(), nil
		}
	}
	return "", nil
}

// linkLeftovers lists the veths of recorded pods, anything still attached
// to the bridge, and the bridge itself if podrun created it.
func linkLeftovers(r resolved, vethNames map[string]bool) ([]string, error) {
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	brIndex := -1
	for _, l := range links {
		if l.Attrs().Name == r.bridge {
			brIndex = l.Attrs().Index
		}
	}
	var out []string
	for _, l := range links {
		name := l.Attrs().Name
		switch {
		case vethNames[name]:
			out = append(out, fmt.Sprintf("%s %s", l.Type(), name))
		case brIndex > 0 && l.Attrs().MasterIndex == brIndex:
			out = append(out, fmt.Sprintf("%s %s on bridge %s", l.Type(), name, r.bridge))
		}
	}
	if _, err := os.Stat(bridgeMarker(r)); err == nil && brIndex > 0 {
		out = append(out, "bridge "+r.bridge)
	}
	return out, nil
}
