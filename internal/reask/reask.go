// Package reask asks an idempotent JetStream request again when its answer is lost.
//
// A request can get no answer at all: a clustered metadata leader that loses its leadership
// between taking a create and proposing it drops it, a stream without a leader answers no
// info request, and a request crossing an account import while the broker re-registers it
// reaches nothing. nats.go applies its own request timeout only to a context without a
// deadline, so under a caller's deadline one lost answer would spend all of it. Do bounds
// each attempt instead and sends the request again while the caller's deadline runs.
package reask

import (
	"context"
	"errors"
	"time"
)

// Do runs op, each attempt under a context bounded by attempt, until op returns nil, fails
// for a reason other than that attempt's own timeout, or ctx ends; it returns op's last
// error. op must be idempotent: an attempt that timed out may still have been carried out.
func Do(ctx context.Context, attempt time.Duration, op func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := op(actx)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err
		}
	}
}
