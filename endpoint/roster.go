package endpoint

import (
	"context"
	"github.com/cotal-go/cotal/wire"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Peer is one instance in the roster.
type Peer struct {
	// Presence is the last valid presence row; after a delete it keeps the last row seen.
	Presence wire.Presence
	// Online is false when the peer announced offline, its ts is older than the liveness
	// window, or its key was deleted or purged (SPEC §6).
	Online bool
	// LastSeen is the ts of the last valid heartbeat.
	LastSeen time.Time
	// Removed is set when the peer's presence key was deleted or purged: the bucket no longer
	// lists it, and a view of the bucket as it is leaves the peer out. A later row clears it.
	Removed bool
}

// RosterEventKind says what changed about a peer.
type RosterEventKind string

// The roster event kinds.
const (
	PeerOnline  RosterEventKind = "online"  // first seen online, or back online
	PeerUpdated RosterEventKind = "updated" // still online; card, status or attention changed
	PeerOffline RosterEventKind = "offline" // went offline: announced, stale, or deleted
)

// RosterEvent is one change to the roster.
type RosterEvent struct {
	Kind RosterEventKind
	Peer Peer
}

// rosterEventBuffer is each subscriber's buffer; events beyond it are dropped and counted.
const rosterEventBuffer = 256

// Roster is the presence directory of the space, kept current by a watch on the presence
// bucket (SPEC §6). Offline peers stay listed for observability. It is safe for concurrent use.
type Roster struct {
	e *Endpoint

	mu          sync.Mutex
	peers       map[string]*Peer
	subs        map[int]chan RosterEvent
	nextSub     int
	closed      bool
	watching    bool          // the watch delivered its initial values and is running
	loaded      chan struct{} // closed when the first watch has delivered its initial values
	loadedOnce  sync.Once
	lastUpdate  time.Time // last entry from the watch
	unseenWrite time.Time // first own heartbeat written and not yet seen by the watch
}

func newRoster(e *Endpoint) *Roster {
	return &Roster{e: e, peers: make(map[string]*Peer), subs: make(map[int]chan RosterEvent),
		loaded: make(chan struct{})}
}

// Loaded is closed once the roster holds every row the presence bucket had when its watch
// started; a Snapshot taken after it is complete, not a partial first read.
func (r *Roster) Loaded() <-chan struct{} { return r.loaded }

// Snapshot returns every known peer, this instance included, sorted by id. Online reflects
// the liveness window at the time of the call.
func (r *Roster) Snapshot() []Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	out := make([]Peer, 0, len(r.peers))
	for _, p := range r.peers {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.Presence.Card.ID, b.Presence.Card.ID) })
	return out
}

// Peer returns the peer with instance id, if known.
func (r *Roster) Peer(id string) (Peer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(time.Now())
	p, ok := r.peers[id]
	if !ok {
		return Peer{}, false
	}
	return *p, true
}

// Subscribe returns a channel of roster changes from now on and a cancel function. Delivery
// never blocks the roster: when the subscriber falls rosterEventBuffer events behind, later
// events are dropped (counted in Stats.RosterEventsDropped); Snapshot is always complete. The
// channel is closed by cancel or when the Endpoint closes.
func (r *Roster) Subscribe() (<-chan RosterEvent, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan RosterEvent, rosterEventBuffer)
	if r.closed {
		close(ch)
		return ch, func() {}
	}
	id := r.nextSub
	r.nextSub++
	r.subs[id] = ch
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if c, ok := r.subs[id]; ok {
			delete(r.subs, id)
			close(c)
		}
	}
}

// Fresh reports whether the roster can be trusted right now: the watch is running and has
// delivered an update, at least this instance's own heartbeat, within two heartbeats.
func (r *Roster) Fresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watching && time.Since(r.lastUpdate) <= 2*r.e.opts.Heartbeat
}

func (r *Roster) closeSubscribers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for id, c := range r.subs {
		delete(r.subs, id)
		close(c)
	}
}

// ownWritten notes a successful own heartbeat, for stall detection.
func (r *Roster) ownWritten(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unseenWrite.IsZero() {
		r.unseenWrite = at
	}
}

