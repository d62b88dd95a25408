package endpoint

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// directoryKey names the directory Endpoints may share: one in-process broker, one space, one
// heartbeat and liveness window, so every member judges staleness the same way.
type directoryKey struct {
	provider  nats.InProcessConnProvider
	space     string
	heartbeat time.Duration
	liveness  time.Duration
}

// directories holds the shared directories of this process by key. Lock order: directories.mu
// before a directory's mu; a directory's mu is never held while waiting for its watch.
var directories = struct {
	mu sync.Mutex
	m  map[directoryKey]*directory
}{m: make(map[directoryKey]*directory)}

// subscriber is one Subscribe channel and the Roster it was handed out by.
type subscriber struct {
	ch    chan RosterEvent
	owner *Roster
}

// directory is the presence directory behind one or more Rosters: the rows of the presence
// bucket, kept by one watch that runs on a member's connection (the carrier) and moves to
// another member when the carrier leaves.
type directory struct {
	key       directoryKey
	shared    bool
	loaded    chan struct{} // closed when the first watch has delivered its initial values
	once      sync.Once
	stop      context.CancelFunc
	done      chan struct{} // closed when run returns
	heartbeat time.Duration
	liveness  time.Duration

	mu         sync.Mutex
	members    map[*Endpoint]struct{}
	carrier    *Endpoint
	endWatch   context.CancelFunc // ends the watch on the carrier's connection
	watchDone  chan struct{}      // closed once that watch has stopped
	rows       map[string]*row
	subs       map[int]subscriber
	nextSub    int
	watching   bool                 // the watch delivered its initial values and is running
	lastUpdate time.Time            // last entry from the watch
	unseen     map[string]time.Time // member id → first own heartbeat written, not yet seen
	watchStart time.Time            // when the current watch began
	applied    uint64               // the last revision the watch delivered
	catchUps   []*catchUp           // members waiting for the watch to catch up (directorycatchup.go)
}

// joinDirectory adds e to the directory it shares with the other in-process Endpoints of its
// broker and space, starting one if there is none. An Endpoint reached over a link, or with
// a provider that cannot be a map key, gets a directory of its own.
func joinDirectory(ctx context.Context, e *Endpoint) (*Roster, error) {
	key := directoryKey{provider: e.opts.InProcess, space: e.space, heartbeat: e.opts.Heartbeat,
		liveness: e.opts.LivenessWindow}
	r := &Roster{e: e}
	if !sharesDirectory(key) {
		r.dir = newDirectory(key, false)
		r.dir.add(e)
		r.loaded = r.dir.loaded
		return r, nil
	}
	joined := time.Now()
	frontier, err := e.presenceFrontier(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the presence bucket's state: %w", err)
	}
	directories.mu.Lock()
	defer directories.mu.Unlock()
	d, ok := directories.m[key]
	if !ok {
		d = newDirectory(key, true)
		directories.m[key] = d
	}
	d.add(e)
	r.dir, r.loaded = d, d.waitFor(frontier, joined)
	return r, nil
}

// sharesDirectory reports whether Endpoints of key share one directory: in-process ones
// whose provider can be a map key.
func sharesDirectory(key directoryKey) bool {
	return key.provider != nil && reflect.ValueOf(key.provider).Comparable()
}

func newDirectory(key directoryKey, shared bool) *directory {
	ctx, cancel := context.WithCancel(context.Background())
	d := &directory{key: key, shared: shared, loaded: make(chan struct{}), stop: cancel,
		done: make(chan struct{}), heartbeat: key.heartbeat, liveness: key.liveness,
		members: make(map[*Endpoint]struct{}), rows: make(map[string]*row),
		subs: make(map[int]subscriber), unseen: make(map[string]time.Time)}
	go d.run(ctx)
	return d
}

func (d *directory) add(e *Endpoint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members[e] = struct{}{}
}

// leave removes r's Endpoint and closes its subscribers. When it carried the watch, leave
// returns once that watch has stopped, so the Endpoint's connection can drain; the last
// member stops the directory.
func (r *Roster) leave() {
	d := r.dir
	directories.mu.Lock()
	d.mu.Lock()
	delete(d.members, r.e)
	delete(d.unseen, r.e.id)
	r.closed = true
	for id, s := range d.subs {
		if s.owner == r {
			delete(d.subs, id)
			close(s.ch)
		}
	}
	var carried chan struct{}
	if d.carrier == r.e {
		d.carrier = nil
		d.endWatch()
		carried = d.watchDone
	}
	last := len(d.members) == 0
	d.mu.Unlock()
	if last && d.shared {
		delete(directories.m, d.key)
	}
	directories.mu.Unlock()
	if last {
		d.stop()
		<-d.done
		return
	}
	if carried != nil {
		<-carried
	}
}

// snapshot returns every row's peer, sorted by id, after sweeping stale peers.
func (d *directory) snapshot() []Peer {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked(time.Now())
	out := make([]Peer, 0, len(d.rows))
	for _, row := range d.rows {
		out = append(out, row.peer)
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.Presence.Card.ID, b.Presence.Card.ID) })
	return out
}

func (d *directory) peer(id string) (Peer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked(time.Now())
	row, ok := d.rows[id]
	if !ok {
		return Peer{}, false
	}
	return row.peer, true
}

func (d *directory) subscribe(r *Roster) (<-chan RosterEvent, func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := make(chan RosterEvent, rosterEventBuffer)
	if r.closed {
		close(ch)
		return ch, func() {}
	}
	id := d.nextSub
	d.nextSub++
	d.subs[id] = subscriber{ch: ch, owner: r}
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if s, ok := d.subs[id]; ok {
			delete(d.subs, id)
			close(s.ch)
		}
	}
}

func (d *directory) fresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.watching && time.Since(d.lastUpdate) <= 2*d.heartbeat
}

// ownWritten notes member id's successful heartbeat at at, for stall detection.
func (d *directory) ownWritten(id string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.unseen[id]; !ok {
		d.unseen[id] = at
	}
}

// publishLocked fans ev out without blocking; a full subscriber misses it, counted on the
// Endpoint that handed the subscription out.
func (d *directory) publishLocked(ev RosterEvent) {
	for _, s := range d.subs {
		select {
		case s.ch <- ev:
		default:
			s.owner.e.stats.rosterDropped.Add(1)
		}
	}
}

// sweepLocked marks peers whose last heartbeat left the liveness window offline (SPEC §6).
func (d *directory) sweepLocked(now time.Time) {
	for _, row := range d.rows {
		if row.peer.Online && row.peer.Presence.Stale(now, d.liveness) {
			row.peer.Online = false
			d.publishLocked(RosterEvent{Kind: PeerOffline, Peer: row.peer})
		}
	}
}
