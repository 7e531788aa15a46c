package controllers

import (
	"testing"
	"time"

	"github.com/podrun/podrun/podspec"
)

// TestCronJobMostRecentScheduleTimeManyMissed: with more than 100 missed
// start times the most recent one is run (mostRecentScheduleTime in the
// CronJob controller's utils.go), not the 100th after the last schedule.
func TestCronJobMostRecentScheduleTimeManyMissed(t *testing.T) {
	sched, err := podspec.ParseSchedule("*/1 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 12, 30, 20, 0, time.UTC)
	earliest := now.Add(-98 * 24 * time.Hour)
	last, next, missed := mostRecentScheduleTime(sched, earliest, now)
	if want := time.Date(2026, 11, 26, 12, 30, 0, 0, time.UTC); !last.Equal(want) {
		t.Errorf("last %v, want %v", last, want)
	}
	if want := time.Date(2026, 11, 26, 12, 31, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next %v, want %v", next, want)
	}
	if missed <= maxMissedSchedules {
		t.Errorf("missed %d", missed)
	}
	// An irregular schedule: 30 6-16/4 * * 1-5.
	sched, _ = podspec.ParseSchedule("30 6-16/4 * * 1-5")
	last, _, _ = mostRecentScheduleTime(sched, now.Add(-60*24*time.Hour), now) // a Thursday
	if want := time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC); !last.Equal(want) {
		t.Errorf("irregular: last %v, want %v", last, want)
	}
	// None due yet.
	if last, _, _ := mostRecentScheduleTime(sched, now, now); !last.IsZero() {
		t.Errorf("none due: %v", last)
	}
}
