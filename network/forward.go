package network

// Hosts whose iptables FORWARD chain drops by default (Docker sets the policy
// to DROP when it turns forwarding on; firewalld and ufw end the chain with a
// reject) drop pod traffic routed or bridged through the host: pod to pod
// once br_netfilter passes bridged frames through iptables, pod egress, and
// connections DNATed to a hostPort. podrun then does what CNI's firewall
// plugin (plugins/meta/firewall/iptables.go: a CNI-FORWARD chain jumped to
// from the top of FORWARD) and netavark (NETAVARK_FORWARD, in
// src/firewall/varktables) do: a chain of its own in the filter table,
//
//	-I FORWARD 1 -m comment --comment "podrun firewall rules" -j PODRUN-FORWARD
//	-A PODRUN-FORWARD -d SUBNET -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
//	-A PODRUN-FORWARD -s SUBNET -j ACCEPT
//	-A PODRUN-FORWARD -d SUBNET -m conntrack --ctstate DNAT -j ACCEPT
//
// The last rule lets new connections from other hosts reach a published
// hostPort (Docker accepts its published ports in its DOCKER chain likewise).
// The rules are made through the host's own iptables command, so they land
// where the host's FORWARD policy lives, iptables-nft or iptables-legacy,
// and Docker's own iptables calls keep understanding the table. They go with
// the last pod, as the nftables table does.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/google/nftables"
)

const (
	forwardChainDefault = "PODRUN-FORWARD"
	forwardChainPrefix  = "PODRUN-FWD-"
	forwardJumpComment  = "podrun firewall rules"
)

// forwardChain is the iptables chain of a bridge's pods: one per bridge, as
// the nftables table, so podrun instances with their own bridges (and tests)
// never remove each other's rules. iptables chain names hold up to 28
// characters: the prefix and a 15-character interface name fit.
func forwardChain(bridge string) string {
	if bridge == DefaultBridge {
		return forwardChainDefault
	}
	return forwardChainPrefix + bridge
}

