package podspec

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ImagePullPolicyFor is the pull policy the API server gives a container that
// names none (SetDefaults_Container): Always when the reference's tag is
// "latest" — given or implied by an untagged, undigested name — and
// IfNotPresent otherwise, including for digests and for references that do
// not parse.
func ImagePullPolicyFor(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// The grammar of github.com/distribution/reference, which the kubelet's
// parsers.ParseImageName uses.
var (
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

	referenceRegexp  = regexp.MustCompile(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	identifierRegexp = regexp.MustCompile(`^[a-f0-9]{64}$`)
	digestHex        = map[string]*regexp.Regexp{
		"sha256": regexp.MustCompile(`^[a-f0-9]{64}$`),
		"sha384": regexp.MustCompile(`^[a-f0-9]{96}$`),
		"sha512": regexp.MustCompile(`^[a-f0-9]{128}$`),
	}
)

// imageTag returns the tag of an image reference as parsers.ParseImageName
// does: the given tag, "latest" when there is neither tag nor digest, "" when
// there is only a digest or the reference is invalid.
func imageTag(image string) string {
	if identifierRegexp.MatchString(image) {
		return ""
	}
	domain, remainder := splitDockerDomain(image)
	remote := remainder
	if i := strings.IndexRune(remainder, ':'); i > -1 {
		remote = remainder[:i]
	}
	if strings.ToLower(remote) != remote {
		return ""
	}
	m := referenceRegexp.FindStringSubmatch(domain + "/" + remainder)
	if m == nil || len(m[1]) > 255 {
		return ""
	}
	tag, digest := m[2], m[3]
	if digest != "" {
		alg, hex, _ := strings.Cut(digest, ":")
		re, ok := digestHex[alg]
		if !ok || !re.MatchString(hex) {
			return ""
		}
	}
	if tag == "" && digest == "" {
		return "latest"
	}
	return tag
}

// splitDockerDomain mirrors distribution/reference: the first path element is
// a registry when it is "localhost", contains "." or ":", or has upper case.
func splitDockerDomain(name string) (domain, remote string) {
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
