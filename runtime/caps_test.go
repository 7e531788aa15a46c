package runtime

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/sys/capability"
)

// A privileged container gets the capabilities podrun holds, as containerd's
// oci.WithAllCurrentCapabilities gives it containerd's own.
func TestPrivilegedGetsTheCurrentCapabilities(t *testing.T) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	var eff uint64
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var want []string
	known, err := capability.ListSupported()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range known {
		if eff&(1<<uint(c)) != 0 {
			want = append(want, "CAP_"+strings.ToUpper(c.String()))
		}
	}
	got := capabilities(true, nil, nil)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("privileged capabilities %v, want the effective set %v", got, want)
	}
	// "ALL" in add is the same set.
	all := capabilities(false, []string{"ALL"}, nil)
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Fatalf("add ALL gives %v, want %v", all, want)
	}
}
