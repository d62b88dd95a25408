package chaos_test

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cotal-go/cotal/chaos"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

// world is what the load test knows about every publish, join, leave, credential and
// surfacing, and the invariant violations it saw. The Handlers check the invariants at
// surfacing time, under the lock, so they hold at every moment and not only at the end.
type world struct {
	mu         sync.Mutex
	pubs       map[string]*pubRec
	surf       []chaos.Surfacing
	members    map[string]map[string][]*interval // agent id → channel → intervals
	joining    map[string]map[string]time.Time   // agent id → channel → start of a Join in flight
	finalACL   map[string][]string               // agent id → the ACL of its latest credential
	durables   map[string][]durableSeen          // message id → durable copies surfaced
	violations []string
	kinds      map[string]int // violations by format
	counts     map[string]int
}

// pubRec is one publish: when it started, when (and whether) JetStream acknowledged it.
type pubRec struct {
	kind, target, sender string
	start, acked         time.Time
}

// interval is one membership of a channel: a Join call and the Leave that ended it.
type interval struct {
	joinStart, joinEnd   time.Time
	durable              bool
	leaveStart, leaveEnd time.Time // zero while joined
}

func newWorld() *world {
	return &world{pubs: map[string]*pubRec{}, members: map[string]map[string][]*interval{},
		joining:  map[string]map[string]time.Time{},
		finalACL: map[string][]string{}, durables: map[string][]durableSeen{}, kinds: map[string]int{}, counts: map[string]int{}}
}

func (w *world) count(what string) {
	w.mu.Lock()
	w.counts[what]++
	w.mu.Unlock()
}

func (w *world) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violationLocked(format, args...)
}

// violationLocked records a violation, counted by kind: its format.
func (w *world) violationLocked(format string, args ...any) {
	w.counts["violations"]++
	w.kinds[format]++
	if len(w.violations) < 20 {
		w.violations = append(w.violations, fmt.Sprintf(format, args...))
	}
}

// published records a publish before it is sent, so no surfacing can precede the record.
func (w *world) published(id, kind, target, sender string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pubs[id] = &pubRec{kind: kind, target: target, sender: sender, start: time.Now()}
	w.counts["publish "+kind]++
}

func (w *world) acked(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pubs[id].acked = time.Now()
}

// joinBegins records that agent calls Join on channel, until the returned func is called.
func (w *world) joinBegins(agent, channel string) (start time.Time, ends func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.joining[agent] == nil {
		w.joining[agent] = map[string]time.Time{}
	}
	start = time.Now()
	w.joining[agent][channel] = start
	return start, func() {
		w.mu.Lock()
		delete(w.joining[agent], channel)
		w.mu.Unlock()
	}
}

// joined records a successful join made between start and now.
func (w *world) joined(agent, channel string, start time.Time, durable bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.members[agent] == nil {
		w.members[agent] = map[string][]*interval{}
	}
	w.members[agent][channel] = append(w.members[agent][channel],
		&interval{joinStart: start, joinEnd: time.Now(), durable: durable})
	w.counts["join"]++
}

// left closes the agent's open intervals of channel with a leave made between start and now.
func (w *world) left(agent, channel string, start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, iv := range w.members[agent][channel] {
		if iv.leaveEnd.IsZero() {
			iv.leaveStart, iv.leaveEnd = start, time.Now()
		}
	}
	w.counts["leave"]++
}

// surfaced records one surfacing by incarnation inc of agent and checks, at that moment:
// channel content only inside the incarnation's ACL (SPEC §9), nothing published after its
// credential was revoked (SPEC §9 item 6), and no durable copy of a message published after a
// leave that ended every membership (SPEC §7: leave is a hard read boundary).
func (w *world) surfaced(agent string, inc *incarnation, d endpoint.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := d.Message.ID
	w.surf = append(w.surf, chaos.Surfacing{Receiver: agent, Incarnation: inc.name, ID: id})
	if d.Meta.Kind == endpoint.MetaChannel && !covers(inc.acl, d.Meta.Channel) {
		w.violationLocked("%s surfaced %s of channel %s outside its read ACL %v (durable %v, historical %v, redelivered %v)",
			inc.name, id, d.Meta.Channel, inc.acl, d.Meta.Durable, d.Meta.Historical, d.Meta.Redelivered)
	}
	if d.Meta.Durable {
		w.durables[id] = append(w.durables[id], durableSeen{agent: agent, channel: d.Meta.Channel})
	}
	p := w.pubs[id]
	if p == nil {
		return
	}
	if cut := inc.cutAt(); !cut.IsZero() && p.start.After(cut) {
		w.violationLocked("%s surfaced %s, published %v after its credential was revoked",
			inc.name, id, p.start.Sub(cut))
	}
	if d.Meta.Durable && !w.admitsLocked(agent, d.Meta.Channel, p) {
		w.violationLocked("%s surfaced a durable copy of %s on %s, published after it left", inc.name, id, d.Meta.Channel)
	}
}

