package await

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	tests := []struct {
		name  string
		after int32 // the condition holds from this call on; 0 never
		total time.Duration
		want  bool
	}{
		{"a condition that holds at once is met without waiting", 1, 0, true},
		{"a condition that holds on the third look is met", 3, time.Second, true},
		{"a condition that never holds times out", 0, 50 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			got := Until(tt.total, func() bool { return tt.after > 0 && calls.Add(1) >= tt.after })
			if got != tt.want {
				t.Fatalf("Until = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPollReturnsTheLastError(t *testing.T) {
	var calls int
	err := poll(30*time.Millisecond, time.Millisecond, func() error {
		calls++
		return errors.New("still down")
	})
	if err == nil || err.Error() != "still down" || calls < 2 {
		t.Fatalf("poll = %v after %d calls, want the last error after several", err, calls)
	}
}
