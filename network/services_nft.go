package network

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"sort"
	"strings"
)

// The table renderServices writes, in kube-proxy's nftables-mode layout
// (chain and map names as kube-proxy's, "ip kube-proxy" becoming podrun's
// services table):
//
//	map service-ips        { ipv4_addr . inet_proto . inet_service : verdict }  ClusterIP:port -> goto service-…
//	map service-nodeports  { inet_proto . inet_service : verdict }              nodePort -> goto external-…
//	map no-endpoint-services / no-endpoint-nodeports                            -> goto reject-chain
//	set cluster-ips                                                             other ports of a ClusterIP: reject
//	chain nat-prerouting / nat-output (dstnat): jump services
//	chain nat-postrouting (srcnat): jump masquerading
//	chain filter-input / filter-forward / filter-output (dstnat-10): the no-endpoint checks, before any DNAT;
//	  filter-forward and filter-output-post-dnat: other ports of a ClusterIP are refused
//	chain service-<hash>-<ns>/<name>/<proto>/<port>:  mark for masquerade; affinity; numgen random mod N vmap {…}
//	chain external-<hash>-…:  mark for masquerade; goto service-…
//	chain endpoint-<hash>-…__<ip>/<port>:  hairpin mark; affinity update; dnat to ip:port
//
// One deviation: every connection through a Service is masqueraded (as
// kube-proxy's --masquerade-all), not only hairpin and off-cluster ones.
// Pods share one bridge, so the reply from a backend to a client pod would
// otherwise bypass the host's connection tracking and never be un-DNATed
// unless br_netfilter is loaded; podrun does not change that host-wide
// setting. Backends see the bridge address as the client.
const (
	masqueradeMark = "0x4000" // kube-proxy's default --masquerade-bit 14
	chainSvcPrefix = "service-"
	chainExtPrefix = "external-"
	chainEpPrefix  = "endpoint-"
	affinityPrefix = "affinity-"
)

// hashName is kube-proxy's hashAndTruncate idea: a short stable hash that
// keeps names unique whatever the Service names are.
func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:8]
}

func (p ServicePort) id() string {
	port := p.PortName
	if port == "" {
		port = fmt.Sprint(p.Port)
	}
	return fmt.Sprintf("%s/%s/%s/%s", p.Namespace, p.Name, strings.ToLower(p.Protocol), port)
}

func (p ServicePort) svcChain() string { return chainSvcPrefix + hashName(p.id()) + "-" + p.id() }
func (p ServicePort) extChain() string { return chainExtPrefix + hashName(p.id()) + "-" + p.id() }
func (p ServicePort) epChain(e ServiceEndpoint) string {
	id := fmt.Sprintf("%s__%s/%d", p.id(), e.IP, e.Port)
	return chainEpPrefix + hashName(id) + "-" + id
}

// affinitySet names the endpoint's affinity set; the timeout is part of the
// name because a set's timeout cannot change in place.
func (p ServicePort) affinitySet(e ServiceEndpoint) string {
	return affinityPrefix + hashName(fmt.Sprintf("%s__%s/%d/%d", p.id(), e.IP, e.Port, p.AffinitySeconds))
}

// existingObjects are the chains and sets the table holds before a sync.
type existingObjects struct {
	table        bool
	chains, sets map[string]bool
}

