// Package retry holds the ways the mesh and its client try an operation again, each a named
// policy, so that a loop that retries says which one it follows:
//
//   - Unanswered asks an idempotent request again when its answer is lost.
//   - Policy tries a few times, quickly, while an error is transient.
//   - Backoff waits longer after each failure, up to a cap, for loops that run until their
//     context ends.
//   - Sleep waits, or stops when its context ends.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Unanswered runs op, each attempt under a context bounded by attempt, until op returns nil,
// fails for a reason other than that attempt's own timeout, or ctx ends; it returns op's last
// error, saying how many attempts it made when ctx ended after an unanswered one. op must be
// idempotent: an attempt that timed out may still have been carried out.
//
// A request can get no answer at all: a clustered metadata leader that loses its leadership
// between taking a create and proposing it drops it, a stream without a leader answers no
// info request, and a request crossing an account import while the broker re-registers it
// reaches nothing. nats.go applies its own request timeout only to a context without a
// deadline, so under a caller's deadline one lost answer would spend all of it.
func Unanswered(ctx context.Context, attempt time.Duration, op func(context.Context) error) error {
	for lost := 0; ; lost++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := op(actx)
		cancel()
		if err != nil && ctx.Err() != nil && lost > 0 {
			return fmt.Errorf("%d attempts, each unanswered after %v: %w", lost+1, attempt, err)
		}
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err
		}
	}
}

// Policy is a bounded number of quick tries for an error that passes on its own.
type Policy struct {
	// Tries is how many times op runs at most.
	Tries int
	// First is the pause after the first failure, doubled after each one.
	First time.Duration
}

// Do runs op until it returns an error transient does not accept (nil included), p.Tries
// runs are spent, or ctx ends, and returns op's last error.
func (p Policy) Do(ctx context.Context, transient func(error) bool, op func() error) error {
	wait := p.First
	for try := 1; ; try++ {
		err := op()
		if !transient(err) || try >= p.Tries {
			return err
		}
		if Sleep(ctx, wait) != nil {
			return err
		}
		wait *= 2
	}
}

// Backoff is a capped exponential wait for loops that retry until their context ends.
type Backoff struct {
	first, max, next time.Duration
}

// NewBackoff returns a Backoff whose first wait is first, doubling up to max.
func NewBackoff(first, max time.Duration) *Backoff {
	return &Backoff{first: first, max: max, next: first}
}

// Wait sleeps for the current delay, or until ctx ends, and doubles the delay up to its cap.
// It reports whether ctx is still live.
func (b *Backoff) Wait(ctx context.Context) bool {
	d := b.next
	b.next = min(2*b.next, b.max)
	return Sleep(ctx, d) == nil
}

// Reset makes the next wait the first again, after a success.
func (b *Backoff) Reset() { b.next = b.first }

// Sleep waits d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
