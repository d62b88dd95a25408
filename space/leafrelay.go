package space

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// A leaf link carries no $KV subject (nats-server denies them on leaf connections between
// JetStream servers), so presence records cross through a relay on each side: one connection
// per linked space in the agent account, where agents write their presence
// (wire.LeafRelayPermissions). It sends every presence write of this side's agents across as
// wire's LeafPresenceSubject, headers and all, so a deletion stays a deletion, and writes what
// arrives from the other side into this side's presence bucket. The connection does not echo,
// so a record it writes is never sent back. Records for ids this side's registry knows are
// dropped: the other side cannot speak for this side's agents. Each relayed record lives for
// the bucket's TTL, so the other side's agents leave the roster on their own once the link is
// down.

// linksSpace reports whether the mesh relays space's presence across a leaf link: every space
// on a hub, the spaces with a credential on a leaf.
func (m *Mesh) linksSpace(space string) bool {
	if m.opts.leaf() {
		_, ok := m.opts.Leaf.Creds[space]
		return ok
	}
	return m.opts.Leaf.Listen != ""
}

// startLeafRelay connects rt's presence relay when the space is linked; nil otherwise.
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
	n := rt.names
	kv := "$KV." + n.PresenceBucket() + "."
	dropped := m.relayDropper(rt.name)
	out := func(msg *nats.Msg) {
		id := strings.TrimPrefix(msg.Subject, kv)
		if err := checkRelayed(id, msg); err != nil {
			dropped("out", id, err)
			return
		}
		_ = nc.PublishMsg(&nats.Msg{Subject: n.LeafPresenceSubject(id), Header: msg.Header, Data: msg.Data})
	}
	in := func(msg *nats.Msg) {
		id := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
		if m.ownIdentity(rt.name, id) {
			return
		}
		if err := checkRelayed(id, msg); err != nil {
			dropped("in", id, err)
			return
		}
		_ = nc.PublishMsg(&nats.Msg{Subject: kv + id, Header: msg.Header, Data: msg.Data})
	}
	if _, err := nc.Subscribe(kv+"*", out); err != nil {
		return fmt.Errorf("relay presence: %w", err)
	}
	if _, err := nc.Subscribe(n.LeafPresenceFilter(), in); err != nil {
		return fmt.Errorf("relay presence: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("relay presence: %w", err)
	}
	return nil
}

// checkRelayed refuses what is not id's presence to relay: anything on a presence key but a
// deletion or a valid record of that key (wire.DecodePresence). An answer whose reply subject
// an agent aimed at another agent's key arrives on that key too, and the other side would
// write it into its bucket as that agent's presence.
func checkRelayed(id string, msg *nats.Msg) error {
	switch msg.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return nil
	}
	_, err := wire.DecodePresence(id, msg.Data)
	return err
}

// relayDropper counts and logs, at most once per loggate.Interval, the records the relay of
// space drops; dir is "out" (to the other side) or "in".
func (m *Mesh) relayDropper(space string) func(dir, id string, err error) {
	var gate loggate.Gate
	var n atomic.Int64
	return func(dir, id string, err error) {
		if total := n.Add(1); gate.Admit(time.Now()) {
			m.log.Warn("leaf relay dropped what is not a presence record", "space", space, "direction", dir,
				"key", id, "err", err, "dropped_so_far", total)
		}
	}
}

// ownIdentity reports whether id is no instance id at all, or one this mesh's registry of
// space holds, whose presence only its own holder writes.
func (m *Mesh) ownIdentity(space, id string) bool {
	if !nkeys.IsValidPublicUserKey(id) {
		return true
	}
	_, err := m.store.Record(space, id)
	return !errors.Is(err, provisioner.ErrUnknownCredential)
}
