package imageref

import (
	_ "crypto/sha512" // go-digest knows sha384 and sha512 when linked, as in the CLI
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// TestMatchesDistributionReference holds ParseNormalized and IsIdentifier to
// the library whose grammar they copy, accepted and refused alike.
func TestMatchesDistributionReference(t *testing.T) {
	hex64 := strings.Repeat("a1", 32)
	for _, s := range []string{
		"busybox", "busybox:1.28", "library/busybox", "docker.io/library/busybox:latest",
		"localhost:5000/a/b:v1", "127.0.0.1:5000/x", "[::1]:5000/x:t", "Example.com/x",
		"quay.io/org/img@sha256:" + hex64, "img:tag@sha256:" + hex64,
		"img@sha384:" + strings.Repeat("0f", 48), "img@sha512:" + strings.Repeat("9e", 64),
		"img@sha256:" + strings.ToUpper(hex64), "img@sha256:abc", "img@md5:" + hex64,
		"img@sha256:" + hex64 + "0", hex64, strings.ToUpper(hex64), hex64[:63], strings.Repeat("g", 64),
		"UPPER/case", "a/B", "a..b", "a__b", "a---b", "-a", "a:", ":t", "a:" + strings.Repeat("t", 129),
		"a/" + strings.Repeat("b", 260), "", "a b", "a@", "a:tag:tag",
	} {
		want, werr := reference.ParseNormalizedNamed(s)
		got, gerr := ParseNormalized(s)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("ParseNormalized(%q): error %v, distribution/reference's %v", s, gerr, werr)
			continue
		}
		if werr == nil && got.String() != want.String() {
			t.Errorf("ParseNormalized(%q) = %s, distribution/reference's %s", s, got, want)
		}
		if id := reference.IdentifierRegexp.MatchString(s) && len(s) == 64; IsIdentifier(s) != id {
			t.Errorf("IsIdentifier(%q) = %v, want %v", s, IsIdentifier(s), id)
		}
	}
}
