package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"

	"github.com/podrun/podrun/store"
)

// Pods with hostUsers: false get distinct blocks of 65536 host IDs, keep
// theirs across attempts, and a block whose pod is gone is taken back.
func TestAllocateUserNS(t *testing.T) {
	l := store.Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	pod := func(uid string) store.PodPaths {
		p := l.Pod("default", uid, uid)
		if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, _ := usernsRange()
	a, b := pod("a"), pod("b")
	ba, err := allocateUserNS(l, a, "a")
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := allocateUserNS(l, b, "b")
	if again, _ := allocateUserNS(l, a, "a"); again != ba {
		t.Errorf("a pod's second attempt got %d, its block is %d", again, ba)
	}
	if uint64(ba) != first || uint64(bb) != first+usernsLength {
		t.Errorf("blocks %d and %d, want %d and %d", ba, bb, first, first+usernsLength)
	}
	// a removed: its block is the next pod's.
	ReleaseUserNS(l, a)
	if bc, _ := allocateUserNS(l, pod("c"), "c"); bc != ba {
		t.Errorf("after a's release the next pod got %d, want %d", bc, ba)
	}
	// b's run directory gone without a release (a cut-short removal).
	if err := os.RemoveAll(b.RunDir); err != nil {
		t.Fatal(err)
	}
	if bd, _ := allocateUserNS(l, pod("d"), "d"); bd != bb {
		t.Errorf("a block whose pod is gone was not taken back: got %d, want %d", bd, bb)
	}
	if n, _ := os.ReadDir(filepath.Join(l.RunRoot, "userns")); len(n) != 2 {
		t.Errorf("%d blocks held by 2 pods", len(n))
	}
}

// A container of a pod with hostUsers: false has a new user namespace with
// the pod's mapping, no hostname of its own (the pinned UTS namespace has
// it), the pod's mqueue and the host's /sys bound instead of mounted.
func TestUserNSSpec(t *testing.T) {
	cfg := &containerConfig{ID: "c1", Rootfs: t.TempDir(), Args: []string{"true"}, Cwd: "/", Hostname: "p",
		NetNS: "/run/netns/x", UTSNS: "/ns/uts", IPCNS: "/ns/ipc", UserNSBase: 131072, MqueueDir: "/ns/mqueue"}
	s := cfg.spec()
	lc, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{CgroupName: "c1", Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if !lc.Namespaces.Contains(configs.NEWUSER) || lc.Namespaces.PathOf(configs.NEWUSER) != "" {
		t.Errorf("no new user namespace: %+v", lc.Namespaces)
	}
	if lc.Namespaces.PathOf(configs.NEWUTS) != "/ns/uts" || lc.Hostname != "" {
		t.Errorf("UTS %q hostname %q: want the pod's namespace joined and no hostname set", lc.Namespaces.PathOf(configs.NEWUTS), lc.Hostname)
	}
	if len(lc.UIDMappings) != 1 || lc.UIDMappings[0].HostID != 131072 || lc.UIDMappings[0].Size != 65536 || len(lc.GIDMappings) != 1 {
		t.Errorf("mappings %+v %+v", lc.UIDMappings, lc.GIDMappings)
	}
	for _, m := range s.Mounts {
		switch m.Destination {
		case "/dev/mqueue":
			if m.Type != "bind" || m.Source != "/ns/mqueue" {
				t.Errorf("/dev/mqueue: %+v", m)
			}
		case "/sys":
			if m.Type != "bind" || m.Source != "/sys" {
				t.Errorf("/sys: %+v", m)
			}
		}
	}
}
