package serviceowner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/podrun/podrun/network"
)

// A resync with the ports last written runs no nft process while the table
// is there; a table deleted behind the owner's back, a change of the ports or
// a failed check write the rules again.
func TestSyncRulesSkipsUnchanged(t *testing.T) {
	writes, exists, existsErr := 0, true, error(nil)
	o := &Owner{
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		rules:       func(context.Context, []network.ServicePort) error { writes++; return nil },
		tableExists: func() (bool, error) { return exists, existsErr },
	}
	ctx := context.Background()
	ports := func(ip string) []network.ServicePort {
		return []network.ServicePort{{Namespace: "default", Name: "web", Protocol: "TCP", ClusterIP: ip, Port: 80,
			Endpoints: []network.ServiceEndpoint{{IP: "10.88.0.5", Port: 8080}}}}
	}
	step := func(what string, p []network.ServicePort, want int) {
		t.Helper()
		if err := o.syncRules(ctx, p); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if writes != want {
			t.Fatalf("%s: %d writes of the rules, want %d", what, writes, want)
		}
	}
	step("first sync", ports("10.96.0.20"), 1)
	step("same ports", ports("10.96.0.20"), 1)
	step("same ports again", ports("10.96.0.20"), 1)
	exists = false
	step("table deleted", ports("10.96.0.20"), 2)
	exists = true
	step("restored, unchanged", ports("10.96.0.20"), 2)
	step("ports changed", ports("10.96.0.21"), 3)
	existsErr = errors.New("netlink: no")
	step("check failed", ports("10.96.0.21"), 4)
	existsErr = nil

	// A failed write is retried by the next sync even with the same ports.
	fail := true
	o.rules = func(context.Context, []network.ServicePort) error {
		writes++
		if fail {
			return errors.New("nft: no")
		}
		return nil
	}
	if err := o.syncRules(ctx, ports("10.96.0.22")); err == nil {
		t.Fatal("a failed write reported no error")
	}
	fail = false
	step("after a failed write", ports("10.96.0.22"), 6)
	step("then unchanged", ports("10.96.0.22"), 6)

	// No ports with a ClusterIP: the write deletes the table, and a resync
	// that finds it absent leaves it so; one that finds a table (left by a
	// crashed owner, or made behind this one's back) deletes it again.
	exists = false
	step("no Services", nil, 7)
	step("no Services, table absent", nil, 7)
	step("no Services again", nil, 7)
	exists = true
	step("no Services, a table found", nil, 8)
	exists = false
	headless := []network.ServicePort{{Namespace: "default", Name: "db", Protocol: "TCP", Port: 5432}}
	step("a headless Service", headless, 9)
	step("the headless Service unchanged", headless, 9)
}
