package space

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// Everything that crosses a leaf link goes through a relay on each side (docs/leaf.md): one
// connection per linked space in the agent account (wire.LeafRelayPermissions). It sends
// every chat message, DM and presence write of this side's agents across, and publishes what
// arrives under the subject it stands for, where this side's streams and presence bucket
// store it. The connection does not echo, so what it publishes is never sent back. A leaf
// sends up under its own credential's id and hears down under it; the hub sends each of its
// agents' copies, and each copy one leaf sent up, down to every other leaf, so leaves reach
// each other through the hub alone. What is carried is checked both ways: a copy the broker
// sent on a reply subject an agent chose (a PubAck, a pulled or directly read stored message)
// is no publish of the sender it names; a copy naming an identity of this side's registry is
// a forgery, since only this side speaks for its agents; and on the hub, a leaf speaks only
// for ids no other active leaf spoke for first. Relayed presence records live for the
// bucket's TTL, so the other side's agents leave the roster on their own once the link is
// down.

// linksSpace reports whether the mesh relays space across a leaf link: every space on a hub,
// the spaces with a credential on a leaf.
func (m *Mesh) linksSpace(space string) bool {
	if m.opts.leaf() {
		_, ok := m.opts.Leaf.Creds[space]
		return ok
	}
	return m.opts.Leaf.Listen != ""
}

// startLeafRelay connects rt's relay when the space is linked; nil otherwise.
func (m *Mesh) startLeafRelay(rt *spaceRuntime) error {
	if !m.linksSpace(rt.name) || m.store == nil {
		return nil
	}
	r := &relay{m: m, space: rt.name, n: rt.names, dropped: m.relayDropper(rt)}
	in := rt.names.LeafUpFilterAll()
	if m.opts.leaf() {
		id, err := leafCredID(m.opts.Leaf.Creds[rt.name])
		if err != nil {
			return err
		}
		r.self, in = id, rt.names.LeafFilter(wire.LeafDown, id)
	} else {
		r.speakers = map[string]string{}
	}
	cred, err := m.store.InfraCredential(rt.name, provisioner.ProfileLeafRelay)
	if err != nil {
		return fmt.Errorf("%s credential: %w", provisioner.ProfileLeafRelay, err)
	}
	if r.nc, err = m.infraConn(provisioner.ProfileLeafRelay, cred, nats.NoEcho()); err != nil {
		return err
	}
	rt.relay = r.nc
	n := rt.names
	subs := map[string]nats.MsgHandler{
		"$KV." + n.PresenceBucket() + ".*": r.out,
		n.Prefix() + ".chat.>":             r.out,
		n.Prefix() + ".inst.>":             r.out,
		in:                                 r.in,
	}
	for subject, h := range subs {
		if _, err := r.nc.Subscribe(subject, h); err != nil {
			return fmt.Errorf("relay %s: %w", subject, err)
		}
	}
	if err := r.nc.Flush(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// maxSpeakers bounds the ids a hub's relay remembers leaves speaking for, per space: a leaf
// that invents ids cannot grow it without bound.
const maxSpeakers = 1 << 16

// leavesFresh is how long a hub's relay sends down to the leaf credentials it last read from
// the registry: a leaf minted since then hears the hub within it.
const leavesFresh = time.Second

// relay is one space's side of a leaf link.
type relay struct {
	m       *Mesh
	space   string
	n       wire.Names
	nc      *nats.Conn
	dropped func(dir, subject string, err error)
	// self is, on a leaf, the id of the leaf credential it links with; empty on the hub.
	self string

	mu sync.Mutex
	// speakers maps, on a hub, each id a leaf sent a copy of to that leaf's credential id;
	// nil on a leaf.
	speakers map[string]string
	// leaves are, on a hub, the active leaf credentials of the registry as read at read.
	leaves []string
	read   time.Time
}

// errStoredCopy refuses a message the broker sent from a stream (a pull or Direct Get
// answer), whatever reply subject the requester named: only publishes cross.
var errStoredCopy = errors.New("a copy the broker sent from a stream, not a publish")

// storedCopy reports whether msg is a copy the broker sent from a stream rather than a
// publish: a consumer's delivery carries a $JS.ACK reply, a Direct Get answer the
// Nats-Stream header. A publisher that sets either only keeps its own message from crossing.
func storedCopy(msg *nats.Msg) bool {
	return strings.HasPrefix(msg.Reply, "$JS.ACK.") || msg.Header.Get(nats.JSStream) != ""
}

// out sends a chat message, DM or presence write of one of this side's agents across; a DM
// to an agent of this side stays here.
func (r *relay) out(msg *nats.Msg) {
	sender, target, err := r.check(msg, msg.Subject)
	if err == nil && !r.m.registered(r.space, sender) {
		err = fmt.Errorf("sender %s is no agent of this side", sender)
	}
	if err != nil {
		r.dropped("out", msg.Subject, err)
		return
	}
	if target != "" && r.m.registered(r.space, target) {
		return
	}
	if r.self != "" {
		_ = r.nc.PublishMsg(relayed(r.n.LeafSubject(wire.LeafRoute{Dir: wire.LeafUp, Leaf: r.self}, msg.Subject), msg, msg.Subject))
		return
	}
	r.down("", msg.Subject, msg)
}

// down sends msg, which stands for the local subject, to every leaf of the hub but from.
func (r *relay) down(from, local string, msg *nats.Msg) {
	for _, leaf := range r.activeLeaves() {
		if leaf != from {
			_ = r.nc.PublishMsg(relayed(r.n.LeafSubject(wire.LeafRoute{Dir: wire.LeafDown, Leaf: leaf}, local), msg, local))
		}
	}
}

// activeLeaves returns the hub's active leaf credentials, read again from the registry at
// most once per leavesFresh.
func (r *relay) activeLeaves() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.read) < leavesFresh {
		return r.leaves
	}
	recs, err := r.m.store.List(r.space)
	if err != nil {
		return r.leaves
	}
	r.leaves, r.read = r.leaves[:0:0], now
	for _, rec := range recs {
		if rec.Profile == provisioner.ProfileLeaf && rec.Active(now) {
			r.leaves = append(r.leaves, rec.ID)
		}
	}
	return r.leaves
}

