package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publish errors.
var (
	// ErrNotOwnSender: a message's from.id is another instance; an instance publishes only as
	// itself (SPEC §3, §12 item 2).
	ErrNotOwnSender = errors.New("message sender is not this instance")
	// ErrTooLarge: the encoded message exceeds the broker's max payload (SPEC §5).
	ErrTooLarge = errors.New("message exceeds the broker's max payload")
	// ErrStoreFull: the space's stream for this kind of message (DM or task) holds its limit
	// and refused the message; nothing stored was evicted for it. It is not retried: send
	// again once the recipients have taken what waits for them or the mesh has reclaimed room.
	ErrStoreFull = errors.New("the space's message store is full")
)

// JetStream's error codes for a message a full store refused (nats-server's
// JSStreamStoreFailedF, JSAccountResourcesExceededErr, JSInsufficientResourcesErr), which
// nats.go names no constant for.
const (
	errCodeStoreFailed      jetstream.ErrorCode = 10077
	errCodeAccountResources jetstream.ErrorCode = 10002
	errCodeNoResources      jetstream.ErrorCode = 10023
)

// storeFull wraps err in ErrStoreFull, naming the store, when it is JetStream refusing a
// message on subject because a stream or the space's storage is full.
func storeFull(subject string, err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode {
	case errCodeStoreFailed:
		// Discard new past max_bytes, max_msgs or max_msgs_per_subject ("maximum bytes
		// exceeded", ...); other store failures are not about room.
		if !strings.HasPrefix(apiErr.Description, "maximum ") {
			return err
		}
	case errCodeAccountResources, errCodeNoResources:
	default:
		return err
	}
	store := "message"
	switch {
	case strings.Contains(subject, ".inst."):
		store = "DM"
	case strings.Contains(subject, ".svc."):
		store = "task"
	}
	return fmt.Errorf("%w: the %s store refused this message, evicting nothing; send again later: %w", ErrStoreFull, store, err)
}

// Receipt says a message was stored by JetStream at Stream/Seq; it never means delivered
// (SPEC §4). Duplicate is set when the stream already held a message with this id within its
// duplicate window, so nothing new was stored.
type Receipt struct {
	ID        string
	Stream    string
	Seq       uint64
	Duplicate bool
}

// SendOption sets an optional field of a message built by Send, SendDM or SendAnycast.
type SendOption func(*wire.CotalMessage)

// WithMentions names peers to wake, lowercased (SPEC §5); on a live channel each mentioned
// peer allowed to read the channel also gets a durable copy (SPEC §4).
func WithMentions(names ...string) SendOption {
	return func(m *wire.CotalMessage) { m.Mentions = append(m.Mentions, names...) }
}

// WithReplyTo marks the message as a reply to the message with id.
func WithReplyTo(id string) SendOption { return func(m *wire.CotalMessage) { m.ReplyTo = id } }

// WithContextID sets the thread or conversation id.
func WithContextID(id string) SendOption { return func(m *wire.CotalMessage) { m.ContextID = id } }

// WithMessageID sets the message id instead of a fresh one. Resending with the same id within
// the stream's duplicate window stores nothing new (Receipt.Duplicate), which makes a retry
// after an unknown outcome safe.
func WithMessageID(id string) SendOption { return func(m *wire.CotalMessage) { m.ID = id } }

// Send multicasts parts on a concrete channel (SPEC §4) and returns where JetStream stored it.
func (e *Endpoint) Send(ctx context.Context, channel string, parts []wire.Part, opts ...SendOption) (Receipt, error) {
	return e.Publish(ctx, e.build(wire.NewChannelMessage(e.space, e.ref(), channel, parts...), opts))
}

// SendDM unicasts parts to the instance id to (SPEC §4). A to that is not an instance id, a
// user nkey public key (SPEC §2), is refused with ErrNotInstanceID; ResolveName finds the id of
// a display name.
func (e *Endpoint) SendDM(ctx context.Context, to string, parts []wire.Part, opts ...SendOption) (Receipt, error) {
	if err := e.checkDMTarget(to); err != nil {
		return Receipt{}, err
	}
	return e.Publish(ctx, e.build(wire.NewDirectMessage(e.space, e.ref(), to, parts...), opts))
}

// SendAnycast sends parts to exactly one holder of role (SPEC §4).
func (e *Endpoint) SendAnycast(ctx context.Context, role string, parts []wire.Part, opts ...SendOption) (Receipt, error) {
	return e.Publish(ctx, e.build(wire.NewServiceMessage(e.space, e.ref(), role, parts...), opts))
}

func (e *Endpoint) build(m *wire.CotalMessage, opts []SendOption) *wire.CotalMessage {
	for _, o := range opts {
		o(m)
	}
	return m
}

