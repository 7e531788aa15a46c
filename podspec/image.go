package podspec

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/imageref"
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

// imageTag returns the tag of an image reference as parsers.ParseImageName
// does: the given tag, "latest" when there is neither tag nor digest, "" when
// there is only a digest or the reference is invalid.
func imageTag(image string) string {
	if imageref.IsIdentifier(image) {
		return ""
	}
	ref, err := imageref.ParseNormalized(image)
	if err != nil {
		return ""
	}
	if ref.Tag == "" && ref.Digest == "" {
		return "latest"
	}
	return ref.Tag
}
