package bench

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// publishChannel publishes n channel messages from pub without waiting for each
// acknowledgement, then waits for all of them.
func publishChannel(ctx context.Context, pub *endpoint.Endpoint, channel, text string, n int) error {
	pending := make([]*endpoint.PendingReceipt, 0, n)
	for range n {
		p, err := pub.SendAsync(channel, []wire.Part{wire.TextPart(text)})
		if err != nil {
			return err
		}
		pending = append(pending, p)
	}
	return waitReceipts(ctx, pending)
}

func waitReceipts(ctx context.Context, pending []*endpoint.PendingReceipt) error {
	for _, p := range pending {
		if _, err := p.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// publishRaw publishes n messages through JetStream asynchronously and waits for every
// acknowledgement.
func publishRaw(ctx context.Context, js jetstream.JetStream, subject string, data []byte, n int) error {
	futures := make([]jetstream.PubAckFuture, 0, n)
	for range n {
		f, err := js.PublishAsync(subject, data)
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	return waitFutures(ctx, futures)
}

// waitFutures waits for every publish acknowledgement.
func waitFutures(ctx context.Context, futures []jetstream.PubAckFuture) error {
	for _, f := range futures {
		if err := waitFuture(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// waitFuture waits for one publish acknowledgement.
func waitFuture(ctx context.Context, f jetstream.PubAckFuture) error {
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeAll closes endpoints a run opened; the mesh would close them at its end anyway.
func closeAll(eps []*endpoint.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	for _, ep := range eps {
		_ = ep.Close(ctx)
	}
}
