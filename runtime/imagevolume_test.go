package runtime

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
)

// A failed pull of an image volume's image backs off, doubling up to the
// maximum, as the image manager's; a success or a Never miss ends it.
func TestImageVolumePullBackoff(t *testing.T) {
	r := &podRunner{settings: store.Settings{BackoffInitial: metav1.Duration{Duration: time.Hour}, BackoffMax: metav1.Duration{Duration: 3 * time.Hour}}}
	const ref = "registry.test/vol:1"
	pullErr := &startError{Reason: ReasonErrImagePull, Waiting: true, Message: "manifest unknown"}
	if r.volumeBackoff(ref) {
		t.Fatal("backoff before any pull")
	}
	for _, want := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour, 3 * time.Hour} {
		r.noteVolumePull(ref, pullErr)
		if got := r.volFailed[ref].delay; got != want || !r.volumeBackoff(ref) {
			t.Fatalf("after a failed pull: delay %s (in backoff %v), want %s", got, r.volumeBackoff(ref), want)
		}
	}
	if r.volumeBackoff("other:1") {
		t.Error("another image backs off too")
	}
	r.noteVolumePull(ref, nil)
	if r.volumeBackoff(ref) {
		t.Error("still backing off after a pull that worked")
	}
	r.noteVolumePull(ref, &startError{Reason: ReasonErrImageNeverPull, Waiting: true})
	r.noteVolumePull(ref, errors.New("reading the store"))
	if r.volumeBackoff(ref) {
		t.Error("backing off without a failed pull")
	}
	// Expired: pulled again.
	r.noteVolumePull(ref, pullErr)
	f := r.volFailed[ref]
	f.at = time.Now().Add(-2 * time.Hour)
	r.volFailed[ref] = f
	if r.volumeBackoff(ref) {
		t.Error("backing off after the delay")
	}
}
