package endpoint

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pulling ahead of the Handler: a consumer of one owner (dm_<id>, dlv_<id>) pulls large
// batches, and every copy pulled is taken out of nats.go at once into a pullQueue, where no
// copy can sit out its ack wait: one waiting longer than a third of it is marked in progress,
// however slow the Handler (docs/durable.md "Pulling ahead of the Handler").
const (
	// ownerBatch is how many copies one pull of an owner's consumer asks for; the next pull
	// goes out when half of them have arrived.
	ownerBatch = 256
	// ownerPullBytes caps the bytes one such pull asks for. It is raised to twice the
	// broker's max payload, since a copy larger than a pull's byte cap is never delivered.
	ownerPullBytes = 4 << 20
	// queueMaxCopies and queueMaxBytes bound the copies waiting for the Handler. The count
	// is above a consumer's default max ack pending (1000), so only the bytes ever hold a
	// pull back.
	queueMaxCopies = 1024
	queueMaxBytes  = 16 << 20
)

// queued is one copy waiting for the Handler, with when it was last known to be in hand.
type queued struct {
	in    inbound
	since time.Time
}

// pullQueue hands the copies nats.go delivers to one worker, in order. push blocks only past
// its bounds; a closed queue lets the worker finish what is left.
type pullQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []queued
	bytes  int
	closed bool
	// inHand is the copy the worker handles now, if any.
	inHand    queued
	hasInHand bool
}

func newPullQueue() *pullQueue {
	q := &pullQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues in; false once the queue is closed, when the caller must hand it on itself.
func (q *pullQueue) push(in inbound) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && len(q.items) > 0 && (len(q.items) >= queueMaxCopies || q.bytes >= queueMaxBytes) {
		q.cond.Wait()
	}
	if q.closed {
		return false
	}
	q.items = append(q.items, queued{in: in, since: time.Now()})
	q.bytes += len(in.data)
	q.cond.Broadcast()
	return true
}

// pop returns the oldest copy, waiting for one; ok is false once the queue is closed and empty.
func (q *pullQueue) pop() (inbound, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return inbound{}, false
	}
	in := q.items[0].in
	q.inHand, q.hasInHand = q.items[0], true
	q.items[0] = queued{}
	q.items = q.items[1:]
	q.bytes -= len(in.data)
	q.cond.Broadcast()
	in.queued = true
	return in, true
}

// handled notes that the worker is done with the copy pop returned.
func (q *pullQueue) handled() {
	q.mu.Lock()
	q.inHand, q.hasInHand = queued{}, false
	q.mu.Unlock()
}

func (q *pullQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// keepInHand marks in progress every copy, waiting or in hand, that was last marked longer
// than every ago, so its ack wait starts again.
func (q *pullQueue) keepInHand(now time.Time, every time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.hasInHand && now.Sub(q.inHand.since) >= every {
		_ = q.inHand.in.msg.InProgress()
		q.inHand.since = now
	}
	for i := range q.items {
		if now.Sub(q.items[i].since) >= every {
			_ = q.items[i].in.msg.InProgress()
			q.items[i].since = now
		}
	}
}

// serve hands every copy to receive until the queue is closed and empty, marking copies that
// waited longer than every in progress meanwhile. It returns when the last one is handled.
func (e *Endpoint) serve(q *pullQueue, every time.Duration) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				q.keepInHand(now, every)
			}
		}
	}()
	defer wg.Wait()
	defer close(done)
	for {
		in, ok := q.pop()
		if !ok {
			return
		}
		e.receive(in)
		q.handled()
	}
}

// deliverer returns how the copies of b reach receive, and finish, which waits until every
// copy handed to it has been handled. Only a consumer pulled ahead has a queue and a worker.
func (e *Endpoint) deliverer(b binding, cons jetstream.Consumer) (deliver func(inbound), finish func()) {
	if !pullAhead(b) {
		return func(in inbound) { e.receive(in) }, func() {}
	}
	every := inProgressEvery
	if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
		every = min(every, info.Config.AckWait/3)
	}
	q := newPullQueue()
	served := make(chan struct{})
	go func() {
		defer close(served)
		e.serve(q, every)
	}()
	deliver = func(in inbound) {
		if !q.push(in) {
			e.receive(in) // a Consume that outlived its stop wait
		}
	}
	return deliver, func() {
		q.close()
		<-served
	}
}

// pullAhead reports whether b's copies are pulled in large batches into a queue: only a
// consumer of one owner. svc_<role> is shared by every holder of the role, and copies one
// holder pulled ahead are copies the others cannot take.
func pullAhead(b binding) bool { return b.src != srcAnycast }
