// Package imageref parses image references with the grammar of
// github.com/distribution/reference (which the kubelet's
// parsers.ParseImageName and go.podman.io/image's docker/reference share),
// compiling its one regular expression on first use: podspec and the image
// store's read side are linked into podrun-shim, the container init, whose
// start must not pay for them.
package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The grammar of github.com/distribution/reference (regexp.go).
const (
	refAlnum      = `[a-z0-9]+`
	refSeparator  = `(?:[._]|__|[-]+)`
	refPathComp   = refAlnum + `(?:` + refSeparator + refAlnum + `)*`
	refDomainComp = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refDomainName = refDomainComp + `(?:\.` + refDomainComp + `)*`
	refHost       = `(?:` + refDomainName + `|\[(?:[a-fA-F0-9:]+)\])`
	refDomain     = refHost + `(?::[0-9]+)?`
	refName       = `(?:` + refDomain + `/)?` + refPathComp + `(?:/` + refPathComp + `)*`
	refTag        = `[\w][\w.-]{0,127}`
	refDigest     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
)

// referenceRegexp is the anchored reference grammar, compiled on first use: the
// only expression here (the hex checks need none), and the costly one.
var referenceRegexp = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
})

// digestHexLen is the hex length of each digest algorithm go-digest knows.
var digestHexLen = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// isLowerHex reports whether s is n characters of [a-f0-9], what
// distribution/reference's anchored `[a-f0-9]{n}` matches.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Warm compiles the reference grammar now, for a process that parses
// references soon and is idle until then.
func Warm() { referenceRegexp() }

// ErrFormat is distribution/reference's ErrReferenceInvalidFormat.
var ErrFormat = errors.New("invalid reference format")

// Ref is a parsed reference: Name is domain/path, fully qualified.
type Ref struct {
	Name, Tag, Digest string
}

// String is the reference as distribution/reference prints it.
func (r Ref) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// IsIdentifier reports whether s is a 64-character hex image ID.
func IsIdentifier(s string) bool { return isLowerHex(s, 64) }

// ParseNormalized is distribution/reference.ParseNormalizedNamed: docker.io
// and library/ are added as docker does; the tag and digest are kept as given.
func ParseNormalized(s string) (Ref, error) {
	if IsIdentifier(s) {
		return Ref{}, fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s)
	}
	domain, remainder := SplitDockerDomain(s)
	remote := remainder
	if i := strings.IndexRune(remainder, ':'); i > -1 {
		remote = remainder[:i]
	}
	if strings.ToLower(remote) != remote {
		return Ref{}, fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", remote)
	}
	m := referenceRegexp().FindStringSubmatch(domain + "/" + remainder)
	if m == nil {
		return Ref{}, ErrFormat
	}
	if len(m[1]) > 255 {
		return Ref{}, errors.New("repository name must not be more than 255 characters")
	}
	if m[3] != "" {
		alg, hex, _ := strings.Cut(m[3], ":")
		n, ok := digestHexLen[alg]
		if !ok {
			return Ref{}, errors.New("unsupported digest algorithm")
		}
		if !isLowerHex(hex, n) {
			return Ref{}, errors.New("invalid checksum digest format")
		}
	}
	return Ref{Name: m[1], Tag: m[2], Digest: m[3]}, nil
}

// SplitDockerDomain mirrors distribution/reference: the first path element is
// a registry when it is "localhost", contains "." or ":", or has upper case.
func SplitDockerDomain(name string) (domain, remote string) {
	const defaultDomain, officialRepoPrefix = "docker.io", "library/"
	first, rest, ok := strings.Cut(name, "/")
	if !ok {
		return defaultDomain, officialRepoPrefix + name
	}
	switch {
	case first == "localhost":
		domain, remote = first, rest
	case first == "index.docker.io":
		domain, remote = defaultDomain, rest
	case strings.ContainsAny(first, ".:"):
		domain, remote = first, rest
	case strings.ToLower(first) != first:
		domain, remote = first, rest
	default:
		domain, remote = defaultDomain, name
	}
	if domain == defaultDomain && !strings.ContainsRune(remote, '/') {
		remote = officialRepoPrefix + remote
	}
	return domain, remote
}
