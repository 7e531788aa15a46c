package network

import (
	"reflect"
	"testing"
)

func TestSplitRuleKeepsQuotedComments(t *testing.T) {
	got := splitRule(`-A FORWARD -m comment --comment "podrun firewall rules" -j PODRUN-FORWARD`)
	want := []string{"-A", "FORWARD", "-m", "comment", "--comment", "podrun firewall rules", "-j", "PODRUN-FORWARD"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitRule = %q, want %q", got, want)
	}
}

func TestForwardChainNamesFitIptables(t *testing.T) {
	// iptables chain names hold at most 28 characters; bridge names 15.
	for _, br := range []string{DefaultBridge, "abcdefghijklmno"} {
		if n := forwardChain(br); len(n) > 28 {
			t.Errorf("chain %q for bridge %q is longer than 28", n, br)
		}
	}
	if forwardChain(DefaultBridge) != "PODRUN-FORWARD" {
		t.Errorf("default chain %q", forwardChain(DefaultBridge))
	}
}

func TestForwardFiltering(t *testing.T) {
	for _, c := range []struct {
		st   ForwardState
		want bool
	}{
		{ForwardState{}, false},
		{ForwardState{Policy: "ACCEPT"}, false},
		{ForwardState{Policy: "DROP"}, true},
		{ForwardState{Policy: "ACCEPT", Rules: 2}, true},
	} {
		if got := c.st.Filtering(); got != c.want {
			t.Errorf("%+v.Filtering() = %v, want %v", c.st, got, c.want)
		}
	}
}
