package runtime

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// A pod that uses the cluster DNS holds its first container until the
// services owner serves; a pod that does not, or one whose record names no
// cluster DNS address, does not wait; a cancelled start stops waiting.
func TestWaitClusterDNS(t *testing.T) {
	newRunner := func(t *testing.T, policy corev1.DNSPolicy, settings bool) *podRunner {
		l := store.Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
		if settings {
			l.ClusterDNS = "10.96.0.10" // from the pod's recorded settings
		}
		if err := os.MkdirAll(l.ServicesOwner().Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: policy}}
		return &podRunner{l: l, plan: &podspec.Plan{Pod: pod}}
	}
	// returns says whether wait returns within the test's patience (the
	// wait's own bound is clusterDNSWait).
	returns := func(wait func()) bool {
		done := make(chan struct{})
		go func() { wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(clusterDNSWait / 2):
			return false
		}
	}
	for _, tc := range []struct {
		name     string
		policy   corev1.DNSPolicy
		settings bool
	}{
		{"dnsPolicy Default", corev1.DNSDefault, true},
		{"dnsPolicy None", corev1.DNSNone, true},
		{"no cluster DNS recorded", corev1.DNSClusterFirst, false},
	} {
		r := newRunner(t, tc.policy, tc.settings)
		if !returns(func() { r.waitClusterDNS(context.Background()) }) {
			t.Errorf("%s: the container waited for the cluster DNS", tc.name)
		}
	}

	r := newRunner(t, corev1.DNSClusterFirst, true)
	var recorded atomic.Bool
	go func() {
		time.Sleep(200 * time.Millisecond)
		recorded.Store(true)
		if err := store.WriteOwner(r.l.ServicesOwner()); err != nil {
			t.Error(err)
		}
	}()
	if !returns(func() { r.waitClusterDNS(context.Background()) }) {
		t.Fatal("the container still waits once the services owner serves")
	}
	if !recorded.Load() {
		t.Error("the container did not wait for the services owner")
	}
	// Once per pod: a restart does not wait again.
	store.RemoveOwner(r.l.ServicesOwner())
	if !returns(func() { r.waitClusterDNS(context.Background()) }) {
		t.Error("a second start waited again")
	}

	r = newRunner(t, corev1.DNSClusterFirstWithHostNet, true)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if !returns(func() { r.waitClusterDNS(ctx) }) {
		t.Error("a cancelled start still waits for the cluster DNS")
	}
}
