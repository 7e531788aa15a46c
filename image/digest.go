package image

import (
	"fmt"
	"strings"
)

// ImageConfig is the OCI image configuration's config object
// (github.com/opencontainers/image-spec/specs-go/v1.ImageConfig, field for
// field, so that one converts to the other): the store's read side keeps it
// without linking image-spec and go-digest, whose digest regexps would be
// compiled at the start of every container's init.
type ImageConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Volumes      map[string]struct{} `json:"Volumes,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
	StopSignal   string              `json:"StopSignal,omitempty"`
	ArgsEscaped  bool                `json:"ArgsEscaped,omitempty"`
}

// digestLengths are the hex lengths of the algorithms go-digest knows.
var digestLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// parseDigest splits "algorithm:hex" as go-digest's Digest.Validate accepts it
// (a known algorithm and its number of lower-case hex digits), returning the
// algorithm and the hex part; a string of the store's index is never trusted
// to be a path.
func parseDigest(s string) (algorithm, encoded string, err error) {
	algorithm, encoded, ok := strings.Cut(s, ":")
	if !ok || algorithm == "" || encoded == "" {
		return "", "", fmt.Errorf("invalid checksum digest format")
	}
	n, known := digestLengths[algorithm]
	if !known {
		return "", "", fmt.Errorf("unsupported digest algorithm")
	}
	if len(encoded) != n || strings.Trim(encoded, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("invalid checksum digest length or characters")
	}
	return algorithm, encoded, nil
}
