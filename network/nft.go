package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// podrun's nftables table (family ip) looks like this, in nft syntax:
//
//	table ip podrun {
//	  chain prerouting  { type nat hook prerouting priority dstnat;  fib daddr type local jump hostports }
//	  chain output      { type nat hook output priority dstnat;      fib daddr type local jump hostports }
//	  chain hostports   { [ip daddr HOSTIP] meta l4proto tcp th dport 8080 dnat to 10.87.0.2:80 comment "podrun pod <uid>" … }
//	  chain postrouting { type nat hook postrouting priority srcnat;
//	    ip saddr SUBNET ip daddr != SUBNET masquerade            # outbound NAT, not between pods
//	    ip saddr SUBNET ip daddr SUBNET ct status dnat masquerade # a pod reaching a hostPort (hairpin)
//	    ip saddr 127.0.0.0/8 ip daddr SUBNET masquerade          # 127.0.0.1:hostPort from the host
//	  }
//	}
//
// The output chain catches connections made on the host itself (to
// 127.0.0.1 or the host's own addresses), as CNI portmap and netavark do.
const (
	chainPrerouting  = "prerouting"
	chainOutput      = "output"
	chainPostrouting = "postrouting"
	chainHostports   = "hostports"

	podCommentPrefix  = "podrun pod "
	baseCommentPrefix = "podrun base "
)

// ipsDstNAT is IPS_DST_NAT from linux/netfilter/nf_conntrack_common.h: the
// connection's destination was rewritten (ct status dnat).
const ipsDstNAT = 1 << 5

func podComment(podID string) string { return podCommentPrefix + podID }

// baseComment ties the shared rules to the subnet they were made for, so a
// table left over with another subnet gets its shared rules rebuilt.
func baseComment(r resolved) string { return baseCommentPrefix + r.subnet.String() }

func ruleComment(rule *nftables.Rule) string {
	s, _ := userdata.GetString(rule.UserData, userdata.TypeComment)
	return strings.TrimRight(s, "\x00")
}

func withComment(c string) []byte { return userdata.AppendString(nil, userdata.TypeComment, c) }

func newConn() (*nftables.Conn, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	return c, nil
}

// findTable returns podrun's table, or nil if there is none.
func findTable(c *nftables.Conn, name string) (*nftables.Table, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, nil
}

// tableRules returns every rule of the table, chain by chain.
func tableRules(c *nftables.Conn, t *nftables.Table) ([]*nftables.Rule, error) {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("listing nftables chains: %w", err)
	}
	var out []*nftables.Rule
	for _, ch := range chains {
		if ch.Table.Name != t.Name {
			continue
		}
		rules, err := c.GetRules(t, ch)
		if err != nil {
			return nil, fmt.Errorf("listing rules of nftables chain %s/%s: %w", t.Name, ch.Name, err)
		}
		for _, rl := range rules {
			rl.Chain = ch
		}
		out = append(out, rules...)
	}
	return out, nil
}

func natChain(t *nftables.Table, name string, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
	accept := nftables.ChainPolicyAccept
	return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeNAT, Hooknum: hook, Priority: prio, Policy: &accept}
}

// addPodRules adds the pod's hostPort DNAT rules, creating the table, its
// chains and the shared rules if they are missing, in one atomic batch. It
// returns the handles of the pod's rules.
func addPodRules(r resolved, st *podState) ([]uint64, error) {
	c, err := newConn()
	if err != nil {
		return nil, err
	}
	existing, err := findTable(c, r.table)
	if err != nil {
		return nil, err
	}
	baseOK := false
	if existing != nil {
		rules, err := tableRules(c, existing)
		if err != nil {
			return nil, err
		}
		for _, rl := range rules {
			if rl.Chain.Name == chainPostrouting && ruleComment(rl) == baseComment(r) {
				baseOK = true
			}
		}
	}

	t := c.AddTable(&nftables.Table{Name: r.table, Family: nftables.TableFamilyIPv4})
	pre := c.AddChain(natChain(t, chainPrerouting, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest))
	out := c.AddChain(natChain(t, chainOutput, nftables.ChainHookOutput, nftables.ChainPriorityNATDest))
	post := c.AddChain(natChain(t, chainPostrouting, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource))
	hp := c.AddChain(&nftables.Chain{Name: chainHostports, Table: t})
	if !baseOK {
		for _, ch := range []*nftables.Chain{pre, out, post} {
			c.FlushChain(ch)
		}
		addBaseRules(c, r, t, pre, out, post, hp)
	}
	podIP, err := netip.ParseAddr(st.IP)
	if err != nil {
		return nil, fmt.Errorf("pod IP %q: %w", st.IP, err)
	}
	for _, p := range st.Ports {
		c.AddRule(&nftables.Rule{Table: t, Chain: hp, Exprs: dnatExprs(p, podIP), UserData: withComment(podComment(st.PodID))})
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("adding nftables rules to table ip %s: %w", r.table, err)
	}

	rules, err := c.GetRules(t, hp)
	if err != nil {
		return nil, fmt.Errorf("listing nftables chain %s/%s: %w", r.table, chainHostports, err)
	}
	var handles []uint64
	for _, rl := range rules {
		if ruleComment(rl) == podComment(st.PodID) {
			handles = append(handles, rl.Handle)
		}
	}
	if len(handles) != len(st.Ports) {
		return nil, fmt.Errorf("nftables chain %s/%s holds %d rules of pod %s, want %d", r.table, chainHostports, len(handles), st.PodID, len(st.Ports))
	}
	return handles, nil
}

