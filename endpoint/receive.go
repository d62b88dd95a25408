package endpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/wire"

	"github.com/nats-io/nats.go/jetstream"
)

// MetaKind is how a delivery was addressed to this instance, derived from the delivering
// subject's kind and never from payload routing fields (SPEC §4): chat → channel, inst → dm,
// svc → anycast.
type MetaKind string

// The delivery kinds of SPEC §4.
const (
	MetaChannel MetaKind = "channel"
	MetaDM      MetaKind = "dm"
	MetaAnycast MetaKind = "anycast"
)

// Meta describes how a message reached this instance (SPEC §4, §7; the reference's
// MessageMeta).
type Meta struct {
	// Kind is derived from the subject the copy was delivered on.
	Kind MetaKind
	// Historical marks a backfill copy read on join (SPEC §7 step 4).
	Historical bool
	// Durable marks a copy from the durable backstop (dlv_<id>, docs/durable.md "DLV
	// hand-over").
	Durable bool
	// Channel is the channel of a channel delivery, in its sanitized wire form.
	Channel string
	// Subject is the subject the message was published on.
	Subject string
	// Redelivered is true for a JetStream copy delivered before and not acknowledged.
	Redelivered bool
	// Seq is the CHAT stream sequence of a copy read by History; 0 on every other path.
	Seq uint64
}

// Delivery is one message surfaced to the Handler.
type Delivery struct {
	Message *wire.CotalMessage
	Meta    Meta
}

// Handler receives every delivery of every path: live channel copies, backfill, DMs, anycasts
// and durable copies (SPEC §4). Returning nil acknowledges a JetStream copy (DM, anycast,
// durable); returning an error naks it so it is redelivered later, and lets a later copy of
// the same message surface again. Live and backfill copies are not redelivered (SPEC §4, §8).
//
// Each path calls the Handler from its own goroutine, so a Handler must be safe for concurrent
// use. It may call any Endpoint method, including Join. ctx ends when the Endpoint closes.
type Handler func(ctx context.Context, d Delivery) error

// source is the path a copy arrived on; it fixes which subject kind the copy may carry.
type source int

const (
	srcLive    source = iota // core subscription on ChatFilter(channel)
	srcHistory               // chathist_<id> backfill, ack none
	srcDM                    // dm_<id> on DM_<s>
	srcAnycast               // svc_<role> on TASK_<s>
	srcDurable               // dlv_<id> on DLV_<s>
	srcFollow                // Follow's core subscriptions, any kind (see checkFollow)
)

func (s source) String() string {
	return [...]string{"live", "history", "dm", "anycast", "durable", "follow"}[s]
}

// kind is the subject kind a copy on this path must carry; durable copies carry none (their
// subject is cotal.<s>.dlv.<id>, see checkDurable).
func (s source) kind() wire.Kind {
	switch s {
	case srcLive, srcHistory:
		return wire.KindChat
	case srcDM:
		return wire.KindInst
	case srcAnycast:
		return wire.KindSvc
	}
	return ""
}

// inbound is one copy entering the receive pipeline.
type inbound struct {
	src     source
	subject string
	data    []byte
	msg     jetstream.Msg // the JetStream copy to ack, nak or term; nil for live and history
	seq     uint64        // the CHAT stream sequence of a history copy
	// msgID is the copy's Nats-Msg-Id header: <id> on a chat copy, <id>:<member> on a DLV
	// copy. It only finds a candidate for duplicateCopy and is never trusted (see there).
	msgID string
	// redelivered is read from msg's metadata once, by receive: parsing it is per copy work.
	redelivered bool
	// filter is the subject of the subscription a live copy arrived on, and reply its reply
	// subject; empty on the other paths.
	filter, reply string
	// queued marks a copy a pullQueue served, which keeps it in progress while it is handled.
	queued bool
}

// Handle sets the Handler, replacing any earlier one. Set Options.Handler instead to receive
// from the first message on: copies arriving while no Handler is set are counted as Unhandled,
// JetStream ones nak'd for later, live ones lost.
func (e *Endpoint) Handle(h Handler) {
	e.handler.Store(&h)
}

// outcome is what the pipeline did with one copy.
type outcome int

const (
	outSurfaced outcome = iota // handed to the Handler, which returned nil
	outDropped                 // a duplicate or an own echo, not surfaced
	outRejected                // a permanent anomaly, terminated
	outFailed                  // the Handler failed, none was set, or Close had begun
)

