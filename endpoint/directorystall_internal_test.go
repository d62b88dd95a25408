package endpoint

import (
	"testing"
	"time"
)

// TestAWatchThatNeverLoadsIsRebuilt: a watch stalls when it delivers nothing for
// initialLoadWait before its initial values (a passive reader's watch, whose consumer create
// was lost, never loaded and `cotal who` timed out), or when a member's own heartbeat goes
// unseen for two heartbeats; a loaded, quiet watch of passive readers does not.
func TestAWatchThatNeverLoadsIsRebuilt(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		watching bool
		last     time.Duration // before now
		unseen   time.Duration // before now; 0: none
		stalled  bool
	}{
		{"loading, entries flowing", false, time.Second, 0, false},
		{"loading, nothing for longer than initialLoadWait", false, initialLoadWait + time.Second, 0, true},
		{"loaded and quiet, no member heartbeat owed", true, time.Hour, 0, false},
		{"loaded, a member's heartbeat unseen for two heartbeats", true, time.Second, 5 * time.Second, true},
		{"loaded, a member's heartbeat unseen for one heartbeat", true, time.Second, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &directory{heartbeat: 2 * time.Second, watching: tt.watching, lastUpdate: now.Add(-tt.last),
				unseen: map[string]time.Time{}}
			if tt.unseen > 0 {
				d.unseen["UA"] = now.Add(-tt.unseen)
			}
			if got := d.stalledLocked(now) != ""; got != tt.stalled {
				t.Fatalf("stalled = %v (%q), want %v", got, d.stalledLocked(now), tt.stalled)
			}
		})
	}
}
