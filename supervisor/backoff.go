package supervisor

import (
	"time"

	"k8s.io/utils/clock"
)

// backoff is the kubelet's crash-loop backoff (client-go flowcontrol.Backoff as
// used by kuberuntime doBackOff): the first restart is immediate, then each
// restart waits initial, 2*initial, ... up to max, measured from the moment the
// container finished. An entry resets once it has not moved for 2*max.
type backoff struct {
	clock        clock.Clock
	initial, max time.Duration
	entries      map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(c clock.Clock, initial, max time.Duration) *backoff {
	return &backoff{clock: c, initial: initial, max: max, entries: map[string]*backoffEntry{}}
}

func (b *backoff) expired(eventTime time.Time, e *backoffEntry) bool {
	return eventTime.Sub(e.lastUpdate) > 2*b.max
}

// until returns when a restart of key may happen for a container that finished
// at finished, and whether that is still in the future.
func (b *backoff) until(key string, finished time.Time) (time.Time, bool) {
	e, ok := b.entries[key]
	if !ok || b.expired(finished, e) {
		return time.Time{}, false
	}
	at := finished.Add(e.delay)
	return at, b.clock.Now().Before(at)
}

// delay is the current backoff of key.
func (b *backoff) delay(key string) time.Duration {
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// next records a restart of key for a container that finished at finished.
func (b *backoff) next(key string, finished time.Time) {
	e, ok := b.entries[key]
	if !ok || b.expired(finished, e) {
		e = &backoffEntry{delay: b.initial}
		b.entries[key] = e
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = b.clock.Now()
}

// untilUpdate is the kubelet image manager's IsInBackOffSinceUpdate: key
// waits until its last failure plus its current delay.
func (b *backoff) untilUpdate(key string) (time.Time, bool) {
	e, ok := b.entries[key]
	if !ok || b.expired(b.clock.Now(), e) {
		return time.Time{}, false
	}
	at := e.lastUpdate.Add(e.delay)
	return at, b.clock.Now().Before(at)
}