// run keeps a watch on the presence bucket until ctx ends, rebuilding it when it dies or
// stalls, including after a reconnect that lost its consumer.
func (r *Roster) run(ctx context.Context) {
	backoff := newBackoff(250*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		w, err := r.e.presenceKV.WatchAll(ctx)
		if err != nil {
			r.e.log.Warn("presence watch failed; retrying", "err", err)
			backoff.wait(ctx)
			continue
		}
		backoff.reset()
		reason := r.follow(ctx, w)
		_ = w.Stop()
		r.setWatching(false)
		if ctx.Err() == nil {
			r.e.stats.rebuilds.Add(1)
			r.e.log.Info("rebuilding the presence watch", "reason", reason)
		}
	}
}

// follow applies watch updates and sweeps stale peers until the watch ends, stalls, or ctx
// ends, and says why it stopped.
func (r *Roster) follow(ctx context.Context, w jetstream.KeyWatcher) string {
	tick := time.NewTicker(r.e.opts.Heartbeat / 2)
	defer tick.Stop()
	r.mu.Lock()
	r.unseenWrite = time.Time{}
	r.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return "closing"
		case entry, ok := <-w.Updates():
			if !ok {
				return "watch closed"
			}
			if entry == nil {
				r.setWatching(true)
				continue
			}
			r.apply(entry)
		case now := <-tick.C:
			r.mu.Lock()
			r.sweepLocked(now)
			stalled := !r.unseenWrite.IsZero() && now.Sub(r.unseenWrite) > 2*r.e.opts.Heartbeat
			r.mu.Unlock()
			if stalled && r.e.nc.IsConnected() {
				return "own heartbeat not seen for two heartbeats"
			}
		}
	}
}

func (r *Roster) setWatching(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watching = on
	if on {
		r.lastUpdate = time.Now()
		r.loadedOnce.Do(func() { close(r.loaded) })
	}
}

// apply folds one watch entry into the roster. A delete or purge marks the peer offline at
// once; a row that is not a valid Presence under its own key is dropped and counted (SPEC §6;
// LAYOUT.md "Reply-subject injection").
func (r *Roster) apply(entry jetstream.KeyValueEntry) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastUpdate = now
	key := entry.Key()
	if key == r.e.id {
		r.unseenWrite = time.Time{}
	}
	if op := entry.Operation(); op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge {
		p, ok := r.peers[key]
		if !ok {
			return
		}
		wasOnline := p.Online
		p.Online, p.Removed = false, true
		if wasOnline {
			r.publishLocked(RosterEvent{Kind: PeerOffline, Peer: *p})
		}
		return
	}
	p, err := wire.DecodePresence(key, entry.Value())
	if err != nil {
		r.e.stats.presenceDropped.Add(1)
		r.e.log.Debug("dropped an invalid presence row", "key", key, "err", err)
		return
	}
	next := Peer{Presence: *p, LastSeen: time.UnixMilli(p.TS),
		Online: p.EffectiveStatus(now, r.e.opts.LivenessWindow) != wire.StatusOffline}
	prev, known := r.peers[key]
	r.peers[key] = &next
	switch {
	case next.Online && (!known || !prev.Online):
		r.publishLocked(RosterEvent{Kind: PeerOnline, Peer: next})
	case !next.Online && known && prev.Online:
		r.publishLocked(RosterEvent{Kind: PeerOffline, Peer: next})
	case next.Online && changed(prev.Presence, next.Presence):
		r.publishLocked(RosterEvent{Kind: PeerUpdated, Peer: next})
	}
}

// sweepLocked marks peers whose last heartbeat left the liveness window offline (SPEC §6).
func (r *Roster) sweepLocked(now time.Time) {
	for _, p := range r.peers {
		if p.Online && p.Presence.Stale(now, r.e.opts.LivenessWindow) {
			p.Online = false
			r.publishLocked(RosterEvent{Kind: PeerOffline, Peer: *p})
		}
	}
}

// publishLocked fans ev out without blocking.
func (r *Roster) publishLocked(ev RosterEvent) {
	for _, c := range r.subs {
		select {
		case c <- ev:
		default:
			r.e.stats.rosterDropped.Add(1)
		}
	}
}

// changed reports whether anything but the heartbeat time differs between two rows.
func changed(a, b wire.Presence) bool {
	a.TS, b.TS = 0, 0
	if a.Status != b.Status || a.Activity != b.Activity || a.Attention != b.Attention ||
		!maps.Equal(a.ChannelModes, b.ChannelModes) {
		return true
	}
	return !cardsEqual(a.Card, b.Card)
}

func cardsEqual(a, b wire.AgentCard) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Kind == b.Kind && a.Role == b.Role &&
		a.Description == b.Description && slices.Equal(a.Tags, b.Tags) &&
		a.ProtocolVersion == b.ProtocolVersion
}