// Publish validates m and publishes it through JetStream with Nats-Msg-Id = m.ID on the
// subject its routing field selects, with this instance as sender (SPEC §3, §5, §8). Empty
// From, Space, ID and TS are filled in on m; a From naming another instance is refused with
// ErrNotOwnSender.
func (e *Endpoint) Publish(ctx context.Context, m *wire.CotalMessage) (Receipt, error) {
	buf := encodeBuffers.Get().(*[]byte)
	defer putEncodeBuffer(buf)
	msg, err := e.prepare(m, (*buf)[:0])
	if err != nil {
		return Receipt{}, err
	}
	// SPEC §9: a subject outside allowPublish is refused asynchronously; end the wait then.
	ctx, stop := e.violations.watch(ctx, opPublish, msg.Subject, ErrPublishRefused)
	defer stop()
	ack, err := e.publishRetrying(ctx, msg)
	if err != nil {
		return Receipt{}, fmt.Errorf("publish %s on %s: %w", m.ID, msg.Subject, storeFull(msg.Subject, refusal(ctx, err)))
	}
	*buf = msg.Data
	e.stats.published.Add(1)
	return Receipt{ID: m.ID, Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// encodeBuffers recycles the encode buffers of Publish: when PublishMsg returns, nats.go has
// copied the message into its own write buffer, so the next Publish may reuse the bytes.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer keeps one large message from pinning its buffer in the pool.
const maxPooledBuffer = 64 << 10

func putEncodeBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledBuffer {
		encodeBuffers.Put(buf)
	}
}

// publishAttempt bounds the wait for one PubAck. A publish or its acknowledgement can be lost
// while the connection is re-established (a broker restart); it is then sent again with the
// same Nats-Msg-Id, which JetStream deduplicates (SPEC §8), so a message is stored once however
// often it is retried, and the caller's context alone decides when to give up.
const publishAttempt = 2 * time.Second

func (e *Endpoint) publishRetrying(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, publishAttempt)
		ack, err := e.js.PublishMsg(actx, msg)
		cancel()
		if err == nil || ctx.Err() != nil || !retryablePublish(err) {
			return ack, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-e.conn.reconnectSignal():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// retryablePublish reports whether a publish may have been lost in transit rather than
// refused: no acknowledgement in time, or no stream listening yet after a restart.
func retryablePublish(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// prepare completes and checks m and builds its wire message, encoding it into buf, with
// Nats-Msg-Id = m.ID (SPEC §8). The header is set here rather than by a nats.go publish
// option, which costs a closure and an options struct per message.
func (e *Endpoint) prepare(m *wire.CotalMessage, buf []byte) (*nats.Msg, error) {
	switch {
	case m.From.ID == "":
		m.From = e.ref()
	case m.From.ID != e.id:
		return nil, fmt.Errorf("%w: from.id is %s, this instance is %s", ErrNotOwnSender, m.From.ID, e.id)
	}
	if m.Space == "" {
		m.Space = e.space
	} else if m.Space != e.space {
		return nil, fmt.Errorf("%w: space %q, this instance is in %q", wire.ErrInvalidMessage, m.Space, e.space)
	}
	if m.ID == "" {
		m.ID = wire.NewMessageID()
	}
	if m.TS == 0 {
		m.TS = time.Now().UnixMilli()
	}
	m.Mentions = wire.NormalizeMentions(m.Mentions)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	subject, err := e.subjectFor(m)
	if err != nil {
		return nil, err
	}
	data, err := m.AppendJSON(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", wire.ErrInvalidMessage, err)
	}
	if max := e.nc.MaxPayload(); max > 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %d bytes, the broker accepts %d", ErrTooLarge, len(data), max)
	}
	return &nats.Msg{Subject: subject, Data: data, Header: nats.Header{jetstream.MsgIDHeader: {m.ID}}}, nil
}

// subjectFor builds the delivery subject of m with this instance's id as sender (SPEC §3).
// A unicast target or anycast role must already be a routing token: sanitizing it here would
// silently address someone else.
func (e *Endpoint) subjectFor(m *wire.CotalMessage) (string, error) {
	switch {
	case m.Channel != "":
		return e.names.ChatSubject(e.id, m.Channel), nil
	case m.To != "":
		if !wire.IsToken(m.To) {
			return "", fmt.Errorf("%w: to %q is not an instance id", wire.ErrInvalidMessage, m.To)
		}
		return e.names.InstSubject(m.To, e.id), nil
	default:
		if !wire.IsToken(m.ToService) {
			return "", fmt.Errorf("%w: toService %q has characters outside [A-Za-z0-9_-]", wire.ErrInvalidMessage, m.ToService)
		}
		return e.names.SvcSubject(m.ToService, e.id), nil
	}
}

// ErrTooManyPending: Options.MaxPendingAsync asynchronous sends await their acknowledgement
// and none was acknowledged within nats.go's stall wait (200 ms); wait on earlier receipts
// before sending more.
var ErrTooManyPending = errors.New("too many asynchronous sends await their acknowledgement")

// asyncAckWait bounds the wait for the acknowledgement of an asynchronous send. A send the
// broker refuses is never acknowledged; without a bound it would hold its place under
// Options.MaxPendingAsync for the rest of the connection.
const asyncAckWait = 30 * time.Second

// PendingReceipt is the outcome of an asynchronous send. Done is closed once JetStream has
// stored the message or it is known not to be; Err and Receipt then say which. Select on Done
// to keep a bounded window of sends in flight.
type PendingReceipt struct {
	id      string
	subject string // the send's subject, which a refusal names (SPEC §9)

	mu      sync.Mutex
	settled bool
	// done is made when first asked for, so a send whose outcome is known before anyone
	// waits on it costs no channel.
	done    chan struct{}
	receipt Receipt
	err     error
}

// closedDone is the Done of every receipt settled before its Done was asked for.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// ID is the id of the message being sent.
func (p *PendingReceipt) ID() string { return p.id }

// Done is closed once the outcome is known.
func (p *PendingReceipt) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		if p.settled {
			return closedDone
		}
		p.done = make(chan struct{})
	}
	return p.done
}

