package network

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
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

// inNewNetns runs fn on a thread of its own in a new network namespace.
func inNewNetns(t *testing.T, fn func()) {
	t.Helper()
	requireRoot(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // the thread dies in its namespace: never unlocked
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		fn()
	}()
	<-done
}

// addFilterTable makes iptables-nft's table, "ip filter", in the calling
// thread's network namespace.
func addFilterTable(t *testing.T) bool {
	c, err := nftables.New()
	if err != nil {
		t.Error(err)
		return false
	}
	c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "filter"})
	if err := c.Flush(); err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestNoFilterTable: in a network namespace of its own no iptables filter
// table exists (the setup skips iptables); once iptables-nft's "ip filter"
// table is there, it does not.
func TestNoFilterTable(t *testing.T) {
	inNewNetns(t, func() {
		if !noFilterTable() {
			t.Errorf("a new network namespace has a filter table?")
			return
		}
		if addFilterTable(t) && noFilterTable() {
			t.Errorf("the nftables table ip filter (iptables-nft's) was not seen")
		}
	})
}

// TestRemoveForwardSkipsIptablesWithoutFilterTable: the last pod's delete
// runs no iptables process when no filter table exists; with one, it reads
// it (here a stand-in iptables that records its runs).
func TestRemoveForwardSkipsIptablesWithoutFilterTable(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	if err := os.WriteFile(filepath.Join(dir, "iptables"), []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	ran := func() bool { _, err := os.Stat(marker); return err == nil }
	inNewNetns(t, func() {
		if err := removeForward("prtestbr0"); err != nil || ran() {
			t.Errorf("without a filter table: removeForward = %v, iptables ran: %v", err, ran())
			return
		}
		if !addFilterTable(t) {
			return
		}
		if err := removeForward("prtestbr0"); err != nil || !ran() {
			t.Errorf("with a filter table: removeForward = %v, iptables ran: %v", err, ran())
		}
	})
}
