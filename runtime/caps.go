package runtime

import (
	"strings"

	"github.com/moby/sys/capability"
)

// allCapabilities lists every capability the running kernel knows.
func allCapabilities() []string {
	var out []string
	caps, err := capability.ListSupported()
	if err != nil {
		caps = capability.ListKnown()
	}
	for _, c := range caps {
		out = append(out, "CAP_"+strings.ToUpper(c.String()))
	}
	return out
}
