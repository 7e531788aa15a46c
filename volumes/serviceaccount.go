package volumes

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// ServiceAccountMountPath is where the API server's ServiceAccount admission
// plugin mounts the service-account volume in every container
// (DefaultAPITokenMountPath in plugin/pkg/admission/serviceaccount).
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// serviceAccountDir is the directory of the service-account volume under
// <podDir>/volumes. The underscore keeps it apart from every user volume,
// whose names are DNS labels.
const serviceAccountDir = "_serviceaccount"

// serviceAccountVolumeName names the volume in messages, as the admission
// plugin's kube-api-access-<random> volume.
const serviceAccountVolumeName = "kube-api-access"

// AutomountServiceAccount reports whether the pod gets the service-account
// volume: the admission plugin's shouldAutomount, where podrun's only service
// account ("default", or whichever the pod names) does not opt out, so the
// pod's automountServiceAccountToken decides.
func AutomountServiceAccount(pod *corev1.Pod) bool {
	return pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken
}

// serviceAccountSource is the part of the admission plugin's kube-api-access
// projected volume that podrun can give real meaning: the namespace file
// (downwardAPI metadata.namespace). The token (serviceAccountToken) and
// ca.crt (the kube-root-ca.crt ConfigMap) need an API server, which podrun
// does not have.
func serviceAccountSource() *corev1.ProjectedVolumeSource {
	mode := int32(0o644) // the admission plugin's DefaultMode 420
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{{
			DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}},
		}},
	}
}

// setupServiceAccount builds the service-account volume (a memory-backed
// projected volume, as the kubelet builds kube-api-access) unless the pod
// opts out. created collects the directory if this call made it.
func (b *builder) setupServiceAccount(s *Set, volumesDir string, created *[]string) error {
	if !AutomountServiceAccount(b.pod) {
		return nil
	}
	dir := filepath.Join(volumesDir, serviceAccountDir)
	if !pathExists(dir) {
		*created = append(*created, dir)
	}
	vol := &Volume{Name: serviceAccountVolumeName, Kind: KindProjected, Path: dir, ReadOnly: true, Medium: corev1.StorageMediumMemory}
	if err := b.setupProjected(vol, serviceAccountSource()); err != nil {
		return err
	}
	s.serviceAccount = vol
	return nil
}

// serviceAccountMounts is the read-only mount the admission plugin adds to
// every container (init containers included) that does not already mount
// something at ServiceAccountMountPath.
func (s *Set) serviceAccountMounts(c *corev1.Container) []Mount {
	if s.serviceAccount == nil {
		return nil
	}
	for _, vm := range c.VolumeMounts {
		if filepath.Clean(vm.MountPath) == ServiceAccountMountPath {
			return nil
		}
	}
	return []Mount{{
		Name:        s.serviceAccount.Name,
		Source:      s.serviceAccount.Path,
		Destination: ServiceAccountMountPath,
		ReadOnly:    true,
		Propagation: "rprivate",
	}}
}
