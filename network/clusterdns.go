package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Gateway is the bridge's address in the pod subnet, the pods' route to the
// host (and so to the cluster DNS address on lo).
func (c Config) Gateway() (netip.Addr, error) {
	r, err := c.resolve()
	if err != nil {
		return netip.Addr{}, err
	}
	return r.gateway, nil
}

// HostRoutes are the destinations of the host's IPv4 routes in the main
// table (services.ChooseServiceCIDR keeps the service range clear of them).
func HostRoutes() ([]netip.Prefix, error) {
	routes, err := retryDump(func() ([]netlink.Route, error) {
		return netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, rt := range routes {
		if rt.Dst == nil {
			continue
		}
		if p, ok := ipNetToPrefix(rt.Dst); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// clusterDNSLabel marks the cluster DNS address on lo as podrun's (`ip addr
// show lo` names it).
const clusterDNSLabel = "lo:podrun-dns"

// clusterDNSAddr is ip as a host-scoped /32 on lo.
func clusterDNSAddr(ip netip.Addr) (netlink.Link, *netlink.Addr, error) {
	if !ip.Is4() {
		return nil, nil, fmt.Errorf("cluster DNS address %s is not IPv4", ip)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return nil, nil, fmt.Errorf("looking up lo: %w", err)
	}
	return lo, &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, Label: clusterDNSLabel, Scope: int(netlink.SCOPE_HOST)}, nil
}

// AddClusterDNSAddress makes the kube-dns ClusterIP a local address of the
// host (on lo), so that the cluster DNS server listens on it directly and a
// pod's query reaches it through the bridge's gateway without a DNAT rule:
// the first pod of a store then needs no nft run. kube-proxy's IPVS mode
// binds its ClusterIPs to a local device (kube-ipvs0) the same way.
func AddClusterDNSAddress(ip netip.Addr) error {
	lo, addr, err := clusterDNSAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(lo, addr); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding the cluster DNS address %s to lo: %w", ip, err)
	}
	return nil
}

// RemoveClusterDNSAddress removes what AddClusterDNSAddress added; an absent
// address is not an error.
func RemoveClusterDNSAddress(ip netip.Addr) error {
	lo, addr, err := clusterDNSAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrDel(lo, addr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("removing the cluster DNS address %s from lo: %w", ip, err)
	}
	return nil
}

// ClusterDNSAddressLeftovers names the cluster DNS address when lo still has it.
func ClusterDNSAddressLeftovers(ip netip.Addr) ([]string, error) {
	lo, want, err := clusterDNSAddr(ip)
	if err != nil {
		return nil, err
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(lo, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of lo: %w", err)
	}
	for _, a := range addrs {
		if a.IPNet != nil && a.IPNet.IP.Equal(want.IPNet.IP) {
			return []string{"address " + ip.String() + "/32 on lo (cluster DNS)"}, nil
		}
	}
	return nil, nil
}

// ClusterDNSAddresses are the cluster DNS addresses the services owners of
// this host's stores hold on lo, as /32 prefixes.
func ClusterDNSAddresses() ([]netip.Prefix, error) {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("looking up lo: %w", err)
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(lo, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of lo: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if a.Label != clusterDNSLabel || a.IPNet == nil {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IPNet.IP.To4()); ok {
			out = append(out, netip.PrefixFrom(ip, 32))
		}
	}
	return out, nil
}