// receive is the one receive pipeline every copy goes through (SPEC §4, §5, §8):
// check → own-echo filter → dedup → surface → ack, nak or term.
func (e *Endpoint) receive(in inbound) outcome {
	if e.ctx.Err() != nil {
		// Close has begun: nothing more is surfaced. A JetStream copy goes back to its
		// consumer now, not after its ack wait; a live copy is dropped (at most once, SPEC §4).
		if in.msg != nil {
			e.nak(in, 0)
		}
		return outFailed
	}
	in.redelivered = redelivered(in.msg)
	if in.redelivered {
		e.stats.redeliveries.Add(1)
	}
	if e.duplicateCopy(in) {
		e.stats.duplicates.Add(1)
		e.stats.uncheckedDuplicates.Add(1)
		e.ack(in) // as for a duplicate below: nothing redelivers it
		return outDropped
	}
	m, meta, err := e.check(in)
	if err != nil {
		e.reject(in, err)
		return outRejected
	}
	sender := sanitize(m.From.ID)
	if meta.Kind == MetaChannel && sender == sanitize(e.id) && !e.opts.EchoOwn {
		e.stats.ownEchoes.Add(1)
		e.ack(in)
		return outDropped
	}
	key := dedupKey{sender: sender, id: m.ID}
	switch e.dedup.claim(key) {
	case claimDone:
		e.stats.duplicates.Add(1)
		e.ack(in) // SPEC §4: the durable copy owns the commit; a handled id is acked, not surfaced.
		return outDropped
	case claimInFlight:
		// Another copy is in the Handler now. A JetStream copy waits for its outcome: acking it
		// would lose the message if that Handler fails.
		if in.msg != nil {
			e.nak(in, time.Second)
			return outFailed
		}
		e.stats.duplicates.Add(1)
		return outDropped
	}
	err = e.surface(Delivery{Message: m, Meta: meta}, in)
	if meta.Kind == MetaChannel {
		// A channel message has copies on several paths (live, backfill, durable): remember
		// this one's bytes so duplicateCopy can drop the others undecoded.
		e.dedup.finish(key, err == nil, &handledCopy{data: in.data, subject: meta.Subject, channel: meta.Channel})
	} else {
		e.dedup.finish(key, err == nil, nil)
	}
	if err == nil {
		e.ack(in)
		return outSurfaced
	}
	if in.msg != nil {
		e.nak(in, nakDelay(in.msg))
	}
	return outFailed
}

// duplicateCopy reports whether in can be dropped as a duplicate without being decoded: it is
// byte for byte a channel copy this Endpoint already surfaced, and it arrived where the full
// checks would judge it exactly as they judged that copy. Every member of a durable channel
// gets each message live and again from dlv_<id>, and decoding and validating the second copy
// only to find its id handled was a large share of its receive cost (docs/durable.md
// "Duplicates").
//
// Why this surfaces nothing unchecked and suppresses nothing that was not surfaced (SPEC §4,
// §5):
//   - The window only ever holds copies that passed the full checks of their path and were
//     handed to the Handler, which returned nil. A copy is dropped here only if its payload
//     has the same length and keyed digest as such a copy (dedup.sameCopy), so the full path
//     would decode the same message, with the same sender and id, and drop it as a duplicate
//     too. The digest's seed is secret to this process: no peer can make a payload collide
//     with another's.
//   - The Nats-Msg-Id header is written by whoever publishes the copy, so it only picks the
//     candidate to compare with and is never believed: it claims nothing, and a forged one
//     either names a handled message whose bytes the copy does not have, and the copy takes the
//     full path, or names the forger's own handled message and the copy is byte for byte that
//     message, which was surfaced already. A copy whose header is absent, malformed, or names
//     an id not handled (new, in flight, forgotten after a failure or evicted) takes the full
//     path exactly as before, so a forged header on a new message cannot keep the real message
//     with that id from surfacing when it arrives.
//   - The path must agree as well: a chat copy must arrive on the subject the handled copy was
//     published on (the same bytes on another sender's subject are a sender mismatch to
//     terminate and count), and a durable copy on this instance's own dlv subject, of a
//     channel the current read ACL still covers (checkDurable's checks). So the anomaly
//     counts stay exact: a malformed or spoofed copy is never dropped here as a duplicate.
//
// A dropped copy is counted as a duplicate and acked, as the full path does, so nothing
// redelivers it.
func (e *Endpoint) duplicateCopy(in inbound) bool {
	id := in.msgID
	switch in.src {
	case srcLive, srcHistory:
	case srcDurable:
		// The fan-out writes <id>:<member> (delivery.dlvMsgID).
		var ok bool
		if id, ok = strings.CutSuffix(id, e.id); !ok {
			return false
		}
		if id, ok = strings.CutSuffix(id, ":"); !ok {
			return false
		}
	default:
		return false
	}
	subject, channel, ok := e.dedup.sameCopy(id, in.data)
	if !ok {
		return false
	}
	if in.src == srcDurable {
		return e.isOwnDLVSubject(in.subject) && e.mayRead(channel)
	}
	return in.subject == subject
}