// in publishes a copy from the other side under the subject it stands for, but a DM only when
// its recipient is an agent of this side; on the hub it also sends down to the other leaves
// every copy but a DM to one of the hub's agents.
func (r *relay) in(msg *nats.Msg) {
	route, local, err := r.n.LocalSubject(msg.Subject)
	var sender, target string
	if err == nil {
		sender, target, err = r.check(msg, local)
	}
	if err == nil {
		err = r.speaksFor(route.Leaf, sender)
	}
	if err != nil {
		r.dropped("in", msg.Subject, err)
		return
	}
	here := target == "" || r.m.registered(r.space, target)
	if here {
		_ = r.nc.PublishMsg(relayed(local, msg, local))
	}
	if r.self == "" && (target == "" || !here) {
		r.down(route.Leaf, local, msg)
	}
}

// speaksFor refuses a copy from leaf origin naming sender when sender is an identity of
// this side, or, on the hub, one another active leaf spoke for first. A hub remembers which
// leaf speaks for an id from its first copy on: a leaf learns another leaf's agents only from
// the hub's down copies, sent after that first one.
func (r *relay) speaksFor(origin, sender string) error {
	if r.m.ownIdentity(r.space, sender) {
		return fmt.Errorf("sender %s is an agent of this side, which only it speaks for", sender)
	}
	if r.speakers == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	holder, ok := r.speakers[sender]
	switch {
	case holder == origin:
		return nil
	case ok && r.activeLeaf(holder):
		return fmt.Errorf("leaf %s sent a copy of %s, which leaf %s speaks for", origin, sender, holder)
	case !ok && len(r.speakers) >= maxSpeakers:
		return fmt.Errorf("leaf %s sent a copy of %s, past the %d ids leaves may speak for", origin, sender, maxSpeakers)
	}
	r.speakers[sender] = origin
	return nil
}

