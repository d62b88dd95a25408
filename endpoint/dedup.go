package endpoint

import (
	"container/list"
	"hash/maphash"
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
	// copied is set when the handled copy was a channel copy whose bytes are remembered: a
	// later copy with the same bytes is then dropped before it is checked (sameCopy).
	copied bool
	// digest is the keyed hash of the handled copy's payload, size its length.
	digest uint64
	size   int
	// subject is the chat subject the handled copy was published on, channel its channel.
	subject, channel string
}

// handledCopy is what receive remembers of a channel copy it surfaced, for sameCopy.
type handledCopy struct {
	data             []byte
	subject, channel string
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
	// byID finds a handled channel copy by its message id alone, the one id a JetStream copy
	// carries outside its payload (Nats-Msg-Id). An id two senders used points at the later
	// one; the other is then only found by the full path, which is always correct.
	byID map[string]*list.Element
	// seed keys the payload digests. It is secret to this process, so no peer can compute
	// a digest, let alone craft a payload whose digest equals another's.
	seed maphash.Seed
}

func newDedup(max int) *dedup {
	if max <= 0 {
		max = DefaultDedupWindow
	}
	return &dedup{max: max, entries: make(map[dedupKey]*list.Element), order: list.New(),
		byID: make(map[string]*list.Element), seed: maphash.MakeSeed()}
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
// next copy (a redelivery, or the durable copy of a failed live copy) surfaces again. c, when
// not nil, is the handled channel copy, remembered for sameCopy.
func (d *dedup) finish(key dedupKey, handled bool, c *handledCopy) {
	var digest uint64
	if handled && c != nil {
		digest = maphash.Bytes(d.seed, c.data)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	el, ok := d.entries[key]
	if !ok {
		return
	}
	if !handled {
		d.remove(el)
		return
	}
	e := el.Value.(*dedupEntry)
	e.done = true
	if c != nil {
		e.copied, e.digest, e.size, e.subject, e.channel = true, digest, len(c.data), c.subject, c.channel
		d.byID[key.id] = el
	}
}

// sameCopy reports whether a copy carrying id outside its payload is byte for byte a channel
// copy already handled, and returns the chat subject and channel that copy was surfaced with,
// for the caller to compare with this copy's path. It is only ever true for a handled id: a
// claim in flight, or one forgotten after a failure, is no match.
func (d *dedup) sameCopy(id string, data []byte) (subject, channel string, ok bool) {
	if id == "" {
		return "", "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	el, found := d.byID[id]
	if !found {
		return "", "", false
	}
	e := el.Value.(*dedupEntry)
	if !e.done || !e.copied || e.size != len(data) || maphash.Bytes(d.seed, data) != e.digest {
		return "", "", false
	}
	d.order.MoveToFront(el)
	return e.subject, e.channel, true
}

// remove forgets el.
func (d *dedup) remove(el *list.Element) {
	e := el.Value.(*dedupEntry)
	d.order.Remove(el)
	delete(d.entries, e.key)
	if d.byID[e.key.id] == el {
		delete(d.byID, e.key.id)
	}
}

// evict forgets the least recently used handled ids beyond max. In-flight claims are kept:
// their number is bounded by the handlers running at once.
func (d *dedup) evict() {
	for el := d.order.Back(); el != nil && d.order.Len() > d.max; {
		prev := el.Prev()
		if el.Value.(*dedupEntry).done {
			d.remove(el)
		}
		el = prev
	}
}
