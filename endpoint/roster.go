package endpoint

import (
	"maps"
	"slices"
	"time"

	"github.com/cotal-go/cotal/wire"
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
//
// In-process Endpoints of one broker and space with the same Heartbeat and LivenessWindow
// read one shared directory fed by one watch, so a process of N Endpoints decodes each row
// once, not N times; each Endpoint's Roster still has its own subscribers and counters, and
// one Endpoint closing leaves the others' rosters running.
type Roster struct {
	e      *Endpoint
	dir    *directory
	loaded <-chan struct{}
	// closed is set when the Endpoint leaves the directory; guarded by dir.mu.
	closed bool
}

// Loaded is closed once the roster holds every row the presence bucket had when the Endpoint
// connected; a Snapshot taken after it is complete, not a partial first read.
func (r *Roster) Loaded() <-chan struct{} { return r.loaded }

// Snapshot returns every known peer, this instance included, sorted by id. Online reflects
// the liveness window at the time of the call.
func (r *Roster) Snapshot() []Peer { return r.dir.snapshot() }

// Peer returns the peer with instance id, if known.
func (r *Roster) Peer(id string) (Peer, bool) { return r.dir.peer(id) }

// Subscribe returns a channel of roster changes from now on and a cancel function. Delivery
// never blocks the roster: when the subscriber falls rosterEventBuffer events behind, later
// events are dropped (counted in Stats.RosterEventsDropped); Snapshot is always complete. The
// channel is closed by cancel or when the Endpoint closes.
func (r *Roster) Subscribe() (<-chan RosterEvent, func()) { return r.dir.subscribe(r) }

// Fresh reports whether the roster can be trusted right now: the watch is running and has
// delivered an update, at least a heartbeat of this process's instances, within two
// heartbeats.
func (r *Roster) Fresh() bool { return r.dir.fresh() }

// ownWritten notes a successful own heartbeat, for stall detection.
func (r *Roster) ownWritten(at time.Time) { r.dir.ownWritten(r.e.id, at) }

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