// outcome is the receipt and error, and whether they are known yet.
func (p *PendingReceipt) outcome() (Receipt, error, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.receipt, p.err, p.settled
}

// Err is nil until Done is closed, and then nil if JetStream stored the message, or why it did
// not: a refused or rejected message (ErrPublishRefused, ErrStoreFull), a connection lost
// before the acknowledgement or none within 30 s (nats.ErrDisconnected,
// jetstream.ErrAsyncPublishTimeout: the outcome is unknown, send again with WithMessageID and
// the same id), or ErrClosed.
func (p *PendingReceipt) Err() error {
	_, err, _ := p.outcome()
	return err
}

// Receipt is where JetStream stored the message once Done is closed and Err is nil; the zero
// Receipt before.
func (p *PendingReceipt) Receipt() Receipt {
	r, _, _ := p.outcome()
	return r
}

// Wait returns the Receipt once the outcome is known, or ctx's error first.
func (p *PendingReceipt) Wait(ctx context.Context) (Receipt, error) {
	if r, err, ok := p.outcome(); ok {
		return r, err
	}
	select {
	case <-p.Done():
		r, err, _ := p.outcome()
		return r, err
	case <-ctx.Done():
		return Receipt{}, fmt.Errorf("publish %s: %w", p.id, ctx.Err())
	}
}

// settle ends p with receipt or err.
func (p *PendingReceipt) settle(receipt Receipt, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.err = fmt.Errorf("publish %s on %s: %w", p.id, p.subject, err)
	} else {
		p.receipt = receipt
	}
	p.settled = true
	if p.done != nil {
		close(p.done)
	}
}

// SendAsync is Send without waiting for the acknowledgement: it returns once the message is
// handed to the connection. At most Options.MaxPendingAsync sends await their acknowledgement;
// past that a send waits briefly for room and then fails with ErrTooManyPending.
func (e *Endpoint) SendAsync(channel string, parts []wire.Part, opts ...SendOption) (*PendingReceipt, error) {
	return e.publishAsync(e.build(wire.NewChannelMessage(e.space, e.ref(), channel, parts...), opts))
}

// SendDMAsync is SendDM without waiting for the acknowledgement, as SendAsync.
func (e *Endpoint) SendDMAsync(to string, parts []wire.Part, opts ...SendOption) (*PendingReceipt, error) {
	if err := e.checkDMTarget(to); err != nil {
		return nil, err
	}
	return e.publishAsync(e.build(wire.NewDirectMessage(e.space, e.ref(), to, parts...), opts))
}

// SendAnycastAsync is SendAnycast without waiting for the acknowledgement, as SendAsync.
func (e *Endpoint) SendAnycastAsync(role string, parts []wire.Part, opts ...SendOption) (*PendingReceipt, error) {
	return e.publishAsync(e.build(wire.NewServiceMessage(e.space, e.ref(), role, parts...), opts))
}

// publishAsync publishes m; its receipt is settled by the JetStream context's callbacks
// (asyncsend.go), by the broker's refusal of the subject (SPEC §9), or by the Endpoint's close.
func (e *Endpoint) publishAsync(m *wire.CotalMessage) (*PendingReceipt, error) {
	// JetStream keeps an asynchronous message until its acknowledgement, so it gets its own
	// buffer.
	msg, err := e.prepare(m, nil)
	if err != nil {
		return nil, err
	}
	p := &PendingReceipt{id: m.ID, subject: msg.Subject}
	if !e.async.add(msg, p) {
		return nil, fmt.Errorf("publish %s: %w", m.ID, ErrClosed)
	}
	if _, err := e.js.PublishMsgAsync(msg); err != nil {
		e.async.take(msg)
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			err = fmt.Errorf("%w (%d; Options.MaxPendingAsync): %w", ErrTooManyPending, e.opts.MaxPendingAsync, err)
		}
		return nil, fmt.Errorf("publish %s on %s: %w", m.ID, msg.Subject, err)
	}
	return p, nil
}
