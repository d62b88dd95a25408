package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// controlTimeout bounds the broker work one control request may do.
const controlTimeout = 10 * time.Second

// Reasons of a control request refused before it is served, so that the control service's
// work stays bounded (Config.ControlWorkers, ControlQueue, ControlPerSender).
const (
	// ReasonControlBusy: the queue of admitted requests is full.
	ReasonControlBusy = "the delivery control service is busy; try again"
	// ReasonControlSenderBusy: the sender already has Config.ControlPerSender requests
	// admitted and not yet answered.
	ReasonControlSenderBusy = "too many control requests of this sender are waiting for an answer; try again after they are answered"
)

// controlSubject is cotal.<s>.ctl.delivery.*: requests from every sender. Replies live deeper
// (<request subject>.reply.<token>), so the subscription never sees them.
func controlSubject(n wire.Names) string {
	return n.Prefix() + ".ctl." + wire.DeliveryService + ".*"
}

// runControl serves the delivery control service once the membership view is loaded: this
// loop admits each request into the pool and ControlWorkers workers serve the pool
// concurrently. The registry serializes what must be serial (registry.join). Workers finish
// before runControl returns.
func (s *Service) runControl(ctx context.Context, up func()) error {
	if err := s.members.loaded.wait(ctx); err != nil {
		return err
	}
	conn := s.cfg.ControlConn
	if conn == nil {
		conn = s.cfg.Conn
	}
	sub, err := conn.SubscribeSync(controlSubject(s.names))
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", controlSubject(s.names), err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := conn.FlushTimeout(controlTimeout); err != nil {
		return fmt.Errorf("confirm the subscription to %s: %w", controlSubject(s.names), err)
	}
	pool := newControlPool(s.cfg.ControlQueue, s.cfg.ControlPerSender)
	var workers sync.WaitGroup
	defer workers.Wait()
	defer close(pool.queue)
	for range s.cfg.ControlWorkers {
		workers.Go(func() {
			for r := range pool.queue {
				s.respond(r.msg, s.handleControl(ctx, r.msg))
				pool.done(r.sender)
			}
		})
	}
	up()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return fmt.Errorf("control service: %w", err)
		}
		s.admitControl(pool, m)
	}
}

// admitControl queues one request for the workers, or answers it at once with why not. A
// reply subject outside the request subject's .reply. subtree gets no answer at all: the
// answer would be published wherever the requester pointed it.
func (s *Service) admitControl(pool *controlPool, m *nats.Msg) {
	if err := wire.CheckControlReplySubject(m.Subject, m.Reply); err != nil {
		n := s.stats.refusedReply.Add(1)
		if s.refusedLog.Admit(time.Now()) {
			s.log.Warn("dropping control requests whose reply subject is outside their own subtree",
				"sender", m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], "reply", m.Reply, "dropped_so_far", n)
		}
		return
	}
	if s.requests.Duplicate(m.Subject, m.Header.Get(wire.RequestIDHeader), time.Now()) {
		// The first copy is answered; this one reached the service a second time.
		s.stats.controlDuplicates.Add(1)
		return
	}
	if reason := pool.admit(m); reason != "" {
		// Counted, not logged per request: a flood would otherwise flood the log too.
		s.stats.refusedBusy.Add(1)
		s.respond(m, wire.ReplyError(reason))
	}
}

// respond sends reply to the request's reply subject.
func (s *Service) respond(m *nats.Msg, reply wire.ControlReply) {
	data, err := json.Marshal(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		s.log.Warn("could not answer a control request", "subject", m.Subject, "err", err)
	}
}

// controlRequest is an admitted request and the sender token it is counted against.
type controlRequest struct {
	msg    *nats.Msg
	sender string
}

// controlPool bounds the control service's pending work: at most cap(queue) requests wait for
// a worker, and at most perSender of them, waiting or being served, come from one sender, so a
// flood from one agent delays another agent's request by at most perSender requests and never
// fills the queue alone.
type controlPool struct {
	queue     chan controlRequest
	perSender int

	mu       sync.Mutex
	inFlight map[string]int // admitted and not yet answered, by sender token; guarded by mu
}

func newControlPool(queue, perSender int) *controlPool {
	return &controlPool{queue: make(chan controlRequest, queue), perSender: perSender, inFlight: map[string]int{}}
}

// admit queues m, or returns the reason it is refused. The sender is the subject's last token,
// unchecked here: the worker checks it (wire.CheckControlRequest), and the broker lets an
// agent publish only under its own id.
func (p *controlPool) admit(m *nats.Msg) string {
	sender := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight[sender] >= p.perSender {
		return ReasonControlSenderBusy
	}
	select {
	case p.queue <- controlRequest{msg: m, sender: sender}:
	default:
		return ReasonControlBusy
	}
	p.inFlight[sender]++
	return ""
}

// done releases the slot of an answered request of sender.
func (p *controlPool) done(sender string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight[sender]--; p.inFlight[sender] <= 0 {
		delete(p.inFlight, sender)
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
