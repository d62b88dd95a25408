package space

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// spaceRuntime is one provisioned space inside a running mesh: its names and the mesh's own
// scoped connections (SPEC §9: each infrastructure identity holds only what it needs).
type spaceRuntime struct {
	name  string
	names wire.Names
	prov  *nats.Conn // provisioner identity: streams, buckets, bind-only consumers, ACL records
	js    jetstream.JetStream
	acl   jetstream.KeyValue
	acls  *aclTable

	dlvConn  *nats.Conn // delivery identity: fan-out, trusted reader, the delivery ctl service
	delivery *delivery.Service
	// deliveryInbox is dlvConn's inbox prefix, where the delivery service's KV watches push.
	deliveryInbox string
	reconciled    reconcileStats

	mintMu sync.Mutex // serializes mint, revoke and consumer reconciliation: broker update, ACL record, pass
}

func (m *Mesh) startSpace(ctx context.Context, name string) (*spaceRuntime, error) {
	rt := &spaceRuntime{name: name, names: wire.NewNames(name), acls: newACLTable()}
	nc, err := m.infraConn(name, provisioner.ProfileProvisioner)
	if err != nil {
		return nil, err
	}
	rt.prov = nc
	if rt.js, err = jetstream.New(nc); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	class := wire.DeliveryDurable
	if m.opts.Open {
		class = wire.DeliveryLive // LAYOUT.md: live for an open mesh, durable otherwise.
	}
	if err := provision(ctx, rt.js, rt.names, m.opts.Limits.streams(), m.storage(), class); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if rt.acl, err = rt.js.KeyValue(ctx, rt.names.ACLBucket()); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := m.syncRegistry(ctx, rt); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := m.startDelivery(ctx, rt); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	return rt, nil
}

// infraConn opens an in-process connection as one of the mesh's own identities.
func (m *Mesh) infraConn(space string, p provisioner.Profile) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.InProcessServer(m.broker.InProcess()),
		nats.Name("cotal:" + string(p)),
		nats.MaxReconnects(-1),
	}
	if m.store != nil {
		cred, err := m.store.InfraCredential(space, p)
		if err != nil {
			return nil, fmt.Errorf("%s credential: %w", p, err)
		}
		opts = append(opts, nats.UserJWTAndSeed(cred.JWT, string(cred.Seed)),
			nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID)))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", p, err)
	}
	return nc, nil
}

// startDelivery runs the space's durable backstop (SPEC §4, §8) on its own connection. In
// open mode there is no registry, so every instance reads every channel.
func (m *Mesh) startDelivery(ctx context.Context, rt *spaceRuntime) error {
	nc, err := m.infraConn(rt.name, provisioner.ProfileDelivery)
	if err != nil {
		return err
	}
	rt.dlvConn, rt.deliveryInbox = nc, nc.Opts.InboxPrefix
	cfg := delivery.DefaultConfig()
	cfg.Names, cfg.Conn, cfg.Logger = rt.names, nc, m.log.With("space", rt.name)
	cfg.ACL = rt.acls
	if m.opts.Open {
		cfg.ACL = openACL{}
	}
	if rt.delivery, err = delivery.Start(ctx, cfg); err != nil {
		return fmt.Errorf("start delivery: %w", err)
	}
	return nil
}

// close stops the delivery loops, then closes the mesh's own connections. No drain is
// needed: once the loops have stopped, nothing is in flight that was acked, and whatever was
// not acked is redelivered after the next start.
func (rt *spaceRuntime) close(ctx context.Context) error {
	var err error
	if rt.delivery != nil {
		err = rt.delivery.Close(ctx)
	}
	for _, nc := range []*nats.Conn{rt.dlvConn, rt.prov} {
		if nc != nil {
			nc.Close()
		}
	}
	return err
}
