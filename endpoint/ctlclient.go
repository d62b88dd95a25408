package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cotal-go/cotal/wire"
	"strings"

	"github.com/nats-io/nats.go"
)

// ErrNoResponders: nobody serves the control service a Request addressed (SPEC §5).
var ErrNoResponders = errors.New("no instance serves this control service")

// Request sends op with args to the control service (SPEC §5) and waits for the reply. The
// request travels on cotal.<s>.ctl.<service>.<id> with reply subject
// <request subject>.reply.<uuid>, subscribed before publishing (docs/storage.md "Control
// service"). Without a deadline on ctx, Options.ControlTimeout applies. A reply with ok false
// is returned together with an error wrapping ErrControlRefused.
func (e *Endpoint) Request(ctx context.Context, service, op string, args any) (*wire.ControlReply, error) {
	var reply *wire.ControlReply
	err := retryNoResponders(ctx, func() (err error) {
		reply, err = e.request(ctx, service, op, args)
		return err
	})
	return reply, err
}

// request sends one control request and waits for its answer.
func (e *Endpoint) request(ctx context.Context, service, op string, args any) (*wire.ControlReply, error) {
	req, err := wire.NewControlRequest(op, args, e.ref())
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("control %s %s: %w", service, op, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.ControlTimeout)
		defer cancel()
	}
	subject := e.names.CtlSubject(service, e.id)
	reply := wire.ControlReplySubject(subject)
	// A refused reply subscription or request publish is reported asynchronously; either
	// ends the wait at once.
	ctx, stopReply := e.violations.watch(ctx, opSubscribe, reply, ErrReplyRefused)
	defer stopReply()
	ctx, stopPub := e.violations.watch(ctx, opPublish, subject, ErrPublishRefused)
	defer stopPub()
	sub, err := e.nc.SubscribeSync(reply)
	if err != nil {
		return nil, fmt.Errorf("control %s %s: subscribe reply: %w", service, op, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.AutoUnsubscribe(1); err != nil {
		return nil, fmt.Errorf("control %s %s: %w", service, op, err)
	}
	hdr := nats.Header{wire.RequestIDHeader: {reply[strings.LastIndexByte(reply, '.')+1:]}}
	if err := e.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: hdr, Data: data}); err != nil {
		return nil, fmt.Errorf("control %s %s: publish: %w", service, op, err)
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if errors.Is(err, nats.ErrNoResponders) || (err == nil && msg.Header.Get("Status") == "503") {
		return nil, fmt.Errorf("control %s %s: %w", service, op, ErrNoResponders)
	}
	if err != nil {
		return nil, fmt.Errorf("control %s %s: %w", service, op, refusal(ctx, err))
	}
	r, err := wire.DecodeControlReply(msg.Data)
	if err != nil {
		return nil, fmt.Errorf("control %s %s: %w", service, op, err)
	}
	return r, r.Err()
}

// ControlHandler serves one verified control request; From has already been checked against
// the subject sender (SPEC §5). The returned data becomes ControlReply.Data; an error becomes
// ok false with the error's text.
type ControlHandler func(ctx context.Context, req *wire.ControlRequest) (data any, err error)

// Serve answers control requests for service on cotal.<s>.ctl.<service>.* until stop is called
// or the Endpoint closes. Before acting it verifies that from.id is the subject sender (else it
// replies ok false, "sender-mismatch"), and it answers only on a reply subject inside the
// request subject's own .reply. subtree (docs/hostile-agents.md "Reply subjects are the
// requester's"); a request with any other reply subject is dropped unanswered.
func (e *Endpoint) Serve(service string, h ControlHandler) (stop func() error, err error) {
	if !wire.IsToken(service) {
		return nil, fmt.Errorf("%w: service %q has characters outside [A-Za-z0-9_-]", wire.ErrInvalidControl, service)
	}
	sub, err := e.nc.Subscribe(e.names.Prefix()+".ctl."+service+".*", func(m *nats.Msg) {
		e.serveOne(m, h)
	})
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", service, err)
	}
	if err := e.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("serve %s: %w", service, err)
	}
	return sub.Unsubscribe, nil
}

func (e *Endpoint) serveOne(m *nats.Msg, h ControlHandler) {
	if err := wire.CheckControlReplySubject(m.Subject, m.Reply); err != nil {
		e.log.Warn("dropped a control request with a foreign reply subject", "subject", m.Subject, "err", err)
		return
	}
	var reply wire.ControlReply
	_, req, err := wire.CheckControlRequest(m.Subject, m.Data)
	if err != nil {
		reason, _ := wire.ReasonOf(err)
		e.log.Warn("refused a control request", "subject", m.Subject, "reason", reason, "err", err)
		reply = wire.ReplyError(reason)
	} else {
		reply = e.callControl(req, h)
	}
	data, err := json.Marshal(reply)
	if err != nil {
		e.log.Error("encode control reply", "subject", m.Subject, "err", err)
		return
	}
	if err := m.Respond(data); err != nil {
		e.log.Debug("control reply failed", "subject", m.Reply, "err", err)
	}
}

// callControl runs h and turns its outcome into a reply; a panic is a refusal, not a crash.
func (e *Endpoint) callControl(req *wire.ControlRequest, h ControlHandler) (reply wire.ControlReply) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("control handler panicked", "op", req.Op, "panic", r)
			reply = wire.ReplyError(fmt.Sprintf("op %q failed", req.Op))
		}
	}()
	data, err := h(e.ctx, req)
	if err != nil {
		return wire.ReplyError(err.Error())
	}
	r, err := wire.ReplyOK(data)
	if err != nil {
		return wire.ReplyError(err.Error())
	}
	return r
}
