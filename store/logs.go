package store

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ContainerNames lists a pod's containers: init containers first, in order,
// then the app containers, then the ephemeral containers.
func ContainerNames(pod *corev1.Pod) (names []string, init map[string]bool) {
	init = map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
		init[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names, init
}

// ContainerStatus returns the status of one of the pod's containers.
func ContainerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	if s, ok := FindStatus(pod.Status.InitContainerStatuses, name); ok {
		return s, true
	}
	if s, ok := FindStatus(pod.Status.ContainerStatuses, name); ok {
		return s, true
	}
	return FindStatus(pod.Status.EphemeralContainerStatuses, name)
}

// LogRun says which run's log `podrun logs` reads, as the kubelet's
// validateContainerLogStatus decides it, and the messages kubectl prints when
// there is none.
func LogRun(pod *corev1.Pod, container string, previous bool) (int32, error) {
	st, ok := ContainerStatus(pod, container)
	if !ok {
		return 0, fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := st.LastTerminationState.Terminated
	switch {
	case previous:
		if st.State.Waiting != nil && last != nil {
			return st.RestartCount, nil
		}
		if last == nil || st.RestartCount == 0 {
			return 0, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return st.RestartCount - 1, nil
	case st.State.Running != nil, st.State.Terminated != nil:
		return st.RestartCount, nil
	case last != nil:
		return st.RestartCount, nil
	case st.State.Waiting != nil:
		switch st.State.Waiting.Reason {
		case ReasonErrImagePull:
			return 0, fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case ReasonImagePullBackOff:
			return 0, fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		}
		return 0, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, st.State.Waiting.Reason)
	}
	return 0, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
}

// LogPath is the log file of one run of a container.
func (r *Record) LogPath(container string, run int32) string {
	return r.Paths.LogFile(container, run)
}

// RunEnded reports whether a container's run has ended (or the pod is gone),
// which ends `podrun logs -f`.
func RunEnded(l Layout, rec *Record, container string, run int32) bool {
	cur, err := rec.Reload(l)
	if err != nil {
		return true
	}
	if SupervisorPid(cur.Paths) == 0 {
		return true // the pod has finished (or its supervisor is gone): nothing more comes
	}
	st, ok := ContainerStatus(cur.Pod, container)
	if !ok {
		return true
	}
	if st.RestartCount != run {
		return st.RestartCount > run
	}
	return st.State.Running == nil && (st.State.Terminated != nil || st.LastTerminationState.Terminated != nil)
}
