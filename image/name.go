package image

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// NormalizeName returns the fully qualified form of an image reference, as Kubernetes and
// docker read it: `busybox` → `docker.io/library/busybox:latest`, `busybox:1.28` →
// `docker.io/library/busybox:1.28`, `quay.io/x/y@sha256:…` unchanged (a digest is kept and
// no tag is added).
func NormalizeName(ref string) (string, error) {
	named, err := parseName(ref)
	if err != nil {
		return "", err
	}
	return named.String(), nil
}

// parseName parses and normalises an image reference with distribution/reference, the
// grammar go.podman.io/image's docker/reference copies, so that the store's read side
// (the supervisor's binary) links none of go.podman.io/image.
func parseName(ref string) (reference.Named, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("invalid image name %q: empty", ref)
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid image name %q: %w", ref, err)
	}
	return reference.TagNameOnly(named), nil
}

// isHex reports whether s is a non-empty lowercase hex string.
func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// shortID is the 12-character form of an image ID that `podrun images` shows.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
