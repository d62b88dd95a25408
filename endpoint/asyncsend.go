package endpoint

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// asyncSends settles the receipts of asynchronous sends from nats.go's publish callbacks,
// which the JetStream context calls once per message with its acknowledgement or error,
// rather than from a goroutine per send waiting on its future.
type asyncSends struct {
	mu      sync.Mutex
	pending map[*nats.Msg]*asyncSend
	closed  bool
}

// asyncSend is one send awaiting its outcome.
type asyncSend struct {
	p       *PendingReceipt
	subject string
}

// add registers msg's send before it is published, so that no callback can come first; false
// once the Endpoint is closing.
func (a *asyncSends) add(msg *nats.Msg, s *asyncSend) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	if a.pending == nil {
		a.pending = make(map[*nats.Msg]*asyncSend)
	}
	a.pending[msg] = s
	return true
}

// take removes msg's send and returns it; nil when it was settled already.
func (a *asyncSends) take(msg *nats.Msg) *asyncSend {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.pending[msg]
	delete(a.pending, msg)
	return s
}

// refuse settles every send waiting on subject with err, the broker's refusal of the
// subject, and reports whether there was one. A refused send is never acknowledged, and a
// refusal names the subject, not the message, so every send on it ends here.
func (a *asyncSends) refuse(subject string, err error) bool {
	a.mu.Lock()
	var refused []*asyncSend
	for msg, s := range a.pending {
		if s.subject == subject {
			refused = append(refused, s)
			delete(a.pending, msg)
		}
	}
	a.mu.Unlock()
	for _, s := range refused {
		s.settle(Receipt{}, err)
	}
	return len(refused) > 0
}

// settle ends s with receipt or err.
func (s *asyncSend) settle(receipt Receipt, err error) {
	if err != nil {
		s.p.err = fmt.Errorf("publish %s on %s: %w", s.p.id, s.subject, err)
	} else {
		s.p.receipt = receipt
	}
	close(s.p.done)
}

// acked is the JetStream context's acknowledgement callback.
func (e *Endpoint) acked(_ jetstream.JetStream, msg *nats.Msg, ack *jetstream.PubAck) {
	if s := e.async.take(msg); s != nil {
		e.stats.published.Add(1)
		s.settle(Receipt{ID: s.p.id, Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil)
	}
}

// failed is the JetStream context's error callback: a rejection, a lost connection, or no
// acknowledgement within asyncAckWait.
func (e *Endpoint) failed(_ jetstream.JetStream, msg *nats.Msg, err error) {
	if s := e.async.take(msg); s != nil {
		s.settle(Receipt{}, storeFull(s.subject, err))
	}
}

// close settles every send still waiting with err and takes no more.
func (a *asyncSends) close(err error) {
	a.mu.Lock()
	a.closed = true
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, s := range pending {
		s.settle(Receipt{}, err)
	}
}
