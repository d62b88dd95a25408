package endpoint

import (
	"hash/maphash"
	"sync"
)

// DefaultDedupWindow is how many of the most recently met message ids an Endpoint always
// remembers to drop later copies of the same message (SPEC §4, §7).
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
//
// Memory is bounded without per-id bookkeeping: ids live in two generations of at most max
// each. A new or used id goes into the current one; when it is full it becomes the previous
// one, and what the previous one held is forgotten, but for claims still in flight, which are
// carried over (their number is bounded by the handlers running at once). So the max most
// recently met ids are remembered, and never more than twice as many.
type dedup struct {
	mu        sync.Mutex
	max       int
	cur, prev dedupGen
	// seed keys the payload digests. It is secret to this process, so no peer can compute
	// a digest, let alone craft a payload whose digest equals another's.
	seed maphash.Seed
}

// dedupGen is one generation of remembered ids. Its entries are only ever appended: an id
// that moves on or is forgotten leaves its slot behind until the generation is reused, and
// the maps hold positions, which keeps them small to grow.
type dedupGen struct {
	entries []dedupEntry
	index   map[dedupKey]int
	// byID finds a handled channel copy by its message id alone, the one id a JetStream copy
	// carries outside its payload (Nats-Msg-Id). An id two senders used points at the later
	// one; the other is then only found by the full path, which is always correct.
	byID map[string]int
}

func newDedupGen() dedupGen {
	return dedupGen{index: map[dedupKey]int{}, byID: map[string]int{}}
}

func newDedup(max int) *dedup {
	if max <= 0 {
		max = DefaultDedupWindow
	}
	return &dedup{max: max, cur: newDedupGen(), prev: newDedupGen(), seed: maphash.MakeSeed()}
}

// claim registers a copy of key. Only a claimFresh result lets the caller surface the copy; it
// must then call finish.
func (d *dedup) claim(key dedupKey) claim {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.use(key); ok {
		if d.cur.entries[i].done {
			return claimDone
		}
		return claimInFlight
	}
	d.add(dedupEntry{key: key})
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
	i, ok := d.use(key)
	if !ok {
		return
	}
	if !handled {
		// A claim in flight has no byID entry: only a handled copy gets one.
		delete(d.cur.index, key)
		return
	}
	e := &d.cur.entries[i]
	e.done = true
	if c != nil {
		e.copied, e.digest, e.size, e.subject, e.channel = true, digest, len(c.data), c.subject, c.channel
		d.cur.byID[key.id] = i
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
	var key dedupKey
	if i, found := d.cur.byID[id]; found {
		key = d.cur.entries[i].key
	} else if i, found := d.prev.byID[id]; found {
		key = d.prev.entries[i].key
	} else {
		return "", "", false
	}
	// The slot byID names may have moved on or been forgotten; the index says where it is.
	i, found := d.use(key)
	if !found {
		return "", "", false
	}
	e := &d.cur.entries[i]
	if !e.done || !e.copied || e.size != len(data) || maphash.Bytes(d.seed, data) != e.digest {
		return "", "", false
	}
	return e.subject, e.channel, true
}

// use finds key's entry in the current generation, moving it there first when the previous
// one held it, and returns its position.
func (d *dedup) use(key dedupKey) (int, bool) {
	if i, ok := d.cur.index[key]; ok {
		return i, true
	}
	i, ok := d.prev.index[key]
	if !ok {
		return 0, false
	}
	delete(d.prev.index, key)
	return d.add(d.prev.entries[i]), true
}

// add appends e to the current generation, turning the generations over first when it is
// full, and returns its position.
func (d *dedup) add(e dedupEntry) int {
	if len(d.cur.entries) >= d.max {
		d.turnOver()
	}
	i := len(d.cur.entries)
	d.cur.entries = append(d.cur.entries, e)
	d.cur.index[e.key] = i
	if e.copied {
		d.cur.byID[e.key.id] = i
	}
	return i
}

// turnOver makes the current generation the previous one and forgets the previous one's
// handled ids; its claims in flight go into the new current generation.
func (d *dedup) turnOver() {
	old := d.prev
	d.prev = d.cur
	var inFlight []dedupEntry
	for _, i := range old.index {
		if !old.entries[i].done {
			inFlight = append(inFlight, old.entries[i])
		}
	}
	clear(old.index)
	clear(old.byID)
	clear(old.entries) // drops the strings the slots still point at
	d.cur = dedupGen{entries: old.entries[:0], index: old.index, byID: old.byID}
	for _, e := range inFlight {
		d.cur.index[e.key] = len(d.cur.entries)
		d.cur.entries = append(d.cur.entries, e)
	}
}
