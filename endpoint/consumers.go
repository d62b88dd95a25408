package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/retry"
)

// Binding timing: how often a missing consumer is looked up again, and how often a bound one
// is checked for having vanished. A reconnect and missed idle heartbeats also trigger a check,
// so the periodic one is a slow backstop: each check is a JetStream API request, and a process
// of a thousand idle Endpoints would otherwise spend its CPU on them.
const (
	bindRetryMax   = 30 * time.Second
	bindCheckEvery = time.Minute
	// consumeStopWait bounds the wait for a stopped Consume to wind down.
	consumeStopWait = 15 * time.Second
	// pullHeartbeat is the idle heartbeat every pull asks of the broker. A pull request or its
	// status answer lost on the way (docs/durable.md "Pulls that go missing") leaves the
	// client counting copies the broker no longer owes it: no copy and no heartbeat comes, and
	// only a missed heartbeat, after twice this interval, makes nats.go ask again. Its default
	// (half the 30 s expiry) let a consumer sit 30 s with no pull open; 2 s bounds that at 4 s
	// for one small status message per idle pull every 2 s.
	pullHeartbeat = 2 * time.Second
)

// binding is one provisioner-created durable the Endpoint binds and never creates (SPEC §8,
// §9 item 3): dm_<id>, svc_<role>, dlv_<id>.
type binding struct {
	src      source
	stream   string
	consumer string
	state    *bindState
}

// inbound is m as the receive pipeline takes it; a durable copy carries its Nats-Msg-Id, by
// which a copy already surfaced live is found undecoded.
func (b binding) inbound(m jetstream.Msg) inbound {
	in := inbound{src: b.src, subject: m.Subject(), data: m.Data(), msg: m}
	if b.src == srcDurable {
		in.msgID = m.Headers().Get(nats.MsgIdHdr)
	}
	return in
}

// bindState is what the rest of the Endpoint knows of a binding: Connect waits for it to
// settle, Backlog reports whether it is bound.
type bindState struct {
	settled chan struct{} // closed once the first attempt bound it or found it missing
	once    sync.Once
	bound   atomic.Bool // consuming now
}

func newBindState() *bindState { return &bindState{settled: make(chan struct{})} }

func (s *bindState) settle() { s.once.Do(func() { close(s.settled) }) }

// bindings lists the durables of this instance: DMs always, durable copies always, anycasts
// only with a role (SPEC §8; docs/storage.md "Consumers").
func (e *Endpoint) bindings() []binding {
	b := []binding{
		{srcDM, e.names.DMStream(), e.names.DMConsumer(e.id), newBindState()},
		{srcDurable, e.names.DLVStream(), e.names.DLVConsumer(e.id), newBindState()},
	}
	if e.role != "" {
		b = append(b, binding{srcAnycast, e.names.TaskStream(), e.names.SvcConsumer(e.role), newBindState()})
	}
	return b
}

// startBindings binds every durable of this instance and waits, within ctx, until each is
// consuming or found missing (reported with EventConsumerMissing).
func (e *Endpoint) startBindings(ctx context.Context) error {
	e.binds = e.bindings()
	for _, b := range e.binds {
		e.spawn(func(ctx context.Context) { e.runBinding(ctx, b) })
	}
	for _, b := range e.binds {
		select {
		case <-b.state.settled:
		case <-ctx.Done():
			return fmt.Errorf("bind %s: %w", b.consumer, ctx.Err())
		}
	}
	return nil
}

// runBinding binds b and consumes it until ctx ends. A consumer that does not exist yet is
// reported once and looked up again with capped backoff; a consumer lost later (deleted, or
// gone after a reconnect) is bound again.
func (e *Endpoint) runBinding(ctx context.Context, b binding) {
	defer b.state.settle() // Close before the first attempt ended
	backoff := retry.NewBackoff(time.Second, bindRetryMax)
	missing := false
	for ctx.Err() == nil {
		cons, err := e.js.Consumer(ctx, b.stream, b.consumer)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !missing {
				missing = true
				e.reportMissing(b, err)
			}
			b.state.settle()
			backoff.Wait(ctx)
			continue
		}
		if missing {
			e.log.Info("bound consumer", "consumer", b.consumer, "stream", b.stream)
		}
		missing = false
		backoff.Reset()
		e.emit(Event{Kind: EventConsumerBound, Consumer: b.consumer})
		if b.src == srcAnycast {
			err = e.pullTasks(ctx, b, cons)
		} else {
			err = e.consume(ctx, b, cons)
		}
		b.state.settle() // bound, or failed to start: either way no longer pending
		if err != nil && ctx.Err() == nil {
			e.log.Warn("lost consumer; binding again", "consumer", b.consumer, "err", err)
			backoff.Wait(ctx)
		}
	}
}

