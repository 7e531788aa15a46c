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

// serviceAddrLabel marks the Service addresses the services owner keeps on
// lo as podrun's (`ip addr show lo` names them).
const serviceAddrLabel = "lo:podrun-svc"

// serviceAddr is ip as a host-scoped /32 on lo.
func serviceAddr(ip netip.Addr) (netlink.Link, *netlink.Addr, error) {
	if !ip.Is4() {
		return nil, nil, fmt.Errorf("service address %s is not IPv4", ip)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return nil, nil, fmt.Errorf("looking up lo: %w", err)
	}
	return lo, &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, Label: serviceAddrLabel, Scope: int(netlink.SCOPE_HOST)}, nil
}

// AddServiceAddress makes a ClusterIP a local address of the host (on lo).
// The kube-dns ClusterIP is one: the cluster DNS server listens on it
// directly, and a pod's query goes to its gateway, the host, and is
// delivered there without a DNAT rule, so a store's first pod needs no nft
// run. The kubernetes Service's is the other: with no API server behind it,
// a connection is refused at once, as kube-proxy rejects a Service without
// endpoints. kube-proxy's IPVS mode binds its ClusterIPs to a local device
// (kube-ipvs0) the same way.
func AddServiceAddress(ip netip.Addr) error {
	lo, addr, err := serviceAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(lo, addr); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding the service address %s to lo: %w", ip, err)
	}
	return nil
}

// RemoveServiceAddress removes what AddServiceAddress added; an absent
// address is not an error.
func RemoveServiceAddress(ip netip.Addr) error {
	lo, addr, err := serviceAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrDel(lo, addr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("removing the service address %s from lo: %w", ip, err)
	}
	return nil
}

// ServiceAddresses are the Service addresses the services owners of this
// host's stores hold on lo, as /32 prefixes.
func ServiceAddresses() ([]netip.Prefix, error) {
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
		if a.Label != serviceAddrLabel || a.IPNet == nil {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IPNet.IP.To4()); ok {
			out = append(out, netip.PrefixFrom(ip, 32))
		}
	}
	return out, nil
}

// ServiceAddressLeftovers names those of ips that lo still has.
func ServiceAddressLeftovers(ips ...netip.Addr) ([]string, error) {
	have, err := ServiceAddresses()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ip := range ips {
		for _, h := range have {
			if h.Addr() == ip {
				out = append(out, "address "+ip.String()+"/32 on lo (a Service address)")
			}
		}
	}
	return out, nil
}
