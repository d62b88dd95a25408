package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// controlTimeout bounds the broker work one control request may do.
const controlTimeout = 10 * time.Second

// controlSubject is cotal.<s>.ctl.delivery.*: requests from every sender. Replies live deeper
// (<request subject>.reply.<token>), so the subscription never sees them.
func controlSubject(n wire.Names) string {
	return n.Prefix() + ".ctl." + wire.DeliveryService + ".*"
}

// runControl serves the delivery control service once the membership view is loaded.
func (s *Service) runControl(ctx context.Context, up func()) error {
	if err := s.members.loaded.wait(ctx); err != nil {
		return err
	}
	sub, err := s.cfg.Conn.SubscribeSync(controlSubject(s.names))
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", controlSubject(s.names), err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.cfg.Conn.FlushTimeout(controlTimeout); err != nil {
		return fmt.Errorf("confirm the subscription to %s: %w", controlSubject(s.names), err)
	}
	up()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return fmt.Errorf("control service: %w", err)
		}
		s.serveControl(ctx, m)
	}
}

// serveControl answers one request. A reply subject outside the request subject's .reply.
// subtree gets no answer at all: the answer would be published wherever the requester
// pointed it (LAYOUT.md "Reply-subject injection").
func (s *Service) serveControl(ctx context.Context, m *nats.Msg) {
	if err := wire.CheckControlReplySubject(m.Subject, m.Reply); err != nil {
		s.stats.refusedReply.Add(1)
		s.log.Warn("dropping a control request whose reply subject is outside its own subtree",
			"subject", m.Subject, "reply", m.Reply)
		return
	}
	reply := s.handleControl(ctx, m)
	data, err := json.Marshal(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		s.log.Warn("could not answer a control request", "subject", m.Subject, "err", err)
	}
}

// handleControl checks the request (SPEC §5: from.id must be the subject sender) and runs it.
func (s *Service) handleControl(ctx context.Context, m *nats.Msg) wire.ControlReply {
	sub, req, err := wire.CheckControlRequest(m.Subject, m.Data)
	if err != nil {
		reason, ok := wire.ReasonOf(err)
		if !ok {
			reason = err.Error()
		}
		return wire.ReplyError(reason)
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var data any
	switch req.Op {
	case wire.OpDurableJoin:
		data, err = s.durableJoin(ctx, sub.Sender, req.Args)
	case wire.OpDurableLeave:
		data, err = s.durableLeave(ctx, sub.Sender, req.Args)
	case wire.OpListMemberships:
		data = s.listMemberships(sub.Sender)
	default:
		return wire.ReplyError(fmt.Sprintf("op %q not supported on the delivery control service", req.Op))
	}
	if err != nil {
		return wire.ReplyError(err.Error())
	}
	reply, err := wire.ReplyOK(data)
	if err != nil {
		return wire.ReplyError(err.Error())
	}
	return reply
}

// decodeArgs decodes a request's args object into v.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return fmt.Errorf("%s: args are missing", wire.ReasonMalformedJSON)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: args: %v", wire.ReasonMalformedJSON, err)
	}
	return nil
}
