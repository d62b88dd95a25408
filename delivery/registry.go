package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// WriterIdentity is the writerIdentity of every membership record the Service writes
// (docs/storage.md "Membership records").
const WriterIdentity = "cotal-delivery"

// registry owns the membership registry cotal_members_<s> (SPEC §7): the in-memory view, the
// compare-and-set writes that persist it, and the watch that loads it at start and repairs
// keys overwritten behind its back.
//
// Writes of different keys run concurrently; writes of one key are serial. Lock order: the
// key's lock (keyLock), then view.mu; revMu is a leaf. A key's lock serializes its view
// update, its compare-and-set write and its revision bookkeeping, so a record's revision is
// never raced by another write of the same record; view.mu is held only for in-memory work,
// plus the CHAT cursor read of a join or leave (the join fence, doc.go).
type registry struct {
	view       *memberView
	kv         jetstream.KeyValue
	js         jetstream.JetStream
	chatStream string
	log        *slog.Logger
	repairs    *atomic.Int64 // records rewritten after a write we did not make
	invalid    *atomic.Int64 // values that are not valid records
	loaded     *gate         // opens once the first watch has loaded every record; never closes
	kick       chan struct{} // losses were counted (lost.go); buffered 1

	keyLocks [keyLockStripes]sync.Mutex // by hash of the member key; see keyLock
	fence    fence                      // batches the cursor reads of joins and leaves

	revMu   sync.Mutex
	revs    map[string]uint64 // KV revision of each key, last written or seen; guarded by revMu
	started bool              // the first load finished; guarded by revMu
}

// keyLockStripes is how many locks the member keys share. Two keys on one stripe only wait
// for each other; a fixed set needs no bookkeeping of keys that come and go.
const keyLockStripes = 64

// keyLock returns the lock that serializes every write of the record of channel and owner.
func (r *registry) keyLock(channel, owner string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(wire.MemberKey(channel, owner)))
	return &r.keyLocks[h.Sum32()%keyLockStripes]
}

// rev returns the revision last written or seen for key.
func (r *registry) rev(key string) uint64 {
	r.revMu.Lock()
	defer r.revMu.Unlock()
	return r.revs[key]
}

// setRev records rev for key.
func (r *registry) setRev(key string, rev uint64) {
	r.revMu.Lock()
	defer r.revMu.Unlock()
	r.revs[key] = rev
}

// join makes owner a durable member of channel with a fresh join cursor and a higher
// generation, and persists the record before returning it (SPEC §7). The cursor is read and
// the record inserted under the join fence, so no message after the cursor is missed and none
// at or before it is fanned out under the new generation (doc.go). The interval the join
// replaces is kept, closed, for messages the fan-out has not routed yet. A failed write
// restores the previous state.
func (r *registry) join(ctx context.Context, channel, owner string) (wire.Membership, error) {
	l := r.keyLock(channel, owner)
	l.Lock()
	defer l.Unlock()
	floor := r.pruneFloor(ctx, channel, owner)

	var (
		prev, next member
		had        bool
	)
	err := r.underFence(ctx, func(cursor uint64) {
		prev, had = r.view.lookupLocked(channel, owner)
		next = member{
			rec: wire.Membership{
				Channel: channel, Owner: owner, State: wire.MemberDurableActive,
				JoinCursor: cursor, Activated: true, Generation: prev.rec.Generation + 1,
				WriterIdentity: WriterIdentity, UpdatedAt: time.Now().UnixMilli(),
			},
			past:    closePast(prev, had, cursor, floor),
			joining: true,
		}
		r.view.putLocked(next)
	})
	if err != nil {
		return wire.Membership{}, err
	}

	if err := r.persistLocked(ctx, next); err != nil {
		r.restore(channel, owner, prev, had)
		return wire.Membership{}, err
	}
	r.view.mu.Lock()
	next.joining = false
	r.view.putLocked(next)
	r.view.mu.Unlock()
	return next.rec, nil
}

// closePast returns the closed intervals a new join keeps: prev's, plus prev's current one
// closed at its leave cursor, or at the new join cursor when prev was still open. Intervals
// that end at or before floor, the fan-out's ack floor, are dropped: the fan-out has routed
// every message in them.
func closePast(prev member, had bool, cursor, floor uint64) []pastInterval {
	if !had {
		return nil
	}
	end := cursor
	if prev.rec.LeaveCursor != nil {
		end = *prev.rec.LeaveCursor
	}
	all := append(slices.Clone(prev.past), pastInterval{
		Generation: prev.rec.Generation, JoinCursor: prev.rec.JoinCursor, LeaveCursor: end,
	})
	var keep []pastInterval
	for _, p := range all {
		if p.LeaveCursor > floor && p.LeaveCursor > p.JoinCursor {
			keep = append(keep, p)
		}
	}
	if len(keep) > maxPastIntervals {
		keep = keep[len(keep)-maxPastIntervals:]
	}
	return keep
}