// activeLeaf reports whether id is an active leaf credential of the hub's registry: a revoked
// or replaced link speaks for nobody any more.
func (r *relay) activeLeaf(id string) bool {
	rec, err := r.m.store.Record(r.space, id)
	return err == nil && rec.Profile == provisioner.ProfileLeaf && rec.Active(time.Now())
}

// check refuses a stored copy and what cannot cross on subject: a chat message or DM that
// wire.CheckLeafCopy refuses, a presence write that checkRelayed does. It returns the id the
// copy speaks for and, for a DM, its target.
func (r *relay) check(msg *nats.Msg, subject string) (sender, target string, err error) {
	if id, ok := strings.CutPrefix(subject, "$KV."+r.n.PresenceBucket()+"."); ok {
		return id, "", checkRelayed(id, msg)
	}
	if storedCopy(msg) {
		return "", "", errStoredCopy
	}
	sub, err := wire.CheckLeafCopy(subject, msg.Data)
	if err == nil && sub.Kind == wire.KindInst {
		target = sub.Rest
	}
	return sub.Sender, target, err
}

// relayed is msg, which stands for the local subject, under subject with no reply. A chat
// message or DM keeps only its Nats-Msg-Id header, which each side's stream deduplicates on
// (a publisher's other headers, rollups, expectations, TTLs, are its own side's business); a
// presence write keeps all of them, so a deletion stays a deletion.
func relayed(subject string, msg *nats.Msg, local string) *nats.Msg {
	out := &nats.Msg{Subject: subject, Data: msg.Data}
	if strings.HasPrefix(local, "$KV.") {
		out.Header = msg.Header
	} else if id := msg.Header.Get(nats.MsgIdHdr); id != "" {
		out.Header = nats.Header{nats.MsgIdHdr: {id}}
	}
	return out
}

// checkRelayed refuses what is not id's presence to relay: a stored copy, or anything on a
// presence key but a deletion or a valid record of that key (wire.DecodePresence). An answer
// whose reply subject an agent aimed at another agent's key arrives on that key too, and the
// other side would write it into its bucket as that agent's presence.
func checkRelayed(id string, msg *nats.Msg) error {
	if storedCopy(msg) {
		return errStoredCopy
	}
	switch msg.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return nil
	}
	_, err := wire.DecodePresence(id, msg.Data)
	return err
}

// relayDropper counts in rt.relayDropped and logs, at most once per loggate.Interval, what
// the relay of rt drops; dir is "out" (to the other side) or "in".
func (m *Mesh) relayDropper(rt *spaceRuntime) func(dir, subject string, err error) {
	var gate loggate.Gate
	return func(dir, subject string, err error) {
		c := &rt.relayDropped[0]
		if dir == "in" {
			c = &rt.relayDropped[1]
		}
		c.Add(1)
		if gate.Admit(time.Now()) {
			m.log.Warn("leaf relay dropped what is no publish of the agent it names", "space", rt.name, "direction", dir,
				"subject", subject, "err", err, "dropped_out", rt.relayDropped[0].Load(), "dropped_in", rt.relayDropped[1].Load())
		}
	}
}

// ownIdentity reports whether id is no instance id at all, or one this mesh's registry of
// space holds, whose messages and presence only its own holder writes.
func (m *Mesh) ownIdentity(space, id string) bool {
	return !nkeys.IsValidPublicUserKey(id) || m.registered(space, id)
}

// registered reports whether this mesh's registry of space holds id.
func (m *Mesh) registered(space, id string) bool {
	_, err := m.store.Record(space, id)
	return !errors.Is(err, provisioner.ErrUnknownCredential)
}
