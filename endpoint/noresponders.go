package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
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
