package endpoint

import (
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// asyncSends settles the receipts of asynchronous sends from nats.go's publish callbacks,
// which the JetStream context calls once per message with its acknowledgement or error,
// rather than from a goroutine per send waiting on its future.
type asyncSends struct {
	mu      sync.Mutex
	pending map[*nats.Msg]*PendingReceipt
	closed  bool
}

// add registers msg's send before it is published, so that no callback can come first; false
// once the Endpoint is closing.
func (a *asyncSends) add(msg *nats.Msg, p *PendingReceipt) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	if a.pending == nil {
		a.pending = make(map[*nats.Msg]*PendingReceipt)
	}
	a.pending[msg] = p
	return true
}

// take removes msg's send and returns it; nil when it was settled already.
func (a *asyncSends) take(msg *nats.Msg) *PendingReceipt {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[msg]
	delete(a.pending, msg)
	return p
}

// refuse settles every send waiting on subject with err, the broker's refusal of the
// subject, and reports whether there was one. A refused send is never acknowledged, and a
// refusal names the subject, not the message, so every send on it ends here.
func (a *asyncSends) refuse(subject string, err error) bool {
	a.mu.Lock()
	var refused []*PendingReceipt
	for msg, p := range a.pending {
		if p.subject == subject {
			refused = append(refused, p)
			delete(a.pending, msg)
		}
	}
	a.mu.Unlock()
	for _, p := range refused {
		p.settle(Receipt{}, err)
	}
	return len(refused) > 0
}

// acked is the JetStream context's acknowledgement callback.
func (e *Endpoint) acked(_ jetstream.JetStream, msg *nats.Msg, ack *jetstream.PubAck) {
	if p := e.async.take(msg); p != nil {
		e.stats.published.Add(1)
		p.settle(Receipt{ID: p.id, Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil)
	}
}

// failed is the JetStream context's error callback: a rejection, a lost connection, or no
// acknowledgement within asyncAckWait.
func (e *Endpoint) failed(_ jetstream.JetStream, msg *nats.Msg, err error) {
	if p := e.async.take(msg); p != nil {
		p.settle(Receipt{}, storeFull(p.subject, err))
	}
}

// close settles every send still waiting with err and takes no more.
func (a *asyncSends) close(err error) {
	a.mu.Lock()
	a.closed = true
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, p := range pending {
		p.settle(Receipt{}, err)
	}
}
