package runtime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/store"
)

// logOptions is a container's log rotation policy, with its trouble reported
// as the pod's events (visible in describe): output a full disk cannot take
// is counted, never dropped silently.
func (r *podRunner) logOptions(c *corev1.Container) logs.WriterOptions {
	o := logs.WriterOptions{MaxSize: r.settings.LogMaxSize, MaxFiles: r.settings.LogMaxFiles}
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
			r.events.Add("Warning", ReasonLogOutputLost, obj, "Output of container %s cannot be written to its log: %v; it is counted until the log can be written again", c.Name, n.Err)
		case logs.DropEnded:
			r.events.Add("Warning", ReasonLogOutputLost, obj, "%d bytes (%d lines) of output of container %s were lost: %v", n.Bytes, n.Records, c.Name, n.Err)
		case logs.RotateFailed:
			r.events.Add("Warning", "FailedLogRotation", obj, "%v", n.Err)
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
func removeOldRuns(paths store.PodPaths, container string, run int32) {
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
