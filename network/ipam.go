package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"

	"github.com/podrun/podrun/internal/atomicfile"
	"github.com/podrun/podrun/internal/lockwait"
)

// podState is what Setup records about a pod, in <StateDir>/pods/<podID>.json.
// Its existence is the pod's IP reservation.
type podState struct {
	PodID     string `json:"podID"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// BootID is the kernel's boot_id when the address was allocated; after
	// a reboot the netns, veth and rules are gone and the address is free.
	BootID      string   `json:"bootID"`
	IP          string   `json:"ip"`
	Gateway     string   `json:"gateway"`
	Subnet      string   `json:"subnet"`
	Bridge      string   `json:"bridge"`
	Table       string   `json:"nftTable"`
	NetNSPath   string   `json:"netnsPath"`
	HostVeth    string   `json:"hostVeth"`
	Ports       []port   `json:"ports,omitempty"`
	RuleHandles []uint64 `json:"nftRuleHandles,omitempty"`
	// Complete is set once Setup finished; a false value after Setup
	// returned means a crash mid-way.
	Complete bool `json:"complete"`
}

type stateLock struct{ fl *flock.Flock }

// lockState takes the StateDir's lock, waiting for other podrun processes.
func lockState(ctx context.Context, stateDir string) (*stateLock, error) {
	// A context that has already ended must not leave a goroutine creating the lock file behind.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting for the network state lock %s: %w", stateDir, err)
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "pods"), 0o700); err != nil {
		return nil, fmt.Errorf("creating network state directory: %w", err)
	}
	fl := flock.New(filepath.Join(stateDir, "lock"), flock.SetPermissions(0o600))
	// A blocking flock queues waiters in the kernel, which is fairer than
	// polling when many `podrun apply` run at once; ctx still bounds the wait.
	done := make(chan error, 1)
	go func() { done <- fl.Lock() }()
	defer lockwait.Notice(fl.Path())()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("locking network state %s: %w", stateDir, err)
		}
		return &stateLock{fl: fl}, nil
	case <-ctx.Done():
		go func() {
			if err := <-done; err == nil {
				_ = fl.Close()
			}
		}()
		return nil, fmt.Errorf("waiting for the network state lock %s: %w", stateDir, ctx.Err())
	}
}

func (l *stateLock) unlock() { _ = l.fl.Close() }

func statePath(stateDir, podID string) string {
	return filepath.Join(stateDir, "pods", podID+".json")
}

// writeState writes the pod's state atomically (temporary file, fsync, rename).
func writeState(stateDir string, st *podState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding network state of pod %s: %w", st.PodID, err)
	}
	return writeFileAtomic(statePath(stateDir, st.PodID), data)
}

// writeFileAtomic replaces path by a rename, without fsync: every record
// here is of one boot (podState.BootID, and last-ip is only where the next
// search starts), so none must outlive a host crash, and a process crash
// loses nothing of the page cache. An fsync here waited for the journal's
// commit of everything apply had just written: up to 17 ms on the sandbox's
// path. What a host crash cut short is an earlier boot's (readState).
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.Replace(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// readState returns the pod's recorded state, or nil when there is none.
func readState(stateDir, podID string) (*podState, error) {
	data, err := os.ReadFile(statePath(stateDir, podID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading network state of pod %s: %w", podID, err)
	}
	var st podState
	if err := json.Unmarshal(data, &st); err != nil {
		if earlierBoot(statePath(stateDir, podID)) {
			// Written without fsync, cut short by the host's crash: that
			// boot's address is free.
			return nil, nil
		}
		return nil, fmt.Errorf("reading network state of pod %s: %s: %w", podID, statePath(stateDir, podID), err)
	}
	return &st, nil
}

func removeState(stateDir, podID string) error {
	if err := os.Remove(statePath(stateDir, podID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("releasing IP of pod %s: %w", podID, err)
	}
	return nil
}

// loadStates reads every pod state file in the StateDir.
func loadStates(stateDir string) ([]*podState, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading network state: %w", err)
	}
	var out []*podState
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		st, err := readState(stateDir, strings.TrimSuffix(name, ".json"))
		if err != nil {
			return nil, err
		}
		if st != nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// lastIPPath records the last address handed out, so addresses are reused
// round-robin (as CNI host-local does) rather than immediately.
func lastIPPath(stateDir string) string { return filepath.Join(stateDir, "last-ip") }

// allocateIP picks a free address in the subnet: not the network address,
// the gateway or the broadcast address, and not held by a pod of this boot.
func allocateIP(r resolved, states []*podState, bootID string) (netip.Addr, error) {
	used := map[netip.Addr]bool{}
	for _, st := range states {
		if st.BootID != bootID {
			continue
		}
		if a, err := netip.ParseAddr(st.IP); err == nil {
			used[a] = true
		}
	}
	first := r.gateway.Next()
	last := lastAddr(r.subnet).Prev() // skip broadcast
	start := first
	if data, err := os.ReadFile(lastIPPath(r.stateDir)); err == nil {
		if a, err := netip.ParseAddr(strings.TrimSpace(string(data))); err == nil && r.subnet.Contains(a) && a.Compare(first) >= 0 && a.Compare(last) < 0 {
			start = a.Next()
		}
	}
	a := start
	for {
		if !used[a] {
			if err := writeFileAtomic(lastIPPath(r.stateDir), []byte(a.String()+"\n")); err != nil {
				return netip.Addr{}, err
			}
			return a, nil
		}
		if a == last {
			a = first
		} else {
			a = a.Next()
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("no free IP address left in pod subnet %s (%d pods hold them)", r.subnet, len(used))
		}
	}
}

// lastAddr is the highest address of an IPv4 prefix (its broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := 32 - p.Bits()
	for i := 3; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	return netip.AddrFrom4(b)
}

// earlierBoot reports whether path was last written before this boot of the
// kernel (/proc/stat's btime).
func earlierBoot(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return err == nil && fi.ModTime().Unix() < btime
		}
	}
	return false
}

// currentBootID identifies this boot of the kernel.
func currentBootID() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("reading boot ID: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
