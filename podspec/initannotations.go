package podspec

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The init-container annotations of Kubernetes 1.3–1.7, from before spec.initContainers
// existed. The oldest init-container docs still show them.
const (
	initContainersBetaAnnotation  = "pod.beta.kubernetes.io/init-containers"
	initContainersAlphaAnnotation = "pod.alpha.kubernetes.io/init-containers"
)

// convertInitContainerAnnotations does what the 1.6–1.7 API servers did on decode
// (pkg/api/v1/conversion.go Convert_v1_Pod_To_api_Pod): the beta annotation wins
// over the alpha one, and its JSON list of containers becomes spec.initContainers.
// Unlike those servers it only fills an empty spec.initContainers, so a manifest that
// has both means what Kubernetes ≥ 1.8 makes of it. It returns the annotation it
// honoured ("" for none) and the path and message of a value that is not a container list.
func convertInitContainerAnnotations(meta map[string]string, spec *corev1.PodSpec) (used, badPath, msg string) {
	key := initContainersBetaAnnotation
	value, ok := meta[key]
	if !ok {
		key = initContainersAlphaAnnotation
		if value, ok = meta[key]; !ok {
			return "", "", ""
		}
	}
	if len(spec.InitContainers) > 0 {
		return "", "", ""
	}
	var cs []corev1.Container
	if err := json.Unmarshal([]byte(value), &cs); err != nil {
		return "", "metadata.annotations[" + key + "]", fmt.Sprintf("must be a JSON list of containers: %v", err)
	}
	spec.InitContainers = cs
	return key, "", ""
}

// initAnnotationWarning tells the user that the manifest relies on an annotation that
// Kubernetes ≥ 1.8 ignores, and what to write instead; converted is the annotation the
// loader turned into spec.initContainers ("" when spec.initContainers was already set).
func initAnnotationWarning(pod *corev1.Pod, converted string) (warning, bool) {
	for _, key := range []string{initContainersBetaAnnotation, initContainersAlphaAnnotation} {
		if _, ok := pod.Annotations[key]; !ok {
			continue
		}
		path := "metadata.annotations[" + key + "]"
		if converted == "" {
			return warning{path, "ignored: spec.initContainers is set (Kubernetes ≥ 1.8 ignores this annotation too)"}, true
		}
		return warning{path, "run as spec.initContainers, as Kubernetes 1.6–1.7 did; Kubernetes ≥ 1.8 ignores this annotation " +
			"and would run the pod without its init containers: move them to spec.initContainers " +
			"(`podrun apply --dry-run=client -o yaml` prints the converted pod)"}, true
	}
	return warning{}, false
}