// leave sets owner's leave cursor on channel to the CHAT last sequence, a hard read boundary
// for the backstop (SPEC §7). generation 0 leaves the current membership; any other value
// leaves only that one. It reports false, and writes nothing, when there is no such active
// membership.
func (r *registry) leave(ctx context.Context, channel, owner string, generation uint64) (bool, error) {
	l := r.keyLock(channel, owner)
	l.Lock()
	defer l.Unlock()
	leavable := func() (member, bool) {
		m, ok := r.view.lookupLocked(channel, owner)
		return m, ok && m.rec.LeaveCursor == nil && (generation == 0 || generation == m.rec.Generation)
	}
	// Checked before the fence too, so a leave of nothing does not hold it; the key's lock
	// keeps the record as it is until the fence is held.
	r.view.mu.Lock()
	_, open := leavable()
	r.view.mu.Unlock()
	if !open {
		return false, nil
	}

	var prev, next member
	err := r.underFence(ctx, func(cursor uint64) {
		if prev, open = leavable(); !open {
			return
		}
		cursor = max(cursor, prev.rec.JoinCursor) // a purged stream must not put leave before join
		next = prev
		next.rec.LeaveCursor, next.rec.UpdatedAt = &cursor, time.Now().UnixMilli()
		r.view.putLocked(next)
	})
	if err != nil || !open {
		return false, err
	}

	if err := r.persistLocked(ctx, next); err != nil {
		r.restore(channel, owner, prev, true)
		return false, err
	}
	return true, nil
}

// restore puts back the state a failed write replaced. Copies the fan-out routed under a
// rolled-back join waited in INBOX (member.joining), carry its generation and fail
// authorizes, so nothing leaks.
func (r *registry) restore(channel, owner string, prev member, had bool) {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	if had {
		r.view.putLocked(prev)
	} else {
		r.view.removeLocked(channel, owner)
	}
}

// pruneFloor is the fan-out's ack floor when owner already has a record on channel, whose
// closed intervals a join may prune, and 0 (prune nothing) for a first join, which then skips
// the consumer read. The caller holds the key's lock, so the record cannot change meanwhile.
func (r *registry) pruneFloor(ctx context.Context, channel, owner string) uint64 {
	r.view.mu.Lock()
	_, had := r.view.lookupLocked(channel, owner)
	r.view.mu.Unlock()
	if !had {
		return 0
	}
	return r.fanoutAckFloor(ctx)
}

// fanoutAckFloor is the CHAT sequence through which the fan-out has routed and acknowledged
// every message, or 0 when it cannot be read (then nothing is pruned).
func (r *registry) fanoutAckFloor(ctx context.Context) uint64 {
	c, err := r.js.Consumer(ctx, r.chatStream, wire.FanoutConsumer)
	if err != nil {
		r.log.Warn("could not read the fan-out ack floor; keeping every closed interval", "err", err)
		return 0
	}
	return c.CachedInfo().AckFloor.Stream
}

// chatLastSeq reads the CHAT frontier, the cursor of a join or leave (SPEC §7).
func (r *registry) chatLastSeq(ctx context.Context) (uint64, error) {
	st, err := r.js.Stream(ctx, r.chatStream)
	if err != nil {
		return 0, fmt.Errorf("read the CHAT frontier of %s: %w", r.chatStream, err)
	}
	return st.CachedInfo().State.LastSeq, nil
}

// persistLocked writes rec with compare-and-set against the revision last seen for its key.
// A conflict means someone else wrote the key (the service is the only legitimate writer, so
// an injected reply subject, or our own write whose acknowledgement was lost): the in-memory
// view is authoritative, so the record is written over the current revision. The caller holds
// the key's lock.
func (r *registry) persistLocked(ctx context.Context, m member) error {
	key := wire.MemberKey(m.rec.Channel, m.rec.Owner)
	r.view.mu.Lock()
	lost := r.view.lostSnapshotLocked(m.rec.Channel, m.rec.Owner)
	r.view.mu.Unlock()
	data, err := json.Marshal(storedMember{Membership: m.rec, Previous: m.past, Lost: lost})
	if err != nil {
		return fmt.Errorf("encode membership %s: %w", key, err)
	}
	rev, err := r.kv.Update(ctx, key, data, r.rev(key))
	if errors.Is(err, jetstream.ErrKeyExists) {
		r.repairs.Add(1)
		r.log.Warn("membership key was written by someone else; overwriting it", "key", key)
		rev, err = r.overwrite(ctx, key, data)
	}
	if err != nil {
		return fmt.Errorf("write membership %s to %s: %w", key, r.kv.Bucket(), err)
	}
	r.setRev(key, rev)
	return nil
}

