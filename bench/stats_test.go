package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/store"
)

func TestQuantile(t *testing.T) {
	ms := func(v ...int) samples {
		var s samples
		for _, x := range v {
			s = append(s, time.Duration(x)*time.Millisecond)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		s    samples
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.9, 7 * time.Millisecond},
		{"median of odd count", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"median of even count is the mean of the middle two", ms(4, 1, 3, 2), 0.5, 2500 * time.Microsecond},
		{"min", ms(4, 1, 3, 2), 0, time.Millisecond},
		{"max", ms(4, 1, 3, 2), 1, 4 * time.Millisecond},
		{"p90 interpolates", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9100 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.quantile(tc.q); got != tc.want {
				t.Errorf("quantile(%v) of %v = %v, want %v", tc.q, tc.s, got, tc.want)
			}
		})
	}
	s := ms(3, 1, 2)
	_ = s.median()
	if s[0] != 3*time.Millisecond {
		t.Errorf("quantile sorted the samples in place: %v", s)
	}
}

func TestTableEscapesPipes(t *testing.T) {
	tb := newTable("what", "ms")
	tb.add("`yes | head`", "1")
	want := "| what | ms |\n|---|---:|\n| `yes \\| head` | 1 |\n"
	if got := tb.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestExpectedSum(t *testing.T) {
	for _, size := range []int64{0, 1, 128, 1000, 3 << 20} {
		full := strings.Repeat(logLine+"\n", int(size/128)+1)[:size]
		sum := sha256.Sum256([]byte(full))
		if got, want := expectedSum(size), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("expectedSum(%d) = %s, want %s", size, got, want)
		}
	}
}

func TestPodEventsAt(t *testing.T) {
	at := func(s int) metav1.MicroTime { return metav1.NewMicroTime(time.Unix(int64(s), 0)) }
	evs := podEvents{
		{Time: at(1), Reason: "SandboxReady"},
		{Time: at(2), Reason: "Started", Object: initObject("a")},
		{Time: at(3), Reason: "Started", Object: appObject("a")},
		{Time: at(4), Reason: "Started", Object: appObject("a")},
	}
	for _, tc := range []struct {
		reason, object string
		want           int64
		ok             bool
	}{
		{"SandboxReady", "", 1, true},
		{"Started", initObject("a"), 2, true},
		{"Started", appObject("a"), 3, true}, // the first one
		{"Created", appObject("a"), 0, false},
	} {
		got, ok := evs.at(tc.reason, tc.object)
		if ok != tc.ok || (ok && got.Unix() != tc.want) {
			t.Errorf("at(%s, %s) = %v %v, want %d %v", tc.reason, tc.object, got, ok, tc.want, tc.ok)
		}
	}
	if _, err := evs.must("Pulled", appObject("a")); err == nil {
		t.Error("must found an event that is not there")
	}
	var _ store.Event = evs[0]
}
