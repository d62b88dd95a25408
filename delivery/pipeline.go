package delivery

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pipeline sizes: the fan-out and the reader pull in batches and publish asynchronously, so
// neither waits a round trip per message (docs/durable.md "Fan-out").
const (
	pullBatch   = 256                   // messages a pull consumer buffers and a batch holds
	batchLinger = time.Millisecond      // how long a batch waits for one more buffered message
	flushAt     = 1024                  // unconfirmed publishes before a batch waits for them
	retryDelay  = time.Second           // redelivery delay after a publish that was not stored
	drainLimit  = 2 * time.Second       // how long a stopping loop waits for its drain to complete
	joinWait    = 20 * time.Millisecond // redelivery delay of an entry whose join is being written
)

// nextBatch blocks for one message, then takes whatever else is buffered, up to max.
func nextBatch(ctx context.Context, it jetstream.MessagesContext, max int) ([]jetstream.Msg, error) {
	m, err := it.Next(jetstream.NextContext(ctx))
	if err != nil {
		return nil, err
	}
	batch := []jetstream.Msg{m}
	for len(batch) < max {
		m, err := it.Next(jetstream.NextMaxWait(batchLinger))
		if err != nil {
			break // a timeout ends the batch; any other error returns from the next blocking call
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// releaseBuffered stops the iterator and naks every message it had buffered or that was still
// on its way, so they are redelivered now instead of after the consumer's 60 s ack wait. The
// drain ends once the broker confirmed the unsubscribe, which is what guarantees nothing
// more arrives: a message sent to the pull request before that and not nak'd would wait out
// the ack wait (a fan-out stopped mid-burst under load left up to 168 so when this stopped at
// the first 50 ms without a message). drainLimit bounds it on a connection that is gone.
func releaseBuffered(it jetstream.MessagesContext) {
	it.Drain()
	deadline := time.Now().Add(drainLimit)
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		m, err := it.Next(jetstream.NextMaxWait(wait))
		if err != nil {
			return
		}
		_ = m.Nak()
	}
}

// pendingMsg is a consumed message waiting for the publishes it caused.
type pendingMsg struct {
	msg     jetstream.Msg
	futures []jetstream.PubAckFuture
	// dlv names the member of each DLV copy among futures, index for index; "" marks an
	// INBOX entry. The quota (handoffquota.go) counts each copy until its publish settles.
	dlv      []string
	err      error  // a publish that could not even be sent
	onStored func() // counts what was routed, once every publish is stored
}

// add records one started publish: a DLV copy for member, or an INBOX entry when member is "".
func (p *pendingMsg) add(f jetstream.PubAckFuture, member string) {
	p.futures = append(p.futures, f)
	p.dlv = append(p.dlv, member)
}

// settle waits for each pending message's publishes and acks it only when all of them were
// stored; otherwise it naks it for redelivery, which republishes under the same Nats-Msg-Id,
// so what was stored already is deduplicated. When ctx ends, the rest are nak'ed at once.
// Either way the quota learns how each DLV copy ended.
func (s *Service) settle(ctx context.Context, pend []pendingMsg, onFail func(pendingMsg, error)) error {
	for _, p := range pend {
		err := p.err
		var acks []*jetstream.PubAck
		if err == nil {
			acks, err = awaitAll(ctx, p.futures)
		}
		s.handedOver(p, acks)
		switch {
		case ctx.Err() != nil:
			_ = p.msg.Nak()
		case err != nil:
			onFail(p, err)
			_ = p.msg.NakWithDelay(retryDelay)
		default:
			_ = p.msg.Ack()
			if p.onStored != nil {
				p.onStored()
			}
		}
	}
	return ctx.Err()
}

// handedOver tells the quota how each DLV copy of p ended, stored at its acknowledged sequence
// or, with acks nil, not known to be stored, and counts the copies stored.
func (s *Service) handedOver(p pendingMsg, acks []*jetstream.PubAck) {
	for i, member := range p.dlv {
		if member == "" {
			continue
		}
		var seq uint64
		if acks != nil {
			seq = acks[i].Sequence
			s.stats.delivered.Add(1)
		}
		s.quota.settled(member, seq)
	}
}

// awaitAll waits until every publish is stored, one fails, or ctx ends, and returns the
// acknowledgements in the order of futures.
func awaitAll(ctx context.Context, futures []jetstream.PubAckFuture) ([]*jetstream.PubAck, error) {
	acks := make([]*jetstream.PubAck, 0, len(futures))
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			acks = append(acks, ack)
		case err := <-f.Err():
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return acks, nil
}

// nakAll releases messages a stopping loop will not process.
func nakAll(msgs []jetstream.Msg) {
	for _, m := range msgs {
		_ = m.Nak()
	}
}