// renderServices writes the nft script (one transaction) that makes the
// table hold exactly the rules for ports, as kube-proxy's sync does: the
// table, its base chains and maps are declared (a no-op when present), all
// rules and map elements are flushed and written again, and chains and sets
// that are no longer wanted are deleted. Base chains are never re-created,
// which would wait for RCU grace periods, and affinity sets keep their
// clients across syncs. With no ports the table is deleted.
func renderServices(table string, ports []ServicePort, have existingObjects) string {
	var b strings.Builder
	var active []ServicePort
	for _, p := range sortPorts(ports) {
		if p.ClusterIP != "" {
			active = append(active, p)
		}
	}
	if len(active) == 0 {
		return "" // SyncServices deletes the table over netlink
	}
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("add table ip %s { comment \"podrun Services (kube-proxy nftables mode)\"; }", table)
	w("flush table ip %s", table)

	var svcIPs, nodePorts, noEpSvc, noEpNode, clusterIPs []string
	seenIP := map[string]bool{}
	for _, p := range active {
		proto := strings.ToLower(p.Protocol)
		if !seenIP[p.ClusterIP] {
			seenIP[p.ClusterIP] = true
			clusterIPs = append(clusterIPs, p.ClusterIP)
		}
		if len(p.Endpoints) == 0 {
			noEpSvc = append(noEpSvc, fmt.Sprintf("%s . %s . %d : goto reject-chain", p.ClusterIP, proto, p.Port))
			if p.NodePort != 0 {
				noEpNode = append(noEpNode, fmt.Sprintf("%s . %d : goto reject-chain", proto, p.NodePort))
			}
			continue
		}
		svcIPs = append(svcIPs, fmt.Sprintf("%s . %s . %d : goto %s", p.ClusterIP, proto, p.Port, p.svcChain()))
		if p.NodePort != 0 {
			nodePorts = append(nodePorts, fmt.Sprintf("%s . %d : goto %s", proto, p.NodePort, p.extChain()))
		}
	}
	wantSets := map[string]bool{}
	var elemLines []string // written once the chains they name exist
	set := func(kind, name, typ string, elems []string) {
		wantSets[name] = true
		w("add %s ip %s %s { type %s; }", kind, table, name, typ)
		w("flush %s ip %s %s", kind, table, name)
		if len(elems) > 0 {
			elemLines = append(elemLines, fmt.Sprintf("add element ip %s %s { %s }", table, name, strings.Join(elems, ", ")))
		}
	}
	set("set", "cluster-ips", "ipv4_addr", clusterIPs)
	set("map", "service-ips", "ipv4_addr . inet_proto . inet_service : verdict", svcIPs)
	set("map", "service-nodeports", "inet_proto . inet_service : verdict", nodePorts)
	set("map", "no-endpoint-services", "ipv4_addr . inet_proto . inet_service : verdict", noEpSvc)
	set("map", "no-endpoint-nodeports", "inet_proto . inet_service : verdict", noEpNode)

	// Chains are declared before any map element or rule, so that every
	// jump and goto finds its target.
	wantChains := map[string]bool{}
	var decls, ruleLines []string
	chain := func(name, head string, rules ...string) {
		wantChains[name] = true
		if head != "" {
			decls = append(decls, fmt.Sprintf("add chain ip %s %s { %s }", table, name, head))
		} else {
			decls = append(decls, fmt.Sprintf("add chain ip %s %s", table, name))
		}
		for _, r := range rules {
			ruleLines = append(ruleLines, fmt.Sprintf("add rule ip %s %s %s", table, name, r))
		}
	}
	// Filter chains run before DNAT (priority dstnat-10) and only see new
	// connections: a Service without endpoints is refused at once (an ICMP
	// port unreachable, which a TCP client reports as connection refused).
	chain("reject-chain", "", "reject")
	chain("filter-input", "type filter hook input priority -110; policy accept;",
		"ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check")
	chain("filter-forward", "type filter hook forward priority -110; policy accept;",
		"ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check")
	chain("filter-output", "type filter hook output priority -110; policy accept;",
		"ct state new jump service-endpoints-check")
	// Other ports of a ClusterIP are refused after DNAT has had its chance.
	chain("filter-output-post-dnat", "type filter hook output priority -90; policy accept;",
		"ct state new jump cluster-ips-check")
	chain("nodeport-endpoints-check", "", "fib daddr type local meta l4proto . th dport vmap @no-endpoint-nodeports")
	chain("service-endpoints-check", "", "ip daddr . meta l4proto . th dport vmap @no-endpoint-services")
	chain("cluster-ips-check", "", `ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"`)

	chain("nat-prerouting", "type nat hook prerouting priority dstnat; policy accept;", "jump services")
	chain("nat-output", "type nat hook output priority -100; policy accept;", "jump services")
	chain("nat-postrouting", "type nat hook postrouting priority srcnat; policy accept;", "jump masquerading")
	chain("masquerading", "",
		"meta mark & "+masqueradeMark+" == 0 return",
		"meta mark set meta mark ^ "+masqueradeMark,
		"masquerade fully-random")
	chain("mark-for-masquerade", "", "meta mark set meta mark | "+masqueradeMark)
	// NodePorts answer on every local address, 127.0.0.1 included (as
	// hostPort does; kube-proxy's nftables mode leaves 127.0.0.1 out).
	chain("services", "",
		"ip daddr . meta l4proto . th dport vmap @service-ips",
		"fib daddr type local meta l4proto . th dport vmap @service-nodeports")

	for _, p := range active {
		if len(p.Endpoints) == 0 {
			continue
		}
		proto := strings.ToLower(p.Protocol)
		if p.AffinitySeconds > 0 {
			for _, e := range p.Endpoints {
				name := p.affinitySet(e)
				wantSets[name] = true
				w("add set ip %s %s { type ipv4_addr; flags dynamic,timeout; timeout %ds; }", table, name, p.AffinitySeconds)
			}
		}
		rules := []string{fmt.Sprintf("ip daddr %s %s dport %d jump mark-for-masquerade", p.ClusterIP, proto, p.Port)}
		if p.AffinitySeconds > 0 {
			for _, e := range p.Endpoints {
				rules = append(rules, fmt.Sprintf("ip saddr @%s goto %s", p.affinitySet(e), p.epChain(e)))
			}
		}
		var vmap []string
		for i, e := range p.Endpoints {
			vmap = append(vmap, fmt.Sprintf("%d : goto %s", i, p.epChain(e)))
		}
		for _, e := range p.Endpoints {
			epRules := []string{fmt.Sprintf("ip saddr %s jump mark-for-masquerade", e.IP)}
			if p.AffinitySeconds > 0 {
				epRules = append(epRules, fmt.Sprintf("update @%s { ip saddr }", p.affinitySet(e)))
			}
			epRules = append(epRules, fmt.Sprintf("meta l4proto %s dnat to %s:%d", proto, e.IP, e.Port))
			chain(p.epChain(e), "", epRules...)
		}
		rules = append(rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(p.Endpoints), strings.Join(vmap, ", ")))
		chain(p.svcChain(), "", rules...)
		if p.NodePort != 0 {
			chain(p.extChain(), "", "jump mark-for-masquerade", "goto "+p.svcChain())
		}
	}
	for _, l := range append(append(decls, elemLines...), ruleLines...) {
		w("%s", l)
	}
	// What the last sync made and this one does not want: nothing refers to
	// it any more (the rules and maps were flushed above).
	for _, c := range sortedKeys(have.chains) {
		if !wantChains[c] {
			w("delete chain ip %s %s", table, c)
		}
	}
	for _, st := range sortedKeys(have.sets) {
		if !wantSets[st] {
			w("delete set ip %s %s", table, st)
		}
	}
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