// forwardRules are the chain's rules in iptables -S form, without "-A CHAIN".
func forwardRules(subnet string) [][]string {
	return [][]string{
		{"-d", subnet, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"},
		{"-s", subnet, "-j", "ACCEPT"},
		{"-d", subnet, "-m", "conntrack", "--ctstate", "DNAT", "-j", "ACCEPT"},
	}
}

// iptablesCmd finds the host's iptables; "" when it has none (then no
// iptables FORWARD chain can be dropping anything).
func iptablesCmd() string {
	p, err := exec.LookPath("iptables")
	if err != nil {
		return ""
	}
	return p
}

func iptables(bin string, args ...string) (string, error) {
	// -w waits for the xtables lock that other iptables users (Docker) hold.
	cmd := exec.Command(bin, append([]string{"-w", "-t", "filter"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// ForwardState is what the host's iptables FORWARD chain does to pod traffic.
type ForwardState struct {
	Iptables string // the iptables command, "" when the host has none
	Policy   string // ACCEPT, DROP or "" when unknown
	Rules    int    // rules in FORWARD other than podrun's jumps
}

// Filtering reports whether FORWARD can drop pod traffic: a DROP policy or
// rules (a final reject, Docker's isolation chains) podrun must get ahead of.
func (s ForwardState) Filtering() bool {
	return s.Policy != "" && (s.Policy != "ACCEPT" || s.Rules > 0)
}

// filterTable is the iptables filter table as iptables -S prints it.
type filterTable struct {
	policies map[string]string     // built-in chain → policy
	chains   map[string][][]string // chain → its rules, each split into fields after "-A CHAIN"
}

// readFilter reads the whole filter table with one iptables -S. (iptables-nft
// 1.8.9 answers -S of a chain that does not exist with "incompatible", so
// chains are looked up in the table's listing rather than one by one.)
func readFilter(bin string) (filterTable, error) {
	t := filterTable{policies: map[string]string{}, chains: map[string][][]string{}}
	out, err := iptables(bin, "-S")
	if err != nil {
		return t, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := splitRule(line)
		switch {
		case len(f) >= 3 && f[0] == "-P":
			t.policies[f[1]] = f[2]
			if _, ok := t.chains[f[1]]; !ok {
				t.chains[f[1]] = nil
			}
		case len(f) >= 2 && f[0] == "-N":
			if _, ok := t.chains[f[1]]; !ok {
				t.chains[f[1]] = nil
			}
		case len(f) >= 2 && f[0] == "-A":
			t.chains[f[1]] = append(t.chains[f[1]], f[2:])
		}
	}
	return t, nil
}

// jumpsTo lists FORWARD's rules that jump to chain.
func (t filterTable) jumpsTo(chain string) [][]string {
	var out [][]string
	for _, f := range t.chains["FORWARD"] {
		if len(f) >= 2 && f[len(f)-2] == "-j" && f[len(f)-1] == chain {
			out = append(out, f)
		}
	}
	return out
}

// ReadForward reads the iptables FORWARD chain of the current network namespace.
func ReadForward() (ForwardState, error) {
	st := ForwardState{Iptables: iptablesCmd()}
	if st.Iptables == "" {
		return st, nil
	}
	t, err := readFilter(st.Iptables)
	if err != nil {
		return st, err
	}
	st.Policy = t.policies["FORWARD"]
	for _, f := range t.chains["FORWARD"] {
		if !isPodrunJump(f) {
			st.Rules++
		}
	}
	return st, nil
}

func isPodrunJump(f []string) bool {
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "-j" && (f[i+1] == forwardChainDefault || strings.HasPrefix(f[i+1], forwardChainPrefix)) {
			return true
		}
	}
	return false
}

// splitRule splits an iptables -S line, keeping a quoted comment whole.
func splitRule(line string) []string {
	var out []string
	for {
		line = strings.TrimSpace(line)
		if line == "" {
			return out
		}
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return append(out, line[1:])
			}
			out = append(out, line[1:end+1])
			line = line[end+2:]
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return append(out, line)
		}
		out = append(out, line[:i])
		line = line[i:]
	}
}

func sameRule(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// ensureForward makes sure the bridge's pods get through a filtering FORWARD
// chain. It does nothing on hosts whose FORWARD chain accepts everything
// (and on hosts without iptables), and is idempotent: with the rules in
// place it costs one iptables -S.
func ensureForward(r resolved) error {
	bin := iptablesCmd()
	if bin == "" || noFilterTable() {
		return nil
	}
	t, err := readFilter(bin)
	if err != nil {
		return err
	}
	st := ForwardState{Iptables: bin, Policy: t.policies["FORWARD"]}
	for _, f := range t.chains["FORWARD"] {
		if !isPodrunJump(f) {
			st.Rules++
		}
	}
	chain := forwardChain(r.bridge)
	rules, exists := t.chains[chain]
	if !st.Filtering() && !exists {
		return nil
	}
	if !exists {
		if _, err := iptables(bin, "-N", chain); err != nil {
			return err
		}
	}
	want := forwardRules(r.subnet.String())
	match := len(rules) == len(want)
	for i := 0; match && i < len(want); i++ {
		match = sameRule(rules[i], want[i])
	}
	if !match {
		// Another subnet's rules (a changed --subnet), or a partial chain.
		if _, err := iptables(bin, "-F", chain); err != nil {
			return err
		}
		for _, rule := range want {
			if _, err := iptables(bin, append([]string{"-A", chain}, rule...)...); err != nil {
				return err
			}
		}
	}
	if len(t.jumpsTo(chain)) > 0 {
		return nil
	}
	_, err = iptables(bin, "-I", "FORWARD", "1", "-m", "comment", "--comment", forwardJumpComment, "-j", chain)
	return err
}

// noFilterTable reports that neither iptables backend has a filter table
// in this thread's network namespace: iptables-nft keeps it as the nftables
// table "ip filter", iptables-legacy lists it in ip_tables_names. Then no
// iptables FORWARD chain exists to drop pod traffic, nor a chain of podrun's
// to keep, and the pod's network setup is spared an iptables process (its
// costliest step on such hosts). Any doubt answers false.
func noFilterTable() bool {
	data, err := os.ReadFile("/proc/thread-self/net/ip_tables_names")
	if err == nil && len(bytes.TrimSpace(data)) > 0 || err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	c, err := nftables.New()
	if err != nil {
		return false
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return false
	}
	for _, t := range tables {
		if t.Name == "filter" {
			return false
		}
	}
	return true
}

// removeForward removes the bridge's chain and every jump to it.
func removeForward(bridge string) error {
	bin := iptablesCmd()
	if bin == "" || noFilterTable() {
		// No filter table, no chain of podrun's in it: the last pod's
		// delete is spared an iptables process, as ensureForward spares
		// the first pod's start.
		return nil
	}
	t, err := readFilter(bin)
	if err != nil {
		return err
	}
	chain := forwardChain(bridge)
	if _, exists := t.chains[chain]; !exists {
		return nil
	}
	var errs []error
	for _, f := range t.jumpsTo(chain) {
		if _, err := iptables(bin, append([]string{"-D", "FORWARD"}, f...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := iptables(bin, "-F", chain); err != nil {
		errs = append(errs, err)
	}
	if _, err := iptables(bin, "-X", chain); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// forwardLeftovers reports the bridge's chain if it is still there.
func forwardLeftovers(bridge string) ([]string, error) {
	bin := iptablesCmd()
	if bin == "" {
		return nil, nil
	}
	t, err := readFilter(bin)
	if err != nil {
		return nil, err
	}
	chain := forwardChain(bridge)
	if _, exists := t.chains[chain]; !exists {
		return nil, nil
	}
	return []string{"iptables chain filter " + chain}, nil
}

// NftForwardDrops lists the nftables base chains hooked to forward whose
// policy is drop, outside the table iptables-nft manages (ip filter, which
// ReadForward sees through iptables): a native nftables firewall that podrun
// does not open for pods.
func NftForwardDrops() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChains()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ch := range chains {
		if ch.Hooknum == nil || *ch.Hooknum != *nftables.ChainHookForward || ch.Policy == nil || *ch.Policy != nftables.ChainPolicyDrop {
			continue
		}
		if ch.Table.Family == nftables.TableFamilyIPv4 && ch.Table.Name == "filter" {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s", familyName(ch.Table.Family), ch.Table.Name, ch.Name))
	}
	return out, nil
}

func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyBridge:
		return "bridge"
	case nftables.TableFamilyARP:
		return "arp"
	case nftables.TableFamilyNetdev:
		return "netdev"
	}
	return fmt.Sprint(f)
}
