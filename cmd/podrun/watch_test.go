package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podrun/podrun/store"
)

// A waiter that watches every live supervisor it shows (get -w) or waits
// for a pod to be created (wait --for=create) sleeps until a record changes:
// no relist every recheckEvery, and a new record wakes it at once.
func TestPodWatchUntimedWakesOnlyOnChange(t *testing.T) {
	l := store.Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
	pw, err := newPodWatch(l)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.close()
	woke := make(chan time.Time, 1)
	go func() {
		_ = pw.wait(context.Background(), -1)
		woke <- time.Now()
	}()
	select {
	case <-woke:
		t.Fatal("an untimed wait woke with no change")
	case <-time.After(recheckEvery + 500*time.Millisecond):
	}
	created := time.Now()
	if err := os.Mkdir(filepath.Join(l.PodsDir(), "default_web_uid"), 0o700); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-woke:
		if d := at.Sub(created); d > time.Second {
			t.Errorf("woke %s after the record was created", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a new pod record did not wake the wait")
	}
}
