package store

import corev1 "k8s.io/api/core/v1"

// Reasons the kubelet reports, which kubectl turns into STATUS strings.
const (
	ReasonPodInitializing   = "PodInitializing"
	ReasonContainerCreating = "ContainerCreating"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
	ReasonCompleted         = "Completed"
	ReasonError             = "Error"
	ReasonOOMKilled         = "OOMKilled"
	ReasonStartError        = "StartError"
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonDeadlineExceeded  = "DeadlineExceeded"
)

// FindStatus returns the status of the container called name.
func FindStatus(statuses []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// IsTerminal reports whether the pod has finished (Succeeded or Failed).
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