// isOwnDLVSubject reports whether subject is e.names.DLVSubject(e.id), without building it.
func (e *Endpoint) isOwnDLVSubject(subject string) bool {
	rest, ok := strings.CutPrefix(subject, "cotal.")
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, e.names.Space()); !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, ".dlv."); !ok {
		return false
	}
	return rest == sanitize(e.id)
}

// check runs the SPEC §3–§5 checks for the copy's path and derives Meta from the subject.
func (e *Endpoint) check(in inbound) (*wire.CotalMessage, Meta, error) {
	if in.src == srcDurable {
		return e.checkDurable(in)
	}
	if err := checkSubscribed(in.filter, in.subject, in.reply); err != nil {
		return nil, Meta{}, err
	}
	sub, m, err := wire.CheckDelivery(in.subject, in.data)
	if err != nil {
		return nil, Meta{}, err
	}
	meta := Meta{Subject: in.subject, Historical: in.src == srcHistory, Redelivered: in.redelivered}
	switch {
	case sub.Kind != in.src.kind(), sub.Space != e.names.Space():
		return nil, Meta{}, &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
			Err: fmt.Errorf("%s subject %q arrived on the %s path", sub.Kind, in.subject, in.src)}
	case sub.Kind == wire.KindInst && sub.Rest != sanitize(e.id):
		return nil, Meta{}, &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
			Err: fmt.Errorf("unicast subject %q targets another instance", in.subject)}
	case sub.Kind == wire.KindSvc && sub.Rest != sanitize(e.role):
		return nil, Meta{}, &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
			Err: fmt.Errorf("anycast subject %q targets another role", in.subject)}
	}
	switch sub.Kind {
	case wire.KindChat:
		meta.Kind, meta.Channel = MetaChannel, sub.Rest
	case wire.KindInst:
		meta.Kind = MetaDM
	case wire.KindSvc:
		meta.Kind = MetaAnycast
	}
	return m, meta, nil
}

// checkSubscribed refuses a copy whose subject is not one its subscription, filter, is for
// (an empty filter checks nothing). The broker routes a message by the subject it was sent
// to, but a JetStream delivery carries the stored subject instead: another identity's pull
// request whose reply subject names this subscription makes the broker send it copies of
// other channels. reply, the copy's, names the consumer that sent it ($JS.ACK.<stream>.
// <consumer>...), and with it the requester.
func checkSubscribed(filter, subject, reply string) error {
	if filter == "" || wire.SubjectMatches(filter, subject) {
		return nil
	}
	return &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
		Err: fmt.Errorf("copy on %q arrived on the subscription to %q (reply %q)", subject, filter, reply)}
}

// checkDurable checks a copy from dlv_<id>. The trusted reader publishes the bare message on
// cotal.<s>.dlv.<id> (docs/durable.md "DLV hand-over"), which only it may write; the copy must
// still be a valid channel message, and its sender and channel must form a valid chat subject,
// the subject it was first published on. The kind is channel: durable copies are kind=channel,
// not historical.
func (e *Endpoint) checkDurable(in inbound) (*wire.CotalMessage, Meta, error) {
	if in.subject != e.names.DLVSubject(e.id) {
		return nil, Meta{}, &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
			Err: fmt.Errorf("durable copy on %q, want %q", in.subject, e.names.DLVSubject(e.id))}
	}
	m, err := wire.DecodeMessage(in.data)
	if err != nil {
		return nil, Meta{}, err
	}
	if m.Channel == "" {
		return nil, Meta{}, &wire.Anomaly{Reason: wire.ReasonMalformedJSON,
			Err: fmt.Errorf("%w: a durable copy must be a channel message", wire.ErrInvalidMessage)}
	}
	// The copy's own subject is dlv.<member>; the chat subject it was published on is rebuilt
	// from the message and must parse, so the copy is judged like its live twin. The payload
	// was decoded once above.
	origin := e.names.ChatSubject(m.From.ID, m.Channel)
	sub, err := wire.ParseSubject(origin)
	if err != nil {
		return nil, Meta{}, err
	}
	if !e.mayRead(sub.Rest) {
		return nil, Meta{}, fmt.Errorf("%w: %s", errOutsideReadACL, sub.Rest)
	}
	return m, Meta{Kind: MetaChannel, Durable: true, Channel: sub.Rest, Subject: origin,
		Redelivered: in.redelivered}, nil
}

