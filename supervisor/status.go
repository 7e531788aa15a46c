package supervisor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
)

// Reasons the kubelet reports, which kubectl turns into STATUS strings (the
// words live in store, which every reader of a status shares).
const (
	ReasonPodInitializing   = store.ReasonPodInitializing
	ReasonContainerCreating = store.ReasonContainerCreating
	ReasonCrashLoopBackOff  = store.ReasonCrashLoopBackOff
	ReasonCompleted         = store.ReasonCompleted
	ReasonError             = store.ReasonError
	ReasonOOMKilled         = store.ReasonOOMKilled
	ReasonStartError        = store.ReasonStartError
	ReasonErrImagePull      = store.ReasonErrImagePull
	ReasonImagePullBackOff  = store.ReasonImagePullBackOff
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonDeadlineExceeded  = store.ReasonDeadlineExceeded
)

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func findStatus(statuses []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	return store.FindStatus(statuses, name)
}

// podPhase is the kubelet's getPhase (pkg/kubelet/kubelet_pods.go) with
// ContainerRestartRules and RestartAllContainersOnContainerExits: statuses
// holds init and app container statuses. A terminated container counts as
// restarting when its rules, its restart policy or the pod's restart it, or
// when a RestartAllContainers reset removed it.
func podPhase(pod *corev1.Pod, statuses []corev1.ContainerStatus, podIsTerminal, podHasInitialized bool) corev1.PodPhase {
	spec := pod.Spec
	restartable := func(c *corev1.Container, t *corev1.ContainerStateTerminated) bool {
		return containerShouldRestart(c, &spec, t.ExitCode) || t.Reason == ReasonRestartingAllContainers
	}
	pendingRestartableInit, pendingRegularInit, failedInitNotRestartable := 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isSidecar(c) {
			continue
		}
		st, ok := findStatus(statuses, c.Name)
		var failed *corev1.ContainerStateTerminated
		switch {
		case !ok:
			pendingRegularInit++
		case st.State.Running != nil:
			pendingRegularInit++
		case st.State.Terminated != nil:
			failed = st.State.Terminated
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated != nil {
				failed = st.LastTerminationState.Terminated
			} else {
				pendingRegularInit++
			}
		default:
			pendingRegularInit++
		}
		if failed != nil && failed.ExitCode != 0 && !restartable(c, failed) {
			failedInitNotRestartable++
		}
	}
	unknown, running, waiting, stopped, stoppedNotRestartable, succeeded := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isSidecar(c) {
			continue
		}
		st, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown++
		case st.State.Running != nil:
			if st.Started == nil || !*st.Started {
				pendingRestartableInit++
			}
			running++
		case st.State.Terminated != nil:
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated == nil {
				pendingRestartableInit++
				waiting++
			}
		default:
			pendingRestartableInit++
			unknown++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if !restartable(c, st.State.Terminated) {
				stoppedNotRestartable++
			}
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				stopped++
				if !restartable(c, t) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInitNotRestartable > 0 {
		return corev1.PodFailed
	}
	switch {
	case pendingRegularInit > 0 || (pendingRestartableInit > 0 && !podHasInitialized):
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if stopped != stoppedNotRestartable {
			return corev1.PodRunning // at least one is restarting
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	default:
		return corev1.PodPending
	}
}

// What the kubelet reports of a container it cannot account for at the end
// of the pod (kubecontainer.ContainerReasonStatusUnknown).
const (
	reasonStatusUnknown  = "ContainerStatusUnknown"
	messageStatusUnknown = "The container could not be located when the pod was terminated"
)

// terminatePod is the status manager's TerminatePod, applied once nothing of
// the pod runs any more: a container without a final state is reported as
// failed (every app container once the pod has initialized; init containers
// up to the last one that was started, and at least the first), and a pod
// still Pending or Running ends Failed, so every pod reaches a terminal phase
// before its record goes.
func terminatePod(pod *corev1.Pod, s *corev1.PodStatus) {
	unknown := func(st *corev1.ContainerStatus) {
		if st.State.Terminated == nil {
			st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: reasonStatusUnknown, Message: messageStatusUnknown,
			}}
		}
	}
	if hasPodInitialized(pod, s) {
		for i := range s.ContainerStatuses {
			unknown(&s.ContainerStatuses[i])
		}
	}
	// initializedContainers: all but the suffix never started.
	started := min(len(s.InitContainerStatuses), 1)
	for i := len(s.InitContainerStatuses) - 1; i >= 0; i-- {
		if st := s.InitContainerStatuses[i]; st.State.Waiting == nil || st.LastTerminationState.Terminated != nil {
			started = i + 1
			break
		}
	}
	for i := range s.InitContainerStatuses[:started] {
		unknown(&s.InitContainerStatuses[i])
	}
	if s.Phase != corev1.PodSucceeded && s.Phase != corev1.PodFailed {
		s.Phase = corev1.PodFailed
	}
}

