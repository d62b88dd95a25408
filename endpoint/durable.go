package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/wire"
)

// durableJoinTimeout bounds the durable-join request inside Join: without a delivery service
// the live join must not wait long (SPEC §7: the live join never depends on it).
const durableJoinTimeout = 2 * time.Second

// durableRetryMax caps the background retry of an unavailable durable backstop.
const durableRetryMax = time.Minute

// requestDurable asks the delivery service for durable membership of name (SPEC §7). It
// returns the generation when established, and otherwise why not.
func (e *Endpoint) requestDurable(ctx context.Context, name string) (gen uint64, ok bool, reason string) {
	ctx, cancel := context.WithTimeout(ctx, min(durableJoinTimeout, e.opts.ControlTimeout))
	defer cancel()
	r, err := e.Request(ctx, wire.DeliveryService, wire.OpDurableJoin, wire.DurableJoinArgs{Channel: name})
	if err != nil {
		return 0, false, err.Error()
	}
	var d wire.DurableJoinReply
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return 0, false, fmt.Sprintf("%s reply data: %v", wire.OpDurableJoin, err)
	}
	if !d.Durable {
		if d.Reason == "" {
			d.Reason = "the delivery service declined without a reason"
		}
		return 0, false, d.Reason
	}
	return d.Generation, true, ""
}

// durableLeave ends the durable membership of generation gen (docs/storage.md "Control
// service").
func (e *Endpoint) durableLeave(ctx context.Context, name string, gen uint64) error {
	_, err := e.Request(ctx, wire.DeliveryService, wire.OpDurableLeave,
		wire.DurableLeaveArgs{Channel: name, Generation: gen})
	return err
}

// establishDurable makes the first durable-join attempt inside Join.
func (e *Endpoint) establishDurable(ctx context.Context, name string) (JoinState, uint64, string) {
	gen, ok, reason := e.requestDurable(ctx, name)
	if ok {
		return JoinedDurable, gen, ""
	}
	e.log.Warn("durable channel joined live only; retrying the backstop in the background",
		"channel", name, "reason", reason)
	e.emit(Event{Kind: EventDurableUnavailable, Channel: name, Err: errors.New(reason)})
	return JoinedLiveBackstopUnavailable, 0, reason
}

// startDurableRetry retries durable membership with capped backoff until it is established,
// the channel is left, or the Endpoint closes (SPEC §7: the shortfall is never silent, and
// the live subscription stays). e.joins.mu is held.
func (e *Endpoint) startDurableRetry(name string, j *joined) {
	ctx, cancel := context.WithCancel(e.ctx)
	j.stopRetry, j.retryDone = cancel, make(chan struct{})
	done := j.retryDone
	started := e.spawn(func(context.Context) {
		defer close(done)
		e.retryDurable(ctx, name, j)
	})
	if !started {
		cancel()
		close(done)
	}
}

func (e *Endpoint) retryDurable(ctx context.Context, name string, j *joined) {
	b := retry.NewBackoff(time.Second, durableRetryMax)
	for b.Wait(ctx) {
		gen, ok, reason := e.requestDurable(ctx, name)
		if !ok {
			e.log.Debug("durable backstop still unavailable", "channel", name, "reason", reason)
			continue
		}
		e.joins.mu.Lock()
		j.durable, j.generation = true, gen
		j.result.State, j.result.Reason = JoinedDurable, ""
		e.joins.mu.Unlock()
		e.log.Info("durable backstop established", "channel", name)
		e.emit(Event{Kind: EventDurableEstablished, Channel: name})
		return
	}
}
