package endpoint

import (
	"context"
	"errors"
	"fmt"
	"github.com/cotal-go/cotal/wire"
	"slices"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Join errors.
var (
	// ErrJoinRefused: the broker refused the channel subscription; the channel is outside the
	// credential's read ACL (SPEC §7, §9).
	ErrJoinRefused = errors.New("broker refused the channel subscription")
	// ErrNotJoined: Leave of a channel that is not joined.
	ErrNotJoined = errors.New("channel is not joined")
	// ErrJoinInProgress: another Join of the same channel has not finished.
	ErrJoinInProgress = errors.New("a join of this channel is in progress")
)

// JoinState is the delivery state a join reached (SPEC §7).
type JoinState string

// The join states of SPEC §7. A durable channel whose backstop could not be established is
// JoinedLiveBackstopUnavailable, never JoinedDurable.
const (
	JoinedLive                    JoinState = "joined live"
	JoinedDurable                 JoinState = "joined durable"
	JoinedLiveBackstopUnavailable JoinState = "joined live, durable backstop unavailable"
)

// JoinResult reports a join (SPEC §7).
type JoinResult struct {
	// Channel is the joined channel in its sanitized wire form.
	Channel string
	// State is the delivery state reached.
	State JoinState
	// Class is the channel's effective delivery class (SPEC §7).
	Class wire.DeliveryClass
	// Watermark is the CHAT frontier taken before the subscription became active.
	Watermark uint64
	// Backfilled counts history copies surfaced with Historical set.
	Backfilled int
	// BackfillErr says why history could not be read; the live join stands regardless.
	BackfillErr error
	// Reason says why the durable backstop is unavailable, with JoinedLiveBackstopUnavailable.
	Reason string
}

// joined is one channel in the joined set.
type joined struct {
	result     JoinResult
	sub        *nats.Subscription
	joining    bool  // Join has not finished
	refused    error // a refusal that arrived while joining
	durable    bool  // membership established: Leave must send durableLeave
	generation uint64
	stopRetry  context.CancelFunc // ends the background durable-join retry
	retryDone  chan struct{}
}

// joinState is the joined set. mu is never held across network calls.
type joinState struct {
	mu       sync.Mutex
	channels map[string]*joined
}

// Join joins a concrete channel (SPEC §7): it takes the CHAT frontier as watermark, subscribes
// to the channel's live subject and waits until the broker accepted the subscription, backfills
// history up to the watermark when replay is on (surfaced with Historical set and deduplicated
// against the live copies), and on a durable channel asks the delivery service for durable
// membership. A refused subscription fails with ErrJoinRefused. Joining a joined channel
// returns its current state.
func (e *Endpoint) Join(ctx context.Context, channel string) (JoinResult, error) {
	if err := wire.ValidatePublishChannel(channel); err != nil {
		return JoinResult{}, fmt.Errorf("join: %w", err)
	}
	name := wire.SanitizeChannel(channel)
	j, existing, err := e.joins.begin(name)
	if err != nil || existing {
		return j.result, err
	}
	res, err := e.join(ctx, name, j)
	if err != nil {
		e.joins.remove(name, j)
		if j.sub != nil {
			_ = j.sub.Unsubscribe()
		}
		return JoinResult{}, err
	}
	return res, nil
}

// begin registers a join of name, or reports the channel as already joined.
func (s *joinState) begin(name string) (j *joined, existing bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channels == nil {
		s.channels = make(map[string]*joined)
	}
	if j, ok := s.channels[name]; ok {
		if j.joining {
			return &joined{}, false, fmt.Errorf("%w: %s", ErrJoinInProgress, name)
		}
		res := j.result
		res.Backfilled, res.BackfillErr = 0, nil
		return &joined{result: res}, true, nil
	}
	j = &joined{joining: true, result: JoinResult{Channel: name}}
	s.channels[name] = j
	return j, false, nil
}

// remove drops name from the joined set if it is still j.
func (s *joinState) remove(name string, j *joined) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channels[name] == j {
		delete(s.channels, name)
	}
}