// hasPodInitialized is the status manager's: an app container has left
// Waiting, or the last init container completed (a sidecar: started).
func hasPodInitialized(pod *corev1.Pod, s *corev1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, st := range s.ContainerStatuses {
		if st.LastTerminationState.Terminated != nil || st.State.Waiting == nil {
			return true
		}
	}
	last := &pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1]
	st, ok := findStatus(s.InitContainerStatuses, last.Name)
	switch {
	case !ok:
		return false
	case isSidecar(last):
		return st.State.Running != nil && st.Started != nil && *st.Started
	}
	for _, t := range []*corev1.ContainerStateTerminated{st.LastTerminationState.Terminated, st.State.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// hasAnyRegularContainerStarted: once an app container has run, the pod counts as initialized.
func hasAnyRegularContainerStarted(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	for i := range pod.Spec.Containers {
		st, ok := findStatus(statuses, pod.Spec.Containers[i].Name)
		if ok && (st.State.Running != nil || st.State.Terminated != nil) {
			return true
		}
	}
	return false
}

func condition(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
	if ok {
		c.Status = corev1.ConditionTrue
	}
	return c
}

// initializedCondition is the kubelet's GeneratePodInitializedCondition.
func initializedCondition(pod *corev1.Pod, old []corev1.PodCondition, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st, ok := findStatus(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if isSidecar(c) {
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, c.Name)
			}
		} else if !st.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		return condition(corev1.PodInitialized, true, "PodCompleted", "")
	}
	if hasAnyRegularContainerStarted(pod, statuses) {
		return condition(corev1.PodInitialized, true, "", "")
	}
	if msg := pendingMessage(unknown, "incomplete", incomplete); msg != "" {
		// Once initialized, a pod stays so while its init containers run
		// again (GeneratePodInitializedCondition with RestartAllContainersOnContainerExits).
		for _, o := range old {
			if o.Type == corev1.PodInitialized && o.Status == corev1.ConditionTrue {
				return condition(corev1.PodInitialized, true, "", "")
			}
		}
		return condition(corev1.PodInitialized, false, "ContainersNotInitialized", msg)
	}
	return condition(corev1.PodInitialized, true, "", "")
}

// pendingMessage is the kubelet's condition message: "containers with unknown
// status: [a], containers with <state> status: [b c]" ("" when both are empty).
func pendingMessage(unknown []string, state string, names []string) string {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", listString(unknown)))
	}
	if len(names) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", state, listString(names)))
	}
	return strings.Join(msgs, ", ")
}

// listString formats names as Go's %s formats a []string: [a b].
func listString(names []string) string { return "[" + strings.Join(names, " ") + "]" }

// ReasonReadinessGatesNotReady is the Ready condition's reason while a
// readiness gate's condition is missing or not True.
const ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"

// readyCondition is the kubelet's GeneratePodReadyCondition: ContainersReady,
// and then every readiness gate's condition (set through the status
// subresource) True.
func readyCondition(pod *corev1.Pod, containersReady corev1.PodCondition, conds []corev1.PodCondition) corev1.PodCondition {
	ready := containersReady
	ready.Type = corev1.PodReady
	if ready.Status != corev1.ConditionTrue {
		return ready
	}
	var unready []string
	for _, rg := range pod.Spec.ReadinessGates {
		var c *corev1.PodCondition
		for i := range conds {
			if conds[i].Type == rg.ConditionType {
				c = &conds[i]
			}
		}
		switch {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		case c.Status != corev1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	if len(unready) > 0 {
		return condition(corev1.PodReady, false, ReasonReadinessGatesNotReady, strings.Join(unready, ", "))
	}
	return ready
}

// containersReadyCondition is the kubelet's GenerateContainersReadyCondition.
func containersReadyCondition(pod *corev1.Pod, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	var unknown, unready []string
	check := func(c *corev1.Container) {
		st, ok := findStatus(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
		} else if !st.Ready {
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		return condition(corev1.ContainersReady, false, "PodCompleted", "")
	}
	if phase == corev1.PodFailed {
		return condition(corev1.ContainersReady, false, "PodFailed", "")
	}
	if msg := pendingMessage(unknown, "unready", unready); msg != "" {
		return condition(corev1.ContainersReady, false, "ContainersNotReady", msg)
	}
	return condition(corev1.ContainersReady, true, "", "")
}

// allContainersRestartingCondition is the kubelet's
// GenerateAllContainersRestartingCondition: True while a RestartAllContainers
// reset removes the pod's containers.
func allContainersRestartingCondition(phase corev1.PodPhase, resettingAll bool) corev1.PodCondition {
	switch {
	case phase == corev1.PodSucceeded:
		return condition(corev1.AllContainersRestarting, false, "PodCompleted", "")
	case phase == corev1.PodFailed:
		return condition(corev1.AllContainersRestarting, false, "PodFailed", "")
	case resettingAll:
		return condition(corev1.AllContainersRestarting, true, reasonRestartAllStarted, messageRestartAllStarted)
	}
	return condition(corev1.AllContainersRestarting, false, "", "")
}

// podConditions returns the kubelet-owned conditions in the kubelet's order,
// keeping each condition's lastTransitionTime while its status does not change.
func podConditions(pod *corev1.Pod, old []corev1.PodCondition, statuses []corev1.ContainerStatus, phase corev1.PodPhase, sandboxReady, resettingAll bool, now metav1.Time, external []corev1.PodCondition) []corev1.PodCondition {
	cr := containersReadyCondition(pod, statuses, phase)
	ready := readyCondition(pod, cr, external)
	conds := []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, sandboxReady, "", ""),
		initializedCondition(pod, old, statuses, phase),
		ready,
		cr,
		condition(corev1.PodScheduled, true, "", ""),
	}
	if allContainersCouldRestart(&pod.Spec) {
		conds = append(conds, allContainersRestartingCondition(phase, resettingAll))
	}
	for i := range conds {
		conds[i].LastTransitionTime = now
		for _, o := range old {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	// The conditions set through the status subresource follow, as they
	// were set: the status manager's mergePodStatus keeps those the kubelet
	// does not own.
	for _, c := range external {
		if !store.PodConditionByKubelet(c.Type) {
			conds = append(conds, c)
		}
	}
	return conds
}
