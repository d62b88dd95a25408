package delivery

import (
	"testing"
	"time"
)

func TestPresenceMeterReportsOnlyARateNoHolderNeeds(t *testing.T) {
	start := time.Unix(1000, 0)
	tests := []struct {
		name   string
		writes int
		every  time.Duration
		want   int // reports
	}{
		{"a heartbeat every 2 s for an hour", 1800, 2 * time.Second, 0},
		{"a burst of status changes", presenceBurst, time.Millisecond, 0},
		{"the sustained rate", 1000, time.Second / presenceRate, 0},
		{"654 writes a second for 5 s, reported once per 10 s", 3270, time.Second / 654, 1},
		{"a flood for 25 s, reported every 10 s", 25 * 100, 10 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m presenceMeter
			got := 0
			for i := range tt.writes {
				if m.write("k", start.Add(time.Duration(i)*tt.every)) {
					got++
				}
			}
			if got != tt.want {
				t.Errorf("%d reports, want %d", got, tt.want)
			}
		})
	}
}
