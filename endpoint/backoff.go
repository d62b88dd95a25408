package endpoint

import (
	"context"
	"time"
)

// backoff is a capped exponential wait for retry loops.
type backoff struct {
	first, max, next time.Duration
}

func newBackoff(first, max time.Duration) *backoff {
	return &backoff{first: first, max: max, next: first}
}

// wait sleeps for the current delay, or until ctx ends, and doubles the delay up to max. It
// reports whether ctx is still live.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, b.max)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.next = b.first }
