package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/runtime/logs"
)

// ContainerNames lists a pod's containers: init containers first, in order.
func ContainerNames(pod *corev1.Pod) (names []string, init map[string]bool) {
	init = map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
		init[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names, init
}

func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	if s, ok := findStatus(pod.Status.InitContainerStatuses, name); ok {
		return s, true
	}
	return findStatus(pod.Status.ContainerStatuses, name)
}

// LogRun says which run's log `podrun logs` reads, as the kubelet's
// validateContainerLogStatus decides it, and the messages kubectl prints when
// there is none.
func LogRun(pod *corev1.Pod, container string, previous bool) (int32, error) {
	st, ok := containerStatus(pod, container)
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
	st, ok := containerStatus(cur.Pod, container)
	if !ok {
		return true
	}
	if st.RestartCount != run {
		return st.RestartCount > run
	}
	return st.State.Running == nil && (st.State.Terminated != nil || st.LastTerminationState.Terminated != nil)
}

// logOptions is a container's log rotation policy, with its trouble reported
// as the pod's events (visible in describe): output a full disk cannot take
// is counted, never dropped silently.
func (r *podRunner) logOptions(c *corev1.Container) logs.WriterOptions {
	o := logs.WriterOptions{MaxSize: r.opts.LogMaxSize, MaxFiles: r.opts.LogMaxFiles}
	if o.MaxSize == 0 {
		o.MaxSize = logs.DefaultMaxSize
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = logs.DefaultMaxFiles
	}
	obj := r.object(c)
	o.Notify = func(n logs.Notice) {
		switch n.Kind {
		case logs.DropStarted:
			r.events.add("Warning", ReasonLogOutputLost, obj, "Output of container %s cannot be written to its log: %v; it is counted until the log can be written again", c.Name, n.Err)
		case logs.DropEnded:
			r.events.add("Warning", ReasonLogOutputLost, obj, "%d bytes (%d lines) of output of container %s were lost: %v", n.Bytes, n.Records, c.Name, n.Err)
		case logs.RotateFailed:
			r.events.add("Warning", "FailedLogRotation", obj, "%v", n.Err)
		}
	}
	return o
}

// ReasonLogOutputLost is the event reason for container output that could not be written to its log.
const ReasonLogOutputLost = "LogOutputLost"

// removeOldRuns removes the logs of a container's runs before the previous
// one when run starts: the kubelet keeps one dead container per container
// name (its --maximum-dead-containers-per-container default, and
// purgeInitContainers for init containers), and removing a container removes
// its logs (containerLogManager.Clean).
func removeOldRuns(paths PodPaths, container string, run int32) {
	dir := filepath.Dir(paths.LogFile(container, run))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		if k, err := strconv.Atoi(num); err == nil && int32(k) < run-1 {
			_ = logs.RemoveRun(paths.LogFile(container, int32(k)))
		}
	}
}
