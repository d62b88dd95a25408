package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/reask"
)

// noResponderTries bounds how often a read or control request is sent again after the broker
// found no responder for it; noResponderWait is the first pause, doubled each time.
const (
	noResponderTries = 4
	noResponderWait  = 20 * time.Millisecond
)

// retryNoResponders runs op until it does not fail for want of a responder, at most
// noResponderTries times. Storage always answers, so "no responders" is transient: the broker
// re-registers the agent account's imports whenever its JWT changes (a mint or a revocation,
// wire/accounts.go), and a request crossing at that moment reaches nothing. Such a request
// was delivered nowhere, so sending it again cannot do the work twice.
func retryNoResponders(ctx context.Context, op func() error) error {
	wait := noResponderWait
	for try := 1; ; try++ {
		err := op()
		if !isNoResponders(err) || try == noResponderTries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// isNoResponders reports whether err is the broker finding no responder for a request.
func isNoResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, ErrNoResponders)
}

// readAttempt bounds one attempt of an idempotent read made at connect or join. A JetStream API
// request crossing the storage import while the broker re-registers it (a mint or revocation
// elsewhere) can also be lost with no answer at all; without a bound of its own the read then
// waits out the caller's whole deadline (a connect's 30 s in the chaos load test).
const readAttempt = 5 * time.Second

// retryRead runs the idempotent read op, each attempt bounded by attempt, until it succeeds,
// fails for another reason, finds no responder noResponderTries times, or ctx ends. An
// attempt that timed out while ctx still runs was lost, not refused, and is sent again.
func retryRead(ctx context.Context, attempt time.Duration, op func(context.Context) error) error {
	return retryNoResponders(ctx, func() error { return reask.Do(ctx, attempt, op) })
}
