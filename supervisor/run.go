package supervisor

import (
	"time"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

// The run contract with the runtime: how a run ended, a started run, and why
// a start failed (runtime/run.go).
type (
	exitResult      = runtime.ExitResult
	containerHandle = runtime.ContainerHandle
	startError      = runtime.StartError
)

func exitReason(code int32, oom bool) string { return runtime.ExitReason(code, oom) }

// eventLog appends the machine's events to the pod's event list in the store.
type eventLog struct {
	path string
	// fallback takes the events that cannot be written to path (a full disk).
	fallback string
	now      func() time.Time
}

func (e *eventLog) store() *store.EventLog {
	l := store.NewEventLog(e.path, e.now)
	if e.fallback != "" {
		l = store.NewPodEventLogAt(e.path, e.fallback, e.now)
	}
	return l
}

func (e *eventLog) add(typ, reason, object, format string, args ...any) {
	e.store().Add(typ, reason, object, format, args...)
}
