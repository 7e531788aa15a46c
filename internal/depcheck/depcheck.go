// Package depcheck is for the tests that keep a binary's imports lean: what a
// binary links is what every one of its processes pays for at start (page
// faults of a larger binary, package initialisers before main).
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Tags are the Makefile's build tags (TAGS), without a binary's own.
const Tags = "containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper seccomp"

// Banned fails t for every package the package in the current directory,
// built with tags, links that matches one of banned: a prefix, or with a
// trailing $ that package alone. self (the package under test) is exempt.
func Banned(t *testing.T, tags, self string, banned []string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-tags", tags, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == self {
			continue
		}
		for _, b := range banned {
			exact, ok := strings.CutSuffix(b, "$")
			if ok && pkg == exact || !ok && strings.HasPrefix(pkg, b) {
				t.Errorf("%s links %s", self, pkg)
			}
		}
	}
}