func (e *Endpoint) join(ctx context.Context, name string, j *joined) (JoinResult, error) {
	cfg, defaults, err := e.channelConfig(ctx, name)
	if err != nil {
		return JoinResult{}, err
	}
	res := JoinResult{Channel: name, Class: wire.EffectiveClass(cfg, defaults)}
	// SPEC §7 step 1: the watermark is taken before the subscription is active.
	if res.Watermark, err = e.chatFrontier(ctx); err != nil {
		return JoinResult{}, err
	}
	if err := e.subscribeLive(ctx, name, j); err != nil {
		return JoinResult{}, err
	}
	if wire.EffectiveReplay(cfg, defaults) && res.Watermark > 0 {
		res.Backfilled, res.BackfillErr = e.backfill(ctx, name, res.Watermark, wire.EffectiveReplayWindow(cfg, defaults))
		if res.BackfillErr != nil {
			e.log.Warn("join: history unavailable; joined live without backfill", "channel", name, "err", res.BackfillErr)
		}
	}
	res.State = JoinedLive
	var gen uint64
	if res.Class == wire.DeliveryDurable && !e.passive {
		res.State, gen, res.Reason = e.establishDurable(ctx, name)
	}
	e.joins.mu.Lock()
	refused := j.refused
	if refused == nil {
		j.joining, j.result = false, res
		j.durable, j.generation = res.State == JoinedDurable, gen
		if res.State == JoinedLiveBackstopUnavailable {
			e.startDurableRetry(name, j)
		}
	}
	e.joins.mu.Unlock()
	if refused == nil {
		return res, nil
	}
	// SPEC §7: a durable join is atomic; a refused subscribe removes the membership.
	if err := e.endMembership(ctx, name, res.Class, res.State == JoinedDurable, gen); err != nil {
		e.log.Warn("could not remove the membership of a refused join", "channel", name, "err", err)
	}
	return JoinResult{}, fmt.Errorf("%w: %s: %v", ErrJoinRefused, name, refused)
}

// channelConfig reads the channel's registry entry and the space defaults (SPEC §7) through KV
// Get, which uses STREAM.MSG.GET, the only read agents hold on the registry (Appendix B), each
// read asked again when its answer is lost (retryRead). A missing key is no config. A value
// that does not decode is ignored and logged: it may be a JetStream reply written through an
// injected reply subject (docs/hostile-agents.md "Reply subjects are the requester's").
func (e *Endpoint) channelConfig(ctx context.Context, name string) (*wire.ChannelConfig, *wire.ChannelDefaults, error) {
	raw := func(key string) ([]byte, error) {
		var entry jetstream.KeyValueEntry
		err := retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
			entry, err = e.channelsKV.Get(ctx, key)
			return err
		})
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("join %s: read channel registry key %q: %w", name, key, err)
		}
		return entry.Value(), nil
	}
	var cfg *wire.ChannelConfig
	var defaults *wire.ChannelDefaults
	data, err := raw(name)
	if err != nil {
		return nil, nil, err
	}
	if data != nil {
		if cfg, err = wire.DecodeChannelConfig(data); err != nil {
			e.log.Warn("ignoring an invalid channel registry entry", "channel", name, "err", err)
		}
	}
	if data, err = raw(wire.DefaultsKey); err != nil {
		return nil, nil, err
	}
	if data != nil {
		if defaults, err = wire.DecodeChannelDefaults(data); err != nil {
			e.log.Warn("ignoring invalid channel defaults", "err", err)
		}
	}
	return cfg, defaults, nil
}

// chatFrontier is the CHAT stream's last sequence (SPEC §7 step 1), asked again when the
// answer is lost (retryRead): on a cluster, a stream info sent while the stream elects a
// leader is never answered, and the join would wait out its caller's whole deadline.
func (e *Endpoint) chatFrontier(ctx context.Context) (uint64, error) {
	var s jetstream.Stream
	err := retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
		s, err = e.js.Stream(ctx, e.names.ChatStream())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read the CHAT frontier of %s: %w", e.names.ChatStream(), err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// subscribeLive subscribes to ChatFilter(name) and returns once the broker accepted the
// subscription (SPEC §7 step 2, §12 item 13). The broker handles SUB before the flush PING and
// sends a refusal before the PONG, and the client records it before the flush returns, so a
// refusal is known when the flush returns: no fixed wait (docs/durable.md "Joining").
func (e *Endpoint) subscribeLive(ctx context.Context, name string, j *joined) error {
	subject := e.names.ChatFilter(name)
	before := e.nc.LastError()
	sub, err := e.nc.Subscribe(subject, func(m *nats.Msg) {
		e.receive(inbound{src: srcLive, subject: m.Subject, data: m.Data, msgID: m.Header.Get(nats.MsgIdHdr),
			filter: subject, reply: m.Reply})
	})
	if err != nil {
		return fmt.Errorf("join %s: subscribe: %w", name, err)
	}
	j.sub = sub
	if _, ok := ctx.Deadline(); !ok {
		// FlushWithContext refuses a context without a deadline; bound it like a control request.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.ControlTimeout)
		defer cancel()
	}
	if err := e.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("join %s: confirm subscription: %w", name, err)
	}
	if after := e.nc.LastError(); after != before {
		if op, refused, ok := parseViolation(after); ok && op == opSubscribe && refused == subject {
			return fmt.Errorf("%w: %s is outside this credential's read ACL", ErrJoinRefused, name)
		}
	}
	e.joins.mu.Lock()
	defer e.joins.mu.Unlock()
	if j.refused != nil {
		return fmt.Errorf("%w: %s is outside this credential's read ACL", ErrJoinRefused, name)
	}
	return nil
}