// checkJoinBounds checks, once every acknowledgement is known, that each durable copy
// surfaced inside a membership interval (SPEC §7): stored after the join began and sent
// before the leave ended.
func (w *world) checkJoinBounds() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, seen := range w.durables {
		p := w.pubs[id]
		if p == nil || p.acked.IsZero() {
			continue
		}
		for _, s := range seen {
			if !slices.ContainsFunc(w.members[s.agent][s.channel], func(iv *interval) bool {
				return p.acked.After(iv.joinStart) && (iv.leaveEnd.IsZero() || p.start.Before(iv.leaveEnd))
			}) {
				w.violationLocked("%s surfaced a durable copy of %s on %s outside every membership interval",
					s.agent, id, s.channel)
			}
		}
	}
}

// durableSeen is a durable copy surfaced by an agent.
type durableSeen struct{ agent, channel string }

// audience is who owes and who may surface a publish (SPEC §4, §7): a DM its target; an
// anycast one holder of its role; a channel message every other agent that was durably
// joined before it was sent, did not start leaving before it was stored, and still reads the
// channel, while any other agent reading the channel may surface it.
func (w *world) audience(holders map[string][]string) func(chaos.Publish) chaos.Audience {
	return func(p chaos.Publish) chaos.Audience {
		w.mu.Lock()
		defer w.mu.Unlock()
		rec := w.pubs[p.ID]
		switch rec.kind {
		case chaos.KindDM:
			return chaos.Audience{Receivers: []string{rec.target}}
		case chaos.KindAnycast:
			return chaos.Audience{Receivers: holders[rec.target], One: true}
		}
		var owed, may []string
		for agent, acl := range w.finalACL {
			if agent == rec.sender {
				continue
			}
			may = append(may, agent)
			if covers(acl, rec.target) && slices.ContainsFunc(w.members[agent][rec.target], func(iv *interval) bool {
				return iv.durable && iv.joinEnd.Before(rec.start) && (iv.leaveStart.IsZero() || iv.leaveStart.After(rec.acked))
			}) {
				owed = append(owed, agent)
			}
		}
		return chaos.Audience{Receivers: owed, May: may}
	}
}

// publishes returns every publish for the checker.
func (w *world) publishes() []chaos.Publish {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]chaos.Publish, 0, len(w.pubs))
	for id, p := range w.pubs {
		out = append(out, chaos.Publish{ID: id, Kind: p.kind, Target: p.target, Acked: !p.acked.IsZero()})
	}
	return out
}

func (w *world) surfacings() []chaos.Surfacing {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]chaos.Surfacing(nil), w.surf...)
}

// covers reports whether a read ACL covers a concrete channel (SPEC §9).
func covers(acl []string, channel string) bool {
	return slices.ContainsFunc(acl, func(p string) bool { return wire.MatchChannel(p, channel) })
}

// admitsLocked reports whether a membership of agent in channel admits a durable copy of p:
// one not left before p was published, or a Join in flight that began before p was
// acknowledged. Such a Join's cursor may precede p, and its copies may surface before Join
// returns and the membership is recorded.
func (w *world) admitsLocked(agent, channel string, p *pubRec) bool {
	if start, ok := w.joining[agent][channel]; ok && (p.acked.IsZero() || p.acked.After(start)) {
		return true
	}
	return slices.ContainsFunc(w.members[agent][channel], func(iv *interval) bool {
		return iv.leaveEnd.IsZero() || p.start.Before(iv.leaveEnd)
	})
}
