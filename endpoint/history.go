package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/jsconfig"
)

// History read settings of the pinned chathist_<id> consumer (SPEC §8; docs/storage.md
// "Consumers").
const (
	historyBatch = 256
	historyFetch = 5 * time.Second // bound on one fetch round trip
)

// backfill reads the channel's retained messages up to watermark through the pinned
// single-filter history consumer and surfaces each with Historical set (SPEC §7 steps 3–5),
// oldest first, while the read goes on: the read runs on its own goroutine into a queue
// without bound, so a Handler that itself joins a channel, and so waits for this read to end
// (one read at a time per instance), never holds the read up. It returns how many were
// surfaced once every copy read was surfaced.
func (e *Endpoint) backfill(ctx context.Context, name string, watermark uint64, window time.Duration) (int, error) {
	q := newHistoryQueue()
	go func() { q.close(e.readHistory(ctx, name, watermark, window, q.push)) }()
	surfaced := 0
	for {
		copies, done, err := q.take()
		for _, in := range copies {
			if e.receive(in) == outSurfaced {
				surfaced++
			}
		}
		if done {
			return surfaced, err
		}
	}
}

// historyQueue hands copies from a history read to the goroutine that surfaces them.
type historyQueue struct {
	mu     sync.Mutex
	ready  *sync.Cond
	copies []inbound
	closed bool
	err    error
}

func newHistoryQueue() *historyQueue {
	q := &historyQueue{}
	q.ready = sync.NewCond(&q.mu)
	return q
}

func (q *historyQueue) push(in inbound) {
	q.mu.Lock()
	q.copies = append(q.copies, in)
	q.mu.Unlock()
	q.ready.Signal()
}

// close ends the read with err, nil when it read everything.
func (q *historyQueue) close(err error) {
	q.mu.Lock()
	q.closed, q.err = true, err
	q.mu.Unlock()
	q.ready.Signal()
}

// take waits for copies and returns every one queued, oldest first; once the read has ended
// and none is left, it returns done and the read's error.
func (q *historyQueue) take() (copies []inbound, done bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.copies) == 0 && !q.closed {
		q.ready.Wait()
	}
	if len(q.copies) > 0 {
		copies, q.copies = q.copies, nil
		return copies, false, nil
	}
	return nil, true, q.err
}

// readHistory creates chathist_<id> with exactly one filter, ChatFilter(name) (the only CHAT
// consumer create an agent holds, SPEC §9 item 4), reads it up to watermark, handing each copy
// to emit in stream order, and deletes it before and after (docs/storage.md "Consumers"). One
// history read runs at a time per instance, since the consumer name is fixed.
func (e *Endpoint) readHistory(ctx context.Context, name string, watermark uint64, window time.Duration, emit func(inbound)) error {
	e.histMu.Lock()
	defer e.histMu.Unlock()
	var since time.Time
	if window > 0 {
		since = time.Now().Add(-window)
	}
	spec := e.names.HistoryConsumerSpec(e.id, name, since)
	stream, consumer := spec.Stream, spec.Name
	e.deleteHistory(ctx, stream, consumer)
	// A create is idempotent (the same pinned config), so one whose answer was lost is asked
	// again rather than waiting out the caller's deadline: in a cluster the metadata leader
	// can drop a proposal unanswered (RELIABILITY.md).
	var cons jetstream.Consumer
	err := retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
		cons, err = e.js.CreateOrUpdateConsumer(ctx, stream, jsconfig.Consumer(spec))
		return err
	})
	if err != nil {
		return fmt.Errorf("create history consumer %s: %w", consumer, err)
	}
	defer e.deleteHistory(context.WithoutCancel(ctx), stream, consumer)
	return fetchHistory(ctx, cons, watermark, emit)
}

// fetchHistory pulls until the consumer has nothing pending or passes the watermark, handing
// each copy to emit; copies past the watermark arrive on the live subscription instead.
func fetchHistory(ctx context.Context, cons jetstream.Consumer, watermark uint64, emit func(inbound)) error {
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		msgs, err := fetchBatch(ctx, cons, int(min(pending, historyBatch)))
		if err == nil && len(msgs) == 0 {
			msgs, err = fetchSettled(ctx, cons, int(min(pending, historyBatch)))
		}
		if err != nil {
			return fmt.Errorf("fetch history: %w", err)
		}
		for _, m := range msgs {
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			pending = md.NumPending
			if md.Sequence.Stream > watermark {
				return nil
			}
			emit(inbound{src: srcHistory, subject: m.Subject(), data: m.Data(), seq: md.Sequence.Stream,
				msgID: m.Headers().Get(nats.MsgIdHdr)})
		}
		if len(msgs) == 0 {
			return nil
		}
	}
	return nil
}

// fetchSettled asks again while pulls come back empty although copies are pending: a
// consumer created a moment ago in a cluster answers empty while its leader settles, for
// seconds when a lost node's streams elect new leaders. Every emptyFetchTries it reads the
// consumer again and stops when nothing is pending any more (the copies went since the
// create); otherwise it asks until ctx ends, so a read never passes held copies off as none.
func fetchSettled(ctx context.Context, cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	for tries := 1; ; tries++ {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the stream holds copies it did not hand over: %w", ctx.Err())
		case <-time.After(emptyFetchWait):
		}
		if tries%emptyFetchTries == 0 {
			if info, err := cons.Info(ctx); err == nil && info.NumPending == 0 {
				return nil, nil
			}
		}
		if msgs, err := fetchBatch(ctx, cons, n); err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
}

// emptyFetchTries and emptyFetchWait pace fetchSettled: a pull every 50 ms, the consumer
// read again every second.
const (
	emptyFetchTries = 20
	emptyFetchWait  = 50 * time.Millisecond
)

// fetchBatch fetches up to n messages without waiting. A pull request that found no
// responder reached nothing, as one sent right after a create does in a cluster until the
// consumer's leader has announced its interest over the routes; it is sent again.
func fetchBatch(ctx context.Context, cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	var msgs []jetstream.Msg
	err := retryNoResponders(ctx, func() error {
		batch, err := cons.FetchNoWait(n)
		if err != nil {
			return err
		}
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && len(msgs) == 0 {
			return err
		}
		return nil
	})
	return msgs, err
}

// deleteHistory removes the history consumer; one that is already gone is fine.
func (e *Endpoint) deleteHistory(ctx context.Context, stream, consumer string) {
	ctx, cancel := context.WithTimeout(ctx, historyFetch)
	defer cancel()
	err := e.js.DeleteConsumer(ctx, stream, consumer)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		e.log.Debug("delete history consumer", "consumer", consumer, "err", err)
	}
}
