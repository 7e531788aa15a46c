package cgroups

import (
	"testing"

	cg "github.com/opencontainers/cgroups"
)

// The OOM counter is read where the memory controller is: on a hybrid host
// "" names the v2 mount, which has none.
func TestMemoryDir(t *testing.T) {
	paths := map[string]string{"": "/sys/fs/cgroup/unified/x", "memory": "/sys/fs/cgroup/memory/x"}
	want := paths["memory"]
	if cg.IsCgroup2UnifiedMode() {
		want = paths[""]
	}
	if got := MemoryDir(paths); got != want {
		t.Errorf("MemoryDir = %q, want %q", got, want)
	}
}
