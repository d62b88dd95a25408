package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/retry"
)

// noResponders is how a read or control request is sent again after the broker found no
// responder for it. Storage always answers, so "no responders" is transient: the broker
// re-registers the agent account's imports whenever its JWT changes (a mint or a revocation,
// wire/accounts.go), and a request crossing at that moment reaches nothing. Such a request
// was delivered nowhere, so sending it again cannot do the work twice.
var noResponders = retry.Policy{Tries: 4, First: 20 * time.Millisecond}

// retryNoResponders runs op under the noResponders policy.
func retryNoResponders(ctx context.Context, op func() error) error {
	return noResponders.Do(ctx, isNoResponders, op)
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
// fails for another reason, finds no responder noResponders.Tries times, or ctx ends. An
// attempt that timed out while ctx still runs was lost, not refused, and is sent again.
func retryRead(ctx context.Context, attempt time.Duration, op func(context.Context) error) error {
	return retryNoResponders(ctx, func() error { return retry.Unanswered(ctx, attempt, op) })
}
