package space

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/internal/retry"
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
	// identities is cotal_identities_<s>, the minted names (identities.go).
	identities jetstream.KeyValue
	// streams are the handles provision returned, by stream name; written before any pass
	// reads them and never after.
	streams map[string]jetstream.Stream
	acls    *aclTable

	dlvConn *nats.Conn // delivery identity: fan-out, trusted reader, the delivery ctl service's work
	// ctlConn takes the delivery control service's requests in the agent account; nil in open
	// mode, whose one account the delivery identity serves alone.
	ctlConn  *nats.Conn
	delivery *delivery.Service // on a mesh alone; nil in a cluster, where backstop runs it
	// backstop runs the delivery service in a cluster while this node holds the space's lease.
	backstop *backstop
	// relay carries chat, DMs and presence across the space's leaf link (leafrelay.go); nil
	// without one. relayDropped counts what it refused, by direction (out, in).
	relay        *nats.Conn
	relayDropped [2]atomic.Int64
	// dmReclaim and taskReclaim serialize the DM reclaims and the task shares of the pass
	// and of the fill check (flood.go).
	dmReclaim, taskReclaim sync.Mutex
	// floodersDM, floodersTasks and floodersChannels count the times a flooder's
	// connections were closed (flood.go, taskshare.go, channelcap.go); floodLog paces the
	// lines saying so.
	floodersDM, floodersTasks, floodersChannels atomic.Int64
	floodLog                                    loggate.Gate
	// deliveryInbox is dlvConn's inbox prefix, where the delivery service's KV watches push.
	deliveryInbox string
	reconciled    reconcileStats
	// watches records who created each consumer on the watched buckets (watchcap.go).
	watches watchLedger
	// pulls is what the mesh knows of the pulls of the bind-only durables (ghostpulls.go).
	pulls *pullLedger

	mintMu sync.Mutex // serializes mint, revoke and consumer reconciliation: broker update, ACL record, pass
}

func (m *Mesh) startSpace(ctx context.Context, name string, creds infraCreds) (*spaceRuntime, error) {
	rt := &spaceRuntime{name: name, names: wire.NewNames(name), acls: newACLTable(), pulls: newPullLedger()}
	if err := m.connectInfra(rt, creds); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	var err error
	if rt.js, err = jetstream.New(rt.prov); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	class := wire.DeliveryDurable
	if m.opts.Open {
		class = wire.DeliveryLive // docs/storage.md "Channel registry": live for an open mesh.
	}
	fresh := m.opts.Memory && !m.opts.clustered() // a cluster's memory streams outlive one node
	if rt.streams, err = provision(ctx, rt.js, rt.names, m.opts.Limits.streams(), m.storage(), m.opts.replicas(), class, fresh); err != nil {
		if report := m.placementReport(); report != "" {
			err = fmt.Errorf("%w\n%s", err, report)
		}
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := retry.Unanswered(ctx, requestTimeout, func(ctx context.Context) (err error) {
		if rt.acl, err = rt.js.KeyValue(ctx, rt.names.ACLBucket()); err != nil {
			return err
		}
		rt.identities, err = rt.js.KeyValue(ctx, rt.names.IdentitiesBucket())
		return err
	}); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := m.syncRegistry(ctx, rt); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := m.startDelivery(ctx, rt); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	if err := m.startLeafRelay(rt); err != nil {
		return nil, errors.Join(err, rt.close(ctx))
	}
	return rt, nil
}

// connectInfra opens the space's infrastructure connections: provisioner, delivery and, but
// in open mode, delivery control. They stay separate identities (SPEC §9: each holds only
// what it needs), but no handshake waits for another, so all run at once.
func (m *Mesh) connectInfra(rt *spaceRuntime, creds infraCreds) error {
	var dlvErr, ctlErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if c, ok := m.backstopCreds[rt.name]; ok {
			rt.dlvConn, dlvErr = m.backstopConn(provisioner.ProfileDelivery, c)
			return
		}
		rt.dlvConn, dlvErr = m.infraConn(provisioner.ProfileDelivery, creds[infraKey{rt.name, provisioner.ProfileDelivery}])
	})
	wg.Go(func() {
		if c, ok := m.backstopCreds[rt.name]; ok {
			rt.ctlConn, ctlErr = m.backstopConn(provisioner.ProfileDeliveryControl, *c.Control)
		} else if cred := creds[infraKey{rt.name, provisioner.ProfileDeliveryControl}]; cred != nil {
			rt.ctlConn, ctlErr = m.infraConn(provisioner.ProfileDeliveryControl, cred)
		}
	})
	var err error
	rt.prov, err = m.infraConn(provisioner.ProfileProvisioner, creds[infraKey{rt.name, provisioner.ProfileProvisioner}])
	wg.Wait()
	return errors.Join(err, dlvErr, ctlErr)
}

// infraKey names one of the mesh's own credentials: its space and profile.
type infraKey struct {
	space   string
	profile provisioner.Profile
}

// infraCreds are the provisioner and delivery credentials of the spaces the mesh provisions;
// empty in open mode.
type infraCreds map[infraKey]*provisioner.Credential

