package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pulling tasks: svc_<role> is shared by every holder of the role, so a holder asks for no
// more tasks than its Handler is about to start, marks the tasks it holds in progress while
// they wait, so that none is redelivered to another holder and handled twice, and hands back
// those a stalled Handler keeps waiting (docs/durable.md "Pulling tasks").
const (
	// taskAhead is how much of the Handler's time a holder pulls ahead: as many tasks as it
	// handles in that time at its recent pace. A Handler slower than this per task pulls one
	// task at a time, and only once it is idle.
	taskAhead = 50 * time.Millisecond
	// taskBatchMax caps one pull of tasks, as ownerBatch caps an owner's.
	taskBatchMax = ownerBatch
	// taskPullWait is how long a pull of one task waits on the broker for it to arrive:
	// nats.go's default expiry, so an idle holder sends one pull per 30 s, as an owner's
	// Consume does. A lost pull is noticed sooner, by its missed heartbeats.
	taskPullWait = 30 * time.Second
	// taskAheadWait is how long a pull of more than one task waits on the broker, so that a
	// Handler that stalls stops taking tasks within it; too short for idle heartbeats. A pull
	// ahead goes out only after the last one brought tasks; an idle holder is back to pulls
	// of one.
	taskAheadWait = time.Second
	// taskHandBack is how long the task in hand may take before the tasks waiting behind it
	// are handed back, with a nak, to the role's other holders.
	taskHandBack = time.Second
)

// pullTasks pulls b (svc_<role>) into a queue that one worker hands to the Handler, one pull
// at a time, each sized by the queue's pace, until ctx ends or the consumer is lost. A pull of
// one task ends early on a reconnect, when its heartbeats stop, or when ctx ends.
func (e *Endpoint) pullTasks(ctx context.Context, b binding, cons jetstream.Consumer) error {
	q := newPullQueue()
	q.handBackAfter = taskHandBack
	finish := e.startServing(q, cons)
	defer func() {
		b.state.bound.Store(false)
		finish()
	}()
	b.state.bound.Store(true)
	b.state.settle()
	brought := 0
	for {
		limit := taskBatchMax
		if brought == 0 {
			limit = 1 // one task, once idle
		}
		n, ok := q.awaitRoom(ctx, taskAhead, limit)
		if !ok {
			return nil
		}
		var err error
		if brought, err = e.pullTaskBatch(ctx, b, cons, q, n); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// pullTaskBatch sends one pull of n tasks and queues what it brings, and returns how many it
// brought. It returns an error only for a consumer that is gone; a pull that failed otherwise
// is sent again after a pause.
func (e *Endpoint) pullTaskBatch(ctx context.Context, b binding, cons jetstream.Consumer, q *pullQueue, n int) (int, error) {
	q.setPullOpen(true)
	defer q.setPullOpen(false)
	if n > 1 {
		return e.pullTasksAhead(ctx, b, cons, q, n)
	}
	pctx, cancel := context.WithTimeout(ctx, taskPullWait)
	defer cancel()
	reconnected := e.conn.reconnectSignal()
	batch, err := cons.Fetch(1, jetstream.FetchContext(pctx), jetstream.FetchHeartbeat(pullHeartbeat))
	if err != nil {
		return 0, e.taskPullFailed(ctx, cons, err)
	}
	brought := 0
	for msgs := batch.Messages(); msgs != nil; {
		select {
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				break
			}
			queueTask(b, q, m)
			brought++
		case <-reconnected:
			// The broker may have lost this pull with the connection; pull afresh.
			e.stats.pullsReissued.Add(1)
			cancel()
			reconnected = nil
		}
	}
	if err := batch.Error(); err != nil && pctx.Err() == nil {
		return brought, e.taskPullFailed(ctx, cons, err)
	}
	return brought, nil
}

// pullTasksAhead sends one pull of n tasks that waits taskAheadWait on the broker, and queues
// all it brings. It is never cancelled: nats.go drops what a cancelled pull received but had
// not handed on yet, and those tasks would wait out their ack wait. It ends when the broker
// says it expired. After a reconnect, which loses the pull on the broker, it returns at once
// so that the next pull goes out, and what nats.go still holds of it is queued as it comes,
// until nats.go's own timer ends it a second past its expiry.
func (e *Endpoint) pullTasksAhead(ctx context.Context, b binding, cons jetstream.Consumer, q *pullQueue, n int) (int, error) {
	reconnected := e.conn.reconnectSignal()
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(taskAheadWait))
	if err != nil {
		return 0, e.taskPullFailed(ctx, cons, err)
	}
	brought := 0
	msgs := batch.Messages()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				if err := batch.Error(); err != nil {
					return brought, e.taskPullFailed(ctx, cons, err)
				}
				return brought, nil
			}
			queueTask(b, q, m)
			brought++
		case <-reconnected:
			e.stats.pullsReissued.Add(1)
			drain := func(context.Context) { queueTasks(b, q, msgs) }
			if !e.spawn(drain) {
				drain(ctx)
			}
			return brought, nil
		}
	}
}

// queueTasks queues every task msgs brings until it is closed.
func queueTasks(b binding, q *pullQueue, msgs <-chan jetstream.Msg) {
	for m := range msgs {
		queueTask(b, q, m)
	}
}

// queueTask queues task m; one the closed queue refuses is handed back with a nak.
func queueTask(b binding, q *pullQueue, m jetstream.Msg) {
	if !q.push(b.inbound(m)) {
		_ = m.Nak()
	}
}

// taskPullFailed returns err when the consumer is gone, and otherwise waits a moment (or for
// a reconnect) before the next pull.
func (e *Endpoint) taskPullFailed(ctx context.Context, cons jetstream.Consumer, err error) error {
	if consumerGone(err) {
		return err
	}
	if errors.Is(err, jetstream.ErrNoHeartbeat) {
		e.stats.pullsReissued.Add(1)
	}
	if _, ierr := cons.Info(ctx); errors.Is(ierr, jetstream.ErrConsumerNotFound) {
		return ierr
	}
	select {
	case <-ctx.Done():
	case <-e.conn.reconnectSignal():
	case <-time.After(time.Second):
	}
	return nil
}
