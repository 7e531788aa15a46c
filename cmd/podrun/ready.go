package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

// reasonContainerStatusUnknown is what a container that was running when its
// supervisor was lost ended with: the supervisor was lost, not the container.
const reasonContainerStatusUnknown = "ContainerStatusUnknown"

// readySettle is how long a container must have been running before a wait
// reports its pod Ready. The supervisor writes a container's Running state
// (and, without a readiness probe, its readiness) right after starting it, so
// a container that exits at once is Ready in the record for a few
// milliseconds. The kubelet looks at containers once a second (its PLEG relist
// period), so on a node such a container is almost never seen Ready; a wait
// here sees every instant and must not take that one for success.
const readySettle = time.Second

// unconfirmedRecheck is how soon a wait looks again at a pod whose Ready
// condition is True but one of whose ready containers was not found alive.
const unconfirmedRecheck = 100 * time.Millisecond

// podReady reports whether the pod is Ready now: the kubelet's Ready
// condition is True in its record, and every container that condition counts
// as ready is alive at this moment and has been for readySettle. When only
// the settling is missing, recheck says when to look again.
func podReady(rec *store.Record, pod *corev1.Pod) (ready bool, recheck time.Duration) {
	if !conditionTrue(pod, corev1.PodReady) {
		return false, 0
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if !st.Ready || st.State.Running == nil {
				continue
			}
			age, alive := containerAge(rec, st.ContainerID)
			if !alive {
				// Dead (the supervisor is about to record it), or not
				// readable this instant: look again soon either way, as
				// nothing else may change to wake the waiter.
				return false, unconfirmedRecheck
			}
			if age < readySettle {
				// Clamped: a clock oddity must not park the wait.
				recheck = max(recheck, min(max(readySettle-age, 10*time.Millisecond), readySettle))
			}
		}
	}
	if recheck > 0 {
		return false, recheck
	}
	return true, 0
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerAge looks up the container's init process in libcontainer's
// state (state.json: init_process_pid, init_process_start) and checks that
// the same process (same start time) still runs and is not a zombie; it
// returns how long it has been running.
func containerAge(rec *store.Record, containerID string) (time.Duration, bool) {
	id := strings.TrimPrefix(containerID, "podrun://")
	if id == "" || strings.ContainsAny(id, "/.") {
		return 0, false
	}
	data, err := os.ReadFile(filepath.Join(rec.Paths.StateRoot(), id, "state.json"))
	if err != nil {
		return 0, false
	}
	var st struct {
		Pid   int    `json:"init_process_pid"`
		Start uint64 `json:"init_process_start"`
	}
	if json.Unmarshal(data, &st) != nil || st.Pid <= 0 {
		return 0, false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", st.Pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command (which may hold spaces) start at the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is the state (field 3), fields[19] the start time (field 22),
	// in clock ticks since boot (USER_HZ, 100 on Linux).
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil || (st.Start != 0 && start != st.Start) {
		return 0, false
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()) - time.Duration(start)*10*time.Millisecond, true
}

// crash is a container that failed before its pod became Ready.
type crash struct {
	container string
	init      bool
	term      *corev1.ContainerStateTerminated
	restarts  int32
	run       int32 // the run whose log shows the failure
}

// crashed finds, in a pod that restarts its containers (restartPolicy
// Always), a container that has failed: an init container that exited
// non-zero, or a sidecar or app container that exited at all (they are meant
// to keep running). Such a pod is not becoming Ready; the kubelet would only
// restart the container with a growing backoff.
//
// An exit its container's restartPolicyRules answer (Restart or
// RestartAllContainers), and the containers a RestartAllContainers reset
// removed, are restarts the pod asked for, not failures.
func crashed(pod *corev1.Pod) *crash {
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecars[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	ruled := func(name string, code int32) bool {
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range list {
				if c.Name == name && c.RestartPolicy != nil {
					if _, ok := supervisor.MatchingRestartRule(&c, code); ok {
						return true
					}
				}
			}
		}
		return false
	}
	check := func(st corev1.ContainerStatus, init bool) *crash {
		term, run := st.State.Terminated, st.RestartCount
		if term == nil {
			term = st.LastTerminationState.Terminated
			if st.State.Running != nil && run > 0 {
				run-- // the failed run is the previous one
			}
		}
		if term == nil || term.Reason == reasonContainerStatusUnknown || term.Reason == supervisor.ReasonRestartingAllContainers || ruled(st.Name, term.ExitCode) {
			return nil
		}
		if init && !sidecars[st.Name] && term.ExitCode == 0 {
			return nil
		}
		return &crash{container: st.Name, init: init, term: term, restarts: st.RestartCount, run: run}
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if c := check(st, true); c != nil {
			return c
		}
	}
	for _, st := range pod.Status.ContainerStatuses {
		if c := check(st, false); c != nil {
			return c
		}
	}
	return nil
}

// describeCrash says which container failed, how, and its last log lines.
func describeCrash(rec *store.Record, c *crash) string {
	kind := "container"
	if c.init {
		kind = "init container"
	}
	s := fmt.Sprintf("%s %s exited with code %d (%s)", kind, c.container, c.term.ExitCode, c.term.Reason)
	if c.term.Message != "" {
		s += ": " + strings.TrimSpace(c.term.Message)
	}
	if c.restarts > 0 {
		s += fmt.Sprintf(", restarted %d times", c.restarts)
	}
	return s + lastLines(rec, c.container, c.run)
}

// lastLines is the end of a container run's log, indented, for messages.
func lastLines(rec *store.Record, container string, run int32) string {
	out, err := logs.Tail(rec.LogPath(container, run), 10, 2048)
	text := strings.TrimRight(string(out), "\n")
	if err != nil || text == "" {
		return ""
	}
	return fmt.Sprintf("\nlast lines of its log (podrun logs %s -c %s):\n    %s", rec.Pod.Name, container, strings.ReplaceAll(text, "\n", "\n    "))
}
