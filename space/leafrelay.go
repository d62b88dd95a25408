package space

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// Everything that crosses a leaf link goes through a relay on each side (docs/leaf.md): one
// connection per linked space in the agent account (wire.LeafRelayPermissions). It sends
// every chat message, DM and presence write of this side's agents across under the link's
// own subjects (wire.LeafSubjects), and publishes what arrives from the other side under the
// subject it stands for, where this side's streams and presence bucket store it. The
// connection does not echo, so what it publishes is never sent back. Both directions check
// what they carry: a copy the broker sent on a reply subject an agent chose (a PubAck, a
// pulled or directly read stored message) is no publish of the sender it names, and a copy
// from the other side that names an identity this side's registry holds is a forgery, since
// only this side speaks for its agents. Relayed presence records live for the bucket's TTL,
// so the other side's agents leave the roster on their own once the link is down.

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
	cred, err := m.store.InfraCredential(rt.name, provisioner.ProfileLeafRelay)
	if err != nil {
		return fmt.Errorf("%s credential: %w", provisioner.ProfileLeafRelay, err)
	}
	nc, err := m.infraConn(provisioner.ProfileLeafRelay, cred, nats.NoEcho())
	if err != nil {
		return err
	}
	rt.relay = nc
	r := &relay{m: m, space: rt.name, n: rt.names, nc: nc, dropped: m.relayDropper(rt)}
	n := rt.names
	subs := map[string]nats.MsgHandler{
		"$KV." + n.PresenceBucket() + ".*":    r.presenceOut,
		n.LeafPresenceFilter():                r.presenceIn,
		n.Prefix() + ".chat.>":                r.copyOut,
		n.Prefix() + ".inst.>":                r.copyOut,
		n.LeafSubject(n.Prefix() + ".chat.>"): r.copyIn,
		n.LeafSubject(n.Prefix() + ".inst.>"): r.copyIn,
	}
	for subject, h := range subs {
		if _, err := nc.Subscribe(subject, h); err != nil {
			return fmt.Errorf("relay %s: %w", subject, err)
		}
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// relay is one space's side of a leaf link.
type relay struct {
	m       *Mesh
	space   string
	n       wire.Names
	nc      *nats.Conn
	dropped func(dir, subject string, err error)
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

// copyOut sends a chat message or DM of one of this side's agents across; a DM to an agent
// of this side stays here.
func (r *relay) copyOut(msg *nats.Msg) {
	sub, err := r.check(msg, msg.Subject)
	if err == nil && !r.m.registered(r.space, sub.Sender) {
		err = fmt.Errorf("sender %s is no agent of this side", sub.Sender)
	}
	if err != nil {
		r.dropped("out", msg.Subject, err)
		return
	}
	if sub.Kind == wire.KindInst && r.m.registered(r.space, sub.Rest) {
		return
	}
	_ = r.nc.PublishMsg(relayed(r.n.LeafSubject(msg.Subject), msg))
}

// copyIn publishes a chat message or DM from the other side under its own subject.
func (r *relay) copyIn(msg *nats.Msg) {
	local, err := r.n.LocalSubject(msg.Subject)
	var sub wire.Subject
	if err == nil {
		sub, err = r.check(msg, local)
	}
	if err == nil && r.m.ownIdentity(r.space, sub.Sender) {
		err = fmt.Errorf("sender %s is an agent of this side, which only it speaks for", sub.Sender)
	}
	if err != nil {
		r.dropped("in", msg.Subject, err)
		return
	}
	_ = r.nc.PublishMsg(relayed(local, msg))
}

// check refuses a stored copy and what wire.CheckLeafCopy refuses on subject.
func (r *relay) check(msg *nats.Msg, subject string) (wire.Subject, error) {
	if storedCopy(msg) {
		return wire.Subject{}, errStoredCopy
	}
	return wire.CheckLeafCopy(subject, msg.Data)
}

// relayed is msg under subject with no reply and only its Nats-Msg-Id header, which each
// side's stream deduplicates on; a publisher's other headers (rollups, expectations, TTLs)
// are its own side's business.
func relayed(subject string, msg *nats.Msg) *nats.Msg {
	out := &nats.Msg{Subject: subject, Data: msg.Data}
	if id := msg.Header.Get(nats.MsgIdHdr); id != "" {
		out.Header = nats.Header{nats.MsgIdHdr: {id}}
	}
	return out
}

// presenceOut sends a presence write of this side's agents across, headers and all, so a
// deletion stays a deletion.
func (r *relay) presenceOut(msg *nats.Msg) {
	kv := "$KV." + r.n.PresenceBucket() + "."
	id := strings.TrimPrefix(msg.Subject, kv)
	if err := checkRelayed(id, msg); err != nil {
		r.dropped("out", msg.Subject, err)
		return
	}
	_ = r.nc.PublishMsg(&nats.Msg{Subject: r.n.LeafPresenceSubject(id), Header: msg.Header, Data: msg.Data})
}

// presenceIn writes a presence record from the other side to this side's bucket; records
// for ids this side's registry holds are dropped.
func (r *relay) presenceIn(msg *nats.Msg) {
	id := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
	if r.m.ownIdentity(r.space, id) {
		return
	}
	if err := checkRelayed(id, msg); err != nil {
		r.dropped("in", msg.Subject, err)
		return
	}
	_ = r.nc.PublishMsg(&nats.Msg{Subject: "$KV." + r.n.PresenceBucket() + "." + id, Header: msg.Header, Data: msg.Data})
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
