package runtime

import (
	"strings"

	"github.com/moby/sys/capability"
)

// allCapabilities is what a privileged container gets and what "ALL" adds:
// as containerd's CRI plugin (its allCaps, cap.Current, through
// oci.WithAllCurrentCapabilities), the capabilities podrun itself has in its
// effective set, not every capability the kernel knows: where podrun runs
// without one (root in a container or sandbox often lacks CAP_SYS_RESOURCE),
// asking for it would fail the container's start.
func allCapabilities() []string {
	var out []string
	caps, err := capability.ListSupported()
	if err != nil {
		caps = capability.ListKnown()
	}
	cur, err := capability.NewPid2(0)
	if err == nil {
		err = cur.Load()
	}
	for _, c := range caps {
		if err == nil && !cur.Get(capability.EFFECTIVE, c) {
			continue
		}
		out = append(out, "CAP_"+strings.ToUpper(c.String()))
	}
	return out
}
