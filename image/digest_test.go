package image

import (
	_ "crypto/sha512" // go-digest knows sha384 and sha512 only in a binary that links them, as podrun-image does
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
)

// parseDigest accepts exactly what go-digest's Parse accepts for the store's
// algorithms, so that an index entry never becomes a path outside the store.
func TestParseDigestAgreesWithGoDigest(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	for _, s := range []string{
		"sha256:" + hex64, "sha384:" + strings.Repeat("0", 96), "sha512:" + strings.Repeat("f", 128),
		"sha256:" + strings.ToUpper(hex64), "sha256:" + hex64[:63], "sha256:" + hex64 + "0", "sha256:../../../etc",
		"md5:" + hex64[:32], "sha256", ":" + hex64, "sha256:", "", "sha256:" + hex64[:62] + "/x",
	} {
		_, encoded, err := parseDigest(s)
		d, want := digest.Parse(s)
		if (err == nil) != (want == nil) {
			t.Errorf("parseDigest(%q) err = %v, go-digest says %v", s, err, want)
			continue
		}
		if err == nil && encoded != d.Encoded() {
			t.Errorf("parseDigest(%q) = %q, want %q", s, encoded, d.Encoded())
		}
	}
}