// overwrite writes data over whatever key holds now, still by compare-and-set.
func (r *registry) overwrite(ctx context.Context, key string, data []byte) (uint64, error) {
	cur, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return r.kv.Create(ctx, key, data)
	}
	if err != nil {
		return 0, err
	}
	return r.kv.Update(ctx, key, data, cur.Revision())
}

// run is the membership watch. Its first pass loads every record into the view; after that,
// a value at a revision this service did not write is a foreign write, logged, counted and
// repaired from the view, so the persisted registry converges back to the authoritative one.
// Once loaded it also writes the losses counted into their records (lost.go).
func (r *registry) run(ctx context.Context, up func()) error {
	w, err := r.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", r.kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	retry := time.NewTicker(lostFlushEvery)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.kick:
			r.flushLoaded(ctx)
		case <-retry.C:
			r.flushLoaded(ctx)
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("watch of bucket %s closed", r.kv.Bucket())
			case e == nil:
				r.finishLoad()
				up()
			default:
				r.observe(ctx, e)
			}
		}
	}
}

// flushLoaded writes the losses counted, once the view is loaded (before that no record is
// known, and nothing can have been counted).
func (r *registry) flushLoaded(ctx context.Context) {
	if r.loaded.isOpen() {
		r.flushLost(ctx)
	}
}

func (r *registry) finishLoad() {
	r.revMu.Lock()
	r.started = true
	r.revMu.Unlock()
	r.loaded.set(true)
}

// observe handles one watched value: loaded into the view during the first pass, repaired
// when it is a later write we did not make. It takes the key's lock, so a write of ours in
// flight has recorded its revision before its own value is judged here.
func (r *registry) observe(ctx context.Context, e jetstream.KeyValueEntry) {
	key := e.Key()
	channel, owner, err := wire.ParseMemberKey(key)
	if err != nil {
		r.invalid.Add(1)
		r.log.Warn("ignoring a value under a key that names no membership", "key", key, "revision", e.Revision())
		return
	}
	l := r.keyLock(channel, owner)
	l.Lock()
	defer l.Unlock()
	r.revMu.Lock()
	seen, started := e.Revision() <= r.revs[key], r.started
	if !seen {
		r.revs[key] = e.Revision()
	}
	r.revMu.Unlock()
	switch {
	case seen:
		// our own write, or a value we have already seen
	case !started:
		r.load(key, e)
	default:
		r.repair(ctx, channel, owner, key, e.Revision())
	}
}

// load adds a stored record to the view at start. A value that is not a valid record is
// dropped and counted: no membership is better than one an agent could have forged.
func (r *registry) load(key string, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		return
	}
	m, lost, err := decodeMember(key, e.Value())
	if err != nil {
		r.invalid.Add(1)
		r.log.Error("dropping an invalid membership record; the member must join again",
			"key", key, "revision", e.Revision(), "err", err)
		return
	}
	r.view.mu.Lock()
	r.view.putLocked(m)
	if lost != nil {
		r.view.lost[membershipKey{m.rec.Channel, m.rec.Owner}] = lost
	}
	r.view.mu.Unlock()
}

// repair writes the view's record back over a foreign write to key. The caller holds the
// key's lock.
func (r *registry) repair(ctx context.Context, channel, owner, key string, rev uint64) {
	r.view.mu.Lock()
	m, ok := r.view.lookupLocked(channel, owner)
	r.view.mu.Unlock()
	if !ok {
		r.invalid.Add(1)
		r.log.Warn("a membership key with no record was written by someone else; ignoring it",
			"key", key, "revision", rev)
		return
	}
	r.repairs.Add(1)
	r.log.Warn("a membership record was overwritten by someone else; restoring it", "key", key, "revision", rev)
	if err := r.persistLocked(ctx, m); err != nil {
		r.log.Error("could not restore a membership record; the view stays authoritative",
			"key", key, "err", err)
	}
}