// errOutsideReadACL marks a durable copy of a channel the credential no longer reads.
var errOutsideReadACL = errors.New("durable copy of a channel outside the current read ACL")

// mayRead reports whether the credential's current read ACL covers channel. SPEC §12 item 14:
// every durable-backstop read is re-authorized before surfacing. The trusted reader checked
// the ACL when it handed the copy over; a re-mint may have narrowed it since, and the new
// credential is what this Endpoint holds.
func (e *Endpoint) mayRead(channel string) bool {
	if e.readACL == nil {
		return true
	}
	for _, p := range e.readACL {
		if wire.MatchChannel(p, channel) {
			return true
		}
	}
	return false
}

// reject terminates a permanent anomaly (SPEC §4, §5), or a durable copy outside the current
// read ACL: counted, logged, never surfaced, and on JetStream paths terminated so it is never
// redelivered.
func (e *Endpoint) reject(in inbound, err error) {
	reason, ok := wire.ReasonOf(err)
	switch {
	case errors.Is(err, errOutsideReadACL):
		reason = "outside-read-acl"
		e.stats.outsideACL.Add(1)
	case !ok:
		reason = wire.ReasonMalformedJSON
		e.stats.terminate(reason)
	default:
		e.stats.terminate(reason)
	}
	if e.rejectLog.Admit(time.Now()) {
		e.log.Warn("terminated a permanent anomaly; the next ones within "+loggate.Interval.String()+" are only counted", "reason", reason,
			"path", in.src.String(), "subject", in.subject, "err", err, "terminated_so_far", e.stats.terminatedTotal())
	}
	e.emit(Event{Kind: EventRejected, Subject: in.subject, Err: err})
	if in.msg != nil {
		if terr := in.msg.TermWithReason(reason); terr != nil {
			e.log.Debug("term failed", "subject", in.subject, "err", terr)
		}
	}
}

// surface hands d, the message of in, to the Handler. A JetStream copy is kept in progress
// while the Handler runs longer than its ack wait would allow: by its pullQueue when one
// served it, else by a timer of its own.
func (e *Endpoint) surface(d Delivery, in inbound) (err error) {
	hp := e.handler.Load()
	if hp == nil || *hp == nil {
		e.stats.unhandled.Add(1)
		return errNoHandler
	}
	if in.msg != nil && !in.queued {
		stop := keepInProgress(in.msg)
		defer stop()
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
		if err != nil {
			e.stats.handlerErrors.Add(1)
			e.log.Warn("handler failed", "id", d.Message.ID, "kind", string(d.Meta.Kind), "err", err)
			return
		}
		e.stats.surfaced(d.Meta)
	}()
	return (*hp)(e.ctx, d)
}

// errNoHandler marks a copy that arrived before any Handler was set.
var errNoHandler = fmt.Errorf("no handler set")

func (e *Endpoint) ack(in inbound) {
	if in.msg == nil {
		return
	}
	if err := in.msg.Ack(); err != nil {
		e.log.Debug("ack failed", "subject", in.subject, "err", err)
	}
}

func (e *Endpoint) nak(in inbound, delay time.Duration) {
	e.stats.naks.Add(1)
	if err := in.msg.NakWithDelay(delay); err != nil {
		e.log.Debug("nak failed", "subject", in.subject, "err", err)
	}
}

// nakDelay backs a failing message off: 250 ms after the first delivery, doubling up to 30 s.
func nakDelay(msg jetstream.Msg) time.Duration {
	n := uint64(1)
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 0 {
		n = md.NumDelivered
	}
	d := 250 * time.Millisecond
	for i := uint64(1); i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

func redelivered(msg jetstream.Msg) bool {
	if msg == nil {
		return false
	}
	md, err := msg.Metadata()
	return err == nil && md.NumDelivered > 1
}

// inProgressEvery is how often a long-running Handler's JetStream copy is marked in progress:
// well inside the 60 s ack wait of the bind-only consumers (docs/storage.md "Consumers").
const inProgressEvery = 20 * time.Second

// keepInProgress marks msg in progress every inProgressEvery until the returned stop is called,
// so a slow Handler does not cause a redelivery of the copy it is still working on.
func keepInProgress(msg jetstream.Msg) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	var tick func()
	tick = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		_ = msg.InProgress()
		t.Reset(inProgressEvery)
	}
	mu.Lock()
	t = time.AfterFunc(inProgressEvery, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// logger returns l, or a logger that discards, so every Endpoint logs through one value.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// sanitize is wire.Sanitize without its allocation for a token that is already sanitized, as
// instance ids and roles are: the receive path sanitizes several per copy.
func sanitize(token string) string {
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return wire.Sanitize(token)
		}
	}
	return token
}
