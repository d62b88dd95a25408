package endpoint

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// FollowOptions say which live traffic Follow taps.
type FollowOptions struct {
	// Channels are channel names or patterns (SPEC §3). Empty follows every channel the
	// credential's read ACL covers, and every channel in open mode.
	Channels []string
	// Unicast also follows every DM and anycast of the space, whoever they are addressed to.
	// Only the admin profile's grants allow it (SPEC Appendix B); with another credential the
	// broker refuses it and Follow fails with ErrReadRefused.
	Unicast bool
}

// Follow taps live traffic without joining anything: it subscribes to what opts names and
// returns once the broker accepted every subscription, then calls h with each copy until ctx
// ends or the Endpoint closes. It binds no consumer and takes no copy from anyone, so a
// passive Endpoint may follow everything its grants allow (SPEC Appendix B). A subscription
// the broker refuses fails Follow with ErrReadRefused and leaves nothing subscribed.
//
// Each copy passes the receive checks (SPEC §3–§5): the kind comes from the subject, the
// sender must match it, the envelope must decode; one that fails is terminated as on any path
// (counted in Stats, never passed to h). Copies are not deduplicated and own messages are
// included: Follow shows what the wire carries. h is called from one goroutine per subscribed
// subject, so it must be safe for concurrent use; while it blocks, later copies of that
// subject wait in the connection's buffer.
func (e *Endpoint) Follow(ctx context.Context, opts FollowOptions, h func(Delivery)) error {
	for _, ch := range opts.Channels {
		if err := wire.ValidateChannel(ch); err != nil {
			return fmt.Errorf("%w: follow: %w", ErrInvalidRead, err)
		}
	}
	subs := make([]*nats.Subscription, 0, len(opts.Channels)+2)
	unsubscribe := func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for _, subject := range followSubjects(e.names, opts, e.readACL) {
		sub, err := e.subscribeConfirmed(ctx, subject, func(m *nats.Msg) {
			if d, ok := e.followed(subject, m); ok {
				h(d)
			}
		})
		if err != nil {
			unsubscribe()
			return err
		}
		subs = append(subs, sub)
	}
	if !e.spawn(func(ectx context.Context) {
		select {
		case <-ctx.Done():
		case <-ectx.Done():
		}
		unsubscribe()
	}) {
		unsubscribe()
		return ErrClosed
	}
	return nil
}

// followSubjects are the subjects Follow subscribes to: the chat filter of each channel, of
// each read ACL entry without channels, and with Unicast the space's DM and anycast subtrees.
// acl is nil in open mode, where every channel is readable.
func followSubjects(n wire.Names, opts FollowOptions, acl []string) []string {
	channels := opts.Channels
	switch {
	case len(channels) > 0:
	case acl == nil:
		channels = []string{">"}
	default:
		channels = acl
	}
	out := make([]string, 0, len(channels)+2)
	for _, ch := range channels {
		out = append(out, n.ChatFilter(wire.SanitizeChannel(ch)))
	}
	if opts.Unicast {
		out = append(out, n.Prefix()+".inst.>", n.Prefix()+".svc.>")
	}
	return out
}

// subscribeConfirmed subscribes to subject and returns once the broker accepted it. The broker
// answers SUB before the flush PING, and the client records a refusal before the flush returns,
// so a refusal is known then (docs/durable.md "Joining").
func (e *Endpoint) subscribeConfirmed(ctx context.Context, subject string, h nats.MsgHandler) (*nats.Subscription, error) {
	before := e.nc.LastError()
	sub, err := e.nc.Subscribe(subject, h)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", subject, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		// FlushWithContext refuses a context without a deadline; bound it like a control request.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.ControlTimeout)
		defer cancel()
	}
	if err := e.nc.FlushWithContext(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("follow %s: confirm the subscription: %w", subject, err)
	}
	if after := e.nc.LastError(); after != before {
		if op, refused, ok := parseViolation(after); ok && op == opSubscribe && refused == subject {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("%w: follow %s: %v", ErrReadRefused, subject, after)
		}
	}
	return sub, nil
}

// followed checks a copy Follow received (SPEC §3–§5) and derives its Meta from the subject.
// A followed copy is not addressed to this instance, so unlike a DM or anycast this Endpoint receives,
// its target is not checked against the own id or role.
func (e *Endpoint) followed(filter string, msg *nats.Msg) (Delivery, bool) {
	in := inbound{src: srcFollow, subject: msg.Subject, data: msg.Data, filter: filter, reply: msg.Reply}
	sub, m, err := e.checkTap(in)
	if err != nil {
		e.reject(in, err)
		return Delivery{}, false
	}
	meta := Meta{Subject: in.subject}
	switch sub.Kind {
	case wire.KindChat:
		meta.Kind, meta.Channel = MetaChannel, sub.Rest
	case wire.KindInst:
		meta.Kind = MetaDM
	default:
		meta.Kind = MetaAnycast
	}
	return Delivery{Message: m, Meta: meta}, true
}

// checkTap checks a tapped copy: on a subject its subscription is for, in this space, and
// a valid delivery.
func (e *Endpoint) checkTap(in inbound) (wire.Subject, *wire.CotalMessage, error) {
	if err := checkSubscribed(in.filter, in.subject, in.reply); err != nil {
		return wire.Subject{}, nil, err
	}
	sub, m, err := wire.CheckDelivery(in.subject, in.data)
	if err == nil && sub.Space != e.names.Space() {
		err = &wire.Anomaly{Reason: wire.ReasonMalformedSubject,
			Err: fmt.Errorf("subject %q is outside space %s", in.subject, e.names.Space())}
	}
	return sub, m, err
}
