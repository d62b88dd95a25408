package space

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/provisioner"
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
	out := func(msg *nats.Msg) {
		id := strings.TrimPrefix(msg.Subject, kv)
		_ = nc.PublishMsg(&nats.Msg{Subject: n.LeafPresenceSubject(id), Header: msg.Header, Data: msg.Data})
	}
	in := func(msg *nats.Msg) {
		id := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
		if m.ownIdentity(rt.name, id) {
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

// ownIdentity reports whether id is no instance id at all, or one this mesh's registry of
// space holds, whose presence only its own holder writes.
func (m *Mesh) ownIdentity(space, id string) bool {
	if !nkeys.IsValidPublicUserKey(id) {
		return true
	}
	_, err := m.store.Record(space, id)
	return !errors.Is(err, provisioner.ErrUnknownCredential)
}
