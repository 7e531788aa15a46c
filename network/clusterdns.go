package network

import (
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Gateway is the bridge's address in the pod subnet (the cluster DNS serves
// on it behind the kube-dns ClusterIP).
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
