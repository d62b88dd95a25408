package endpoint

import (
	"context"
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
	// inHand is the copy the worker handles now, if any, popped at poppedAt.
	inHand    queued
	hasInHand bool
	poppedAt  time.Time
	// perCopy is the worker's recent time per copy, a moving average; 0 before the first.
	perCopy time.Duration
	// handBackAfter, when set, is how long the copy in hand may take before the copies
	// waiting behind it are handed back (a task queue; see handBack). pullOpen says whether a
	// pull that fills the queue is open.
	handBackAfter time.Duration
	pullOpen      bool
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
	q.inHand, q.hasInHand, q.poppedAt = q.items[0], true, time.Now()
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
	took := time.Since(q.poppedAt)
	if q.perCopy == 0 {
		q.perCopy = took
	} else {
		q.perCopy += (took - q.perCopy) / 8
	}
	q.inHand, q.hasInHand = queued{}, false
	q.cond.Broadcast()
	q.mu.Unlock()
}

// awaitRoom waits until the queue has room for a pull and returns its size: as many copies
// as the worker handles in ahead at its recent pace (the copy in hand counted at least as
// long as it has taken so far), at most limit, less those waiting, once a quarter of that or
// fewer are left. A worker slower than ahead per copy gets one copy, and only once it is
// idle. It returns false once ctx ends or the queue is closed.
func (q *pullQueue) awaitRoom(ctx context.Context, ahead time.Duration, limit int) (int, bool) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for ctx.Err() == nil && !q.closed {
		want := q.want(ahead, limit)
		switch {
		case want <= 1 && len(q.items) == 0 && !q.hasInHand:
			return 1, true
		case want > 1 && len(q.items) <= want/4:
			return want - len(q.items), true
		}
		q.cond.Wait()
	}
	return 0, false
}

// want is how many copies the worker handles in ahead at its recent pace, at most limit;
// q.mu is held.
func (q *pullQueue) want(ahead time.Duration, limit int) int {
	if q.perCopy == 0 {
		return 1 // no pace known yet
	}
	per := q.perCopy
	if q.hasInHand {
		per = max(per, time.Since(q.poppedAt))
	}
	return int(max(1, min(int64(ahead/per), int64(limit))))
}

func (q *pullQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// setPullOpen records whether a pull that fills the queue is open.
func (q *pullQueue) setPullOpen(open bool) {
	q.mu.Lock()
	q.pullOpen = open
	q.mu.Unlock()
}

// handBack takes out and returns the copies waiting behind a copy in hand for handBackAfter
// or longer, once no pull is open that the broker could hand them to again; q.mu is held.
func (q *pullQueue) handBack(now time.Time) []inbound {
	if q.handBackAfter == 0 || !q.hasInHand || q.pullOpen || len(q.items) == 0 ||
		now.Sub(q.poppedAt) < q.handBackAfter {
		return nil
	}
	out := make([]inbound, len(q.items))
	for i, it := range q.items {
		out[i] = it.in
	}
	clear(q.items)
	q.items, q.bytes = q.items[:0], 0
	q.cond.Broadcast()
	return out
}

// keepInHand returns the copies handBack takes out, and marks in progress every other copy,
// waiting or in hand, that was last marked longer than every ago, so its ack wait starts
// again.
func (q *pullQueue) keepInHand(now time.Time, every time.Duration) (handedBack []inbound) {
	q.mu.Lock()
	defer q.mu.Unlock()
	handedBack = q.handBack(now)
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
	return handedBack
}

// serve hands every copy to receive until the queue is closed and empty, marking copies that
// waited longer than every in progress meanwhile, and handing back with a nak those the queue
// hands back. It returns when the last one is handled.
func (e *Endpoint) serve(q *pullQueue, every time.Duration) {
	tick := every / 2
	if q.handBackAfter > 0 {
		tick = min(tick, q.handBackAfter/4)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				for _, in := range q.keepInHand(now, every) {
					_ = in.msg.Nak()
					e.stats.tasksHandedBack.Add(1)
				}
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

// deliverer returns how the copies of an owner's consumer reach receive, through a queue and
// its worker, and finish, which waits until every copy handed to it has been handled.
func (e *Endpoint) deliverer(cons jetstream.Consumer) (deliver func(inbound), finish func()) {
	q := newPullQueue()
	deliver = func(in inbound) {
		if !q.push(in) {
			e.receive(in) // a Consume that outlived its stop wait
		}
	}
	return deliver, e.startServing(q, cons)
}

// startServing starts q's worker, which hands its copies to receive and marks those it holds
// in progress a third of cons's ack wait apart; finish closes q and waits until the worker has
// handled the last copy.
func (e *Endpoint) startServing(q *pullQueue, cons jetstream.Consumer) (finish func()) {
	served := make(chan struct{})
	go func() {
		defer close(served)
		e.serve(q, markEvery(cons))
	}()
	return func() {
		q.close()
		<-served
	}
}

// markEvery is how often a copy held in a queue is marked in progress: a third of cons's ack
// wait, at most inProgressEvery.
func markEvery(cons jetstream.Consumer) time.Duration {
	every := inProgressEvery
	if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
		every = min(every, info.Config.AckWait/3)
	}
	return every
}
