package image

import (
	"fmt"
	"strings"

	"github.com/podrun/podrun/internal/imageref"
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

// parseName parses and normalises an image reference with the grammar
// go.podman.io/image's docker/reference copies from distribution/reference
// (internal/imageref, compiled on first use), so that the store's read side
// (podrun-shim) links none of go.podman.io/image. A name alone gets the tag
// "latest" (reference.TagNameOnly).
func parseName(ref string) (imageref.Ref, error) {
	if strings.TrimSpace(ref) == "" {
		return imageref.Ref{}, fmt.Errorf("invalid image name %q: empty", ref)
	}
	named, err := imageref.ParseNormalized(ref)
	if err != nil {
		return imageref.Ref{}, fmt.Errorf("invalid image name %q: %w", ref, err)
	}
	if named.Tag == "" && named.Digest == "" {
		named.Tag = "latest"
	}
	return named, nil
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
