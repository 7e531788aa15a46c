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

// PodConditionByKubelet reports whether the kubelet owns a pod condition
// type and writes it in every status it sends (kubetypes.PodConditionByKubelet):
// the others, set through the status subresource, it keeps as they are.
func PodConditionByKubelet(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
		corev1.PodReadyToStartContainers, corev1.PodResizePending, corev1.PodResizeInProgress,
		corev1.AllContainersRestarting:
		return true
	}
	return false
}

// ExternalConditions are the pod's conditions set through the status
// subresource (ConditionsFile); none when there is no such file.
func ExternalConditions(paths PodPaths) []corev1.PodCondition {
	var conds []corev1.PodCondition
	if err := ReadJSON(paths.ConditionsFile(), &conds); err != nil {
		return nil
	}
	return conds
}