// refuseLate handles a subscription refusal the broker sent asynchronously: a join still in
// progress fails, a finished one is dropped from the joined set and reported (SPEC §7).
func (e *Endpoint) refuseLate(subject string, err error) {
	e.joins.mu.Lock()
	var name string
	var j *joined
	for n, c := range e.joins.channels {
		if e.names.ChatFilter(n) == subject {
			name, j = n, c
		}
	}
	if j == nil {
		e.joins.mu.Unlock()
		e.log.Warn("broker refused a subscription", "subject", subject, "err", err)
		return
	}
	if j.joining {
		j.refused = err
		e.joins.mu.Unlock()
		return
	}
	delete(e.joins.channels, name)
	e.joins.mu.Unlock()
	e.log.Error("broker refused a joined channel; it is no longer joined", "channel", name, "err", err)
	e.emit(Event{Kind: EventJoinRefused, Channel: name, Err: err})
	e.spawn(func(ctx context.Context) {
		// SPEC §7: on a late refusal the durable membership must be removed too.
		if err := e.leaveJoined(ctx, name, j); err != nil {
			e.log.Warn("leave after a refused join", "channel", name, "err", err)
		}
	})
}

// Leave leaves a joined channel (SPEC §7): on a durable channel it first asks the delivery
// service to end the membership (durableLeave, which makes the leave a hard boundary for the
// backstop), then unsubscribes. The live subscription ends even when durableLeave fails; the
// error then says the backstop may still deliver.
func (e *Endpoint) Leave(ctx context.Context, channel string) error {
	name := wire.SanitizeChannel(channel)
	e.joins.mu.Lock()
	j, ok := e.joins.channels[name]
	if !ok || j.joining {
		e.joins.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotJoined, name)
	}
	delete(e.joins.channels, name)
	e.joins.mu.Unlock()
	return e.leaveJoined(ctx, name, j)
}

// leaveJoined ends a channel that already left the joined set: retry, membership, subscription.
func (e *Endpoint) leaveJoined(ctx context.Context, name string, j *joined) error {
	if j.stopRetry != nil {
		j.stopRetry()
		<-j.retryDone
	}
	var errs []error
	e.joins.mu.Lock()
	durable, gen, class := j.durable, j.generation, j.result.Class
	e.joins.mu.Unlock()
	if err := e.endMembership(ctx, name, class, durable, gen); err != nil {
		errs = append(errs, err)
	}
	if err := j.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		errs = append(errs, fmt.Errorf("leave %s: unsubscribe: %w", name, err))
	}
	return errors.Join(errs...)
}

// endMembership ends the durable membership of a channel being left (SPEC §7: leave is a hard
// read boundary for the backstop). A confirmed membership is ended by its generation. On a
// durable channel an unconfirmed one is ended too, with generation 0, the current one if any:
// a durableJoin whose reply timed out, or a retry this leave cancelled, may have established a
// membership the Endpoint never learned of. Only when no delivery service answers at all can
// there be none; any other failure means a membership may remain and is returned.
func (e *Endpoint) endMembership(ctx context.Context, name string, class wire.DeliveryClass, confirmed bool, gen uint64) error {
	if e.passive || (!confirmed && class != wire.DeliveryDurable) {
		return nil
	}
	if !confirmed {
		gen = 0
	}
	err := e.durableLeave(ctx, name, gen)
	if err == nil || (!confirmed && errors.Is(err, ErrNoResponders)) {
		return nil
	}
	return fmt.Errorf("leave %s: durable membership may remain: %w", name, err)
}

// Joined lists the joined channels, sorted, in their sanitized wire form.
func (e *Endpoint) Joined() []string {
	e.joins.mu.Lock()
	defer e.joins.mu.Unlock()
	out := make([]string, 0, len(e.joins.channels))
	for n, j := range e.joins.channels {
		if !j.joining {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// JoinStatus returns the current state of a joined channel; it changes when a background retry
// establishes the durable backstop.
func (e *Endpoint) JoinStatus(channel string) (JoinResult, bool) {
	e.joins.mu.Lock()
	defer e.joins.mu.Unlock()
	j, ok := e.joins.channels[wire.SanitizeChannel(channel)]
	if !ok || j.joining {
		return JoinResult{}, false
	}
	return j.result, true
}
