package bench

import (
	"context"
	"errors"
	"testing"
)

// windowed keeps at most pathWindow sends unacknowledged, waits for them oldest first, and
// waits for every one before it returns.
func TestWindowedBoundsTheSendsInFlight(t *testing.T) {
	for _, n := range []int{0, 1, pathWindow, pathWindow + 1, 3*pathWindow + 7} {
		var sent, waited, most int
		err := windowed(context.Background(), n, func() (int, error) {
			sent++
			most = max(most, sent-waited)
			return sent - 1, nil
		}, func(_ context.Context, i int) error {
			if i != waited {
				return errors.New("waited out of order")
			}
			waited++
			return nil
		})
		if err != nil || sent != n || waited != n || most > pathWindow {
			t.Errorf("n=%d: err %v, sent %d, waited %d, at most %d in flight (bound %d)",
				n, err, sent, waited, most, pathWindow)
		}
	}
}

// A failed wait ends the run with its error.
func TestWindowedStopsAtAFailedWait(t *testing.T) {
	boom := errors.New("refused")
	sent := 0
	err := windowed(context.Background(), 2*pathWindow, func() (int, error) { sent++; return sent, nil },
		func(context.Context, int) error { return boom })
	if !errors.Is(err, boom) || sent != pathWindow {
		t.Fatalf("err %v after %d sends, want %v after %d", err, sent, boom, pathWindow)
	}
}