func addBaseRules(c *nftables.Conn, r resolved, t *nftables.Table, pre, out, post, hp *nftables.Chain) {
	comment := withComment(baseComment(r))
	jumpLocal := []expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		&expr.Verdict{Kind: expr.VerdictJump, Chain: hp.Name},
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: jumpLocal, UserData: comment})
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: jumpLocal, UserData: comment})

	masq := &expr.Masq{}
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	// Outbound: pod traffic leaving the pod subnet takes the host's address.
	c.AddRule(&nftables.Rule{Table: t, Chain: post, UserData: comment, Exprs: concat(
		matchPrefix(12, r.subnet, expr.CmpOpEq),
		matchPrefix(16, r.subnet, expr.CmpOpNeq),
		[]expr.Any{masq},
	)})
	// Hairpin: a pod reaching a hostPort that leads back into the subnet
	// must see the reply come from the address it connected to.
	c.AddRule(&nftables.Rule{Table: t, Chain: post, UserData: comment, Exprs: concat(
		matchPrefix(12, r.subnet, expr.CmpOpEq),
		matchPrefix(16, r.subnet, expr.CmpOpEq),
		[]expr.Any{
			&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
			masq,
		},
	)})
	// 127.0.0.1:hostPort: the pod cannot answer a loopback source.
	c.AddRule(&nftables.Rule{Table: t, Chain: post, UserData: comment, Exprs: concat(
		matchPrefix(12, loopback, expr.CmpOpEq),
		matchPrefix(16, r.subnet, expr.CmpOpEq),
		[]expr.Any{masq},
	)})
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// matchPrefix compares the IPv4 address at offset (12 source, 16
// destination) of the network header with a prefix.
func matchPrefix(offset uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	mask := make([]byte, 4)
	binary.BigEndian.PutUint32(mask, ^uint32(0)<<(32-p.Bits()))
	addr := p.Masked().Addr().As4()
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: 1, Data: addr[:]},
	}
}

var protoNumbers = map[string]byte{"TCP": unix.IPPROTO_TCP, "UDP": unix.IPPROTO_UDP, "SCTP": unix.IPPROTO_SCTP}

// dnatExprs is `[ip daddr HOSTIP] meta l4proto P th dport HP dnat to PODIP:CP`.
func dnatExprs(p port, podIP netip.Addr) []expr.Any {
	var ex []expr.Any
	if p.HostIP != "" {
		hostIP := netip.MustParseAddr(p.HostIP).As4()
		ex = append(ex,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: hostIP[:]},
		)
	}
	pod := podIP.As4()
	ex = append(ex,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{protoNumbers[p.Protocol]}},
		// The destination port sits at offset 2 in TCP, UDP and SCTP headers alike.
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(p.HostPort)},
		&expr.Immediate{Register: 1, Data: pod[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(p.ContainerPort)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	)
	return ex
}

// deletePodRules removes every rule carrying the pod's comment from the table.
func deletePodRules(table, podID string) error {
	c, err := newConn()
	if err != nil {
		return err
	}
	t, err := findTable(c, table)
	if err != nil || t == nil {
		return err
	}
	rules, err := tableRules(c, t)
	if err != nil {
		return err
	}
	n := 0
	for _, rl := range rules {
		if ruleComment(rl) == podComment(podID) {
			if err := c.DelRule(rl); err != nil {
				return fmt.Errorf("deleting nftables rule %d of pod %s: %w", rl.Handle, podID, err)
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("deleting the nftables rules of pod %s from table ip %s: %w", podID, table, err)
	}
	return nil
}

// deleteTable removes podrun's table if it exists.
func deleteTable(name string) error {
	c, err := newConn()
	if err != nil {
		return err
	}
	t, err := findTable(c, name)
	if err != nil || t == nil {
		return err
	}
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("deleting nftables table ip %s: %w", name, err)
	}
	return nil
}

// tableLeftovers describes the table and its pod rules (only podID's when
// podID is not empty; then the table itself is not mentioned).
func tableLeftovers(table, podID string) ([]string, error) {
	c, err := newConn()
	if err != nil {
		return nil, err
	}
	t, err := findTable(c, table)
	if err != nil || t == nil {
		return nil, err
	}
	var out []string
	if podID == "" {
		out = append(out, "nftables table ip "+table)
	}
	rules, err := tableRules(c, t)
	if err != nil {
		return nil, err
	}
	for _, rl := range rules {
		cm := ruleComment(rl)
		if !strings.HasPrefix(cm, podCommentPrefix) || podID != "" && cm != podComment(podID) {
			continue
		}
		out = append(out, fmt.Sprintf("nftables rule ip %s %s handle %d (%s)", table, rl.Chain.Name, rl.Handle, cm))
	}
	return out, nil
}

// forgetConntrack drops connection-tracking entries of the pod's address,
// so that a UDP flow DNATed to this pod does not stick to the address
// after the pod is gone (CNI portmap does the same). Best effort: without
// nf_conntrack_netlink there is nothing to drop from here, and stale
// entries expire by themselves.
func forgetConntrack(ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	for _, typ := range []netlink.ConntrackFilterType{netlink.ConntrackOrigDstIP, netlink.ConntrackReplySrcIP} {
		f := &netlink.ConntrackFilter{}
		if f.AddIP(typ, a.AsSlice()) == nil {
			_, _ = netlink.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, f)
		}
	}
}