func (e *Endpoint) reportMissing(b binding, err error) {
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		e.log.Warn("bind-only consumer does not exist yet; the mesh creates it for an active agent "+
			"(at mint while it runs, else at its next start); retrying", "consumer", b.consumer, "stream", b.stream)
	} else {
		e.log.Warn("cannot bind consumer; retrying", "consumer", b.consumer, "stream", b.stream, "err", err)
	}
	e.emit(Event{Kind: EventConsumerMissing, Consumer: b.consumer, Err: err})
}

// consume pulls an owner's consumer (dm_<id>, dlv_<id>) into the receive pipeline until ctx
// ends or the consumer is lost. It checks the consumer after every reconnect, when idle
// heartbeats stop and every bindCheckEvery, because a pull consumer deleted while the
// connection was down is not noticed otherwise.
func (e *Endpoint) consume(ctx context.Context, b binding, cons jetstream.Consumer) error {
	lost := make(chan error, 1)
	silent := make(chan struct{}, 1)
	deliver, finish := e.deliverer(cons)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		deliver(b.inbound(m))
	}, append(e.pullOptions(), jetstream.ConsumeErrHandler(consumeErrors(lost, silent)))...)
	if err != nil {
		finish()
		return err
	}
	b.state.bound.Store(true)
	b.state.settle()
	defer func() {
		b.state.bound.Store(false)
		stop(ctx, cc, e.nc.IsConnected())
		select {
		case <-cc.Closed():
		case <-time.After(consumeStopWait):
			e.log.Warn("consumer did not stop in time", "consumer", b.consumer)
		}
		finish()
	}()
	check := time.NewTicker(bindCheckEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lost:
			return err
		case <-e.conn.reconnectSignal():
			e.stats.pullsReissued.Add(1) // nats.go pulls afresh on every reconnect
		case <-silent:
			e.stats.pullsReissued.Add(1) // and after every missed heartbeat
		case <-check.C:
		}
		if _, err := cons.Info(ctx); errors.Is(err, jetstream.ErrConsumerNotFound) {
			return err
		}
	}
}

// pullOptions sizes an owner's pulls: large batches with a byte cap, and pullHeartbeat.
func (e *Endpoint) pullOptions() []jetstream.PullConsumeOpt {
	limit := max(ownerPullBytes, 2*int(e.nc.MaxPayload()))
	return []jetstream.PullConsumeOpt{jetstream.PullMaxMessagesWithBytesLimit(ownerBatch, limit),
		jetstream.PullHeartbeat(pullHeartbeat)}
}

// consumeErrors routes a Consume's errors: a consumer gone to lost, missed heartbeats (after
// which nats.go has already pulled again) to silent.
func consumeErrors(lost chan<- error, silent chan<- struct{}) jetstream.ConsumeErrHandler {
	return func(_ jetstream.ConsumeContext, err error) {
		switch {
		case consumerGone(err):
			select {
			case lost <- err:
			default:
			}
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			select {
			case silent <- struct{}{}:
			default:
			}
		}
	}
}

// stop ends a Consume. At Close (ctx ended) on a live connection it drains: the copies
// already pulled are handed to receive, which naks them, so none waits out its ack wait
// and the connection can close without draining. Otherwise it stops: the consumer is gone or
// out of reach, and what it had pulled is redelivered after its ack wait.
func stop(ctx context.Context, cc jetstream.ConsumeContext, connected bool) {
	if ctx.Err() != nil && connected {
		cc.Drain()
		return
	}
	cc.Stop()
}

// consumerGone reports whether a pull ended because its consumer was deleted or is not there:
// the binding must be looked up again.
func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound)
}
