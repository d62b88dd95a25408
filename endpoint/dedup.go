package endpoint

import (
	"container/list"
	"sync"
)

// DefaultDedupWindow is how many surfaced message ids an Endpoint remembers to drop later
// copies of the same message (SPEC §4, §7).
const DefaultDedupWindow = 10000

// claim is the state of a message id in the dedup window.
type claim int

const (
	claimFresh    claim = iota // not seen: the caller now owns surfacing it
	claimInFlight              // another copy is being handled right now
	claimDone                  // a copy was surfaced and handled
)

// dedupKey identifies one logical message: its id within its sender. Keying on the sender
// keeps one peer from suppressing another's message by reusing its id.
type dedupKey struct{ sender, id string }

type dedupEntry struct {
	key  dedupKey
	done bool
}

// dedup remembers message ids across the live, backfill and durable copies of a message so
// it surfaces once (SPEC §4 "one logical delivery", §7 step 5). It only suppresses copies:
// every copy is checked in full before it gets here, so a seen id authorizes nothing (SPEC §4).
// Memory is bounded: past max entries the least recently used handled id is forgotten.
type dedup struct {
	mu      sync.Mutex
	max     int
	entries map[dedupKey]*list.Element
	order   *list.List // front: most recent
}

func newDedup(max int) *dedup {
	if max <= 0 {
		max = DefaultDedupWindow
	}
	return &dedup{max: max, entries: make(map[dedupKey]*list.Element), order: list.New()}
}

// claim registers a copy of key. Only a claimFresh result lets the caller surface the copy; it
// must then call finish.
func (d *dedup) claim(key dedupKey) claim {
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.entries[key]; ok {
		d.order.MoveToFront(el)
		if el.Value.(*dedupEntry).done {
			return claimDone
		}
		return claimInFlight
	}
	d.entries[key] = d.order.PushFront(&dedupEntry{key: key})
	d.evict()
	return claimFresh
}

// finish ends a claim: a handled message stays remembered; a failed one is forgotten, so the
// next copy (a redelivery, or the durable copy of a failed live copy) surfaces again.
func (d *dedup) finish(key dedupKey, handled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	el, ok := d.entries[key]
	if !ok {
		return
	}
	if handled {
		el.Value.(*dedupEntry).done = true
		return
	}
	d.order.Remove(el)
	delete(d.entries, key)
}

// evict forgets the least recently used handled ids beyond max. In-flight claims are kept:
// their number is bounded by the handlers running at once.
func (d *dedup) evict() {
	for el := d.order.Back(); el != nil && d.order.Len() > d.max; {
		prev := el.Prev()
		if e := el.Value.(*dedupEntry); e.done {
			d.order.Remove(el)
			delete(d.entries, e.key)
		}
		el = prev
	}
}