// mintInfra mints the provisioner, delivery and delivery control credentials of every space
// the mesh provisions (no delivery ones where the cluster backstop identities take their
// place), each on a
// goroutine of its own. Signing them needs only the key store, so start runs them while the
// broker starts; the function returned waits for them and returns the credentials.
func (m *Mesh) mintInfra() func() (infraCreds, error) {
	var keys []infraKey
	for _, s := range m.provisionedSpaces() {
		keys = append(keys, infraKey{s, provisioner.ProfileProvisioner})
		if _, ok := m.backstopCreds[s]; !ok {
			keys = append(keys, infraKey{s, provisioner.ProfileDelivery}, infraKey{s, provisioner.ProfileDeliveryControl})
		}
	}
	if m.store == nil {
		keys = nil
	}
	minted := make([]*provisioner.Credential, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			if minted[i], errs[i] = m.store.InfraCredential(k.space, k.profile); errs[i] != nil {
				errs[i] = fmt.Errorf("space %s: %s credential: %w", k.space, k.profile, errs[i])
			}
		})
	}
	return func() (infraCreds, error) {
		wg.Wait()
		creds := make(infraCreds, len(keys))
		for i, k := range keys {
			creds[k] = minted[i]
		}
		return creds, errors.Join(errs...)
	}
}

// reconcileAtStart is the start's consumer pass over recs, the registry. On a memory mesh the
// broker started a moment ago with an empty store, and nothing but the mesh itself has
// connected (the listener opens after Start's work, and in-process Endpoints are handed out
// after Start returns), so no consumer exists to judge: the pass reduces to creating the
// bind-only consumers of the registry's active agents (none in a new store), without
// listing ten empty streams. Any other mesh recovers a store that may hold anything, and
// runs the whole pass, the DM reclaim included.
func (m *Mesh) reconcileAtStart(ctx context.Context, rt *spaceRuntime, recs []provisioner.Record) error {
	if !m.opts.Memory {
		if _, err := m.reconcile(ctx, rt, passCause{start: true}); err != nil {
			return err
		}
		// A failed reclaim costs DM room until the next pass, not the start.
		if _, err := m.reclaimDMs(ctx, rt); err != nil {
			m.log.Error("reclaiming DM space at start failed; the periodic pass tries again", "space", rt.name, "err", err)
		}
		return nil
	}
	var rep ReconcileReport
	r := newRegistryView(rt.names, recs, time.Now(), m.opts.AckWait, rt.deliveryInbox)
	err := m.restoreMissing(ctx, rt, r, passCause{start: true}, map[string]bool{}, &rep)
	rt.reconciled.passes.Add(1)
	rt.reconciled.restored.Add(int64(rep.Restored))
	if err != nil {
		rt.reconciled.failures.Add(1)
		return fmt.Errorf("reconcile consumers of space %s: %w", rt.name, err)
	}
	return nil
}

// stream is the handle of the space's stream called name: the one provision returned, or,
// for a stream the limits left out of provisioning, one read from the broker.
func (rt *spaceRuntime) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if st, ok := rt.streams[name]; ok {
		return st, nil
	}
	return rt.js.Stream(ctx, name)
}

// infraConn opens an in-process connection as one of the mesh's own identities, p, with its
// credential cred (nil in open mode), and any extra options.
func (m *Mesh) infraConn(p provisioner.Profile, cred *provisioner.Credential, extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{
		nats.InProcessServer(m.broker.InProcess()),
		nats.Name("cotal:" + string(p)),
		nats.MaxReconnects(-1),
	}, extra...)
	if cred != nil {
		opts = append(opts, nats.UserJWTAndSeed(cred.JWT, string(cred.Seed)),
			nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID)))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", p, err)
	}
	return nc, nil
}

// startDelivery runs the space's durable backstop (SPEC §4, §8) on its own connection,
// opened by connectInfra. In open mode there is no registry, so every instance reads every
// channel.
//
// In a cluster the service runs on whichever node holds the space's lease (backstop); this
// node contends for it and waits until it runs here or elsewhere.
func (m *Mesh) startDelivery(ctx context.Context, rt *spaceRuntime) error {
	rt.deliveryInbox = rt.dlvConn.Opts.InboxPrefix
	if m.opts.clustered() {
		rt.backstop = m.startBackstop(rt.name, rt.dlvConn, rt.ctlConn, rt.acls)
		sctx, done := context.WithTimeout(ctx, backstopStartTimeout)
		defer done()
		return rt.backstop.settle(sctx)
	}
	cfg := delivery.DefaultConfig()
	cfg.Names, cfg.Conn, cfg.ControlConn, cfg.Logger = rt.names, rt.dlvConn, rt.ctlConn, m.log // the service adds the space itself
	cfg.OnPresenceFlood = m.presenceFlood(rt.name)
	cfg.ACL = rt.acls
	if m.opts.Open {
		cfg.ACL = openACL{}
	}
	var err error
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
	if rt.backstop != nil {
		rt.backstop.close()
	}
	if rt.delivery != nil {
		err = rt.delivery.Close(ctx)
	}
	for _, nc := range []*nats.Conn{rt.relay, rt.ctlConn, rt.dlvConn, rt.prov} {
		if nc != nil {
			nc.Close()
		}
	}
	return err
}

// service is the space's delivery service while this node runs it, else nil.
func (rt *spaceRuntime) service() *delivery.Service {
	if rt.backstop != nil {
		return rt.backstop.service()
	}
	return rt.delivery
}

// deliveryHealth is the delivery service's health while this node runs it; a cluster node
// whose lease another node holds has nothing of it to judge.
func (rt *spaceRuntime) deliveryHealth() error {
	if svc := rt.service(); svc != nil {
		return svc.Healthy()
	}
	return nil
}

// flooders is the counter of flooders closed of kind "dm", "tasks" or "channels".
func (rt *spaceRuntime) flooders(kind string) *atomic.Int64 {
	switch kind {
	case "dm":
		return &rt.floodersDM
	case "tasks":
		return &rt.floodersTasks
	}
	return &rt.floodersChannels
}
