package space

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// BackstopFile is the name of the cluster backstop file the key-store node writes in its data
// directory: per space, the delivery credential a node needs to take over the space's durable
// backstop (provisioner.ClusterBackstop). It holds seeds; copy it to the other nodes as you
// would a .creds file, and name it there with ClusterOptions.Backstop.
const BackstopFile = "cluster-backstop.json"

// backstopFirstStart bounds the first attempt to start the delivery loops after taking a
// lease, and each later attempt gets twice the last one's, up to backstopStartTimeout;
// backstopCloseTimeout bounds their stop after losing it. The first attempt is short because a
// lease is usually taken just after a node died: a JetStream request sent to a stream leader
// that died with it is never answered, and waits out its whole bound (20 s were seen) though
// the stream elects a new leader in a few seconds.
const (
	backstopFirstStart   = 5 * time.Second
	backstopStartTimeout = 20 * time.Second
	backstopCloseTimeout = 10 * time.Second
)

// memberGrace is how long a node without the key store waits, once the lease bucket exists,
// before it first contends for the lease.
const memberGrace = 2 * time.Second

// backstop runs one space's durable backstop on a cluster node while the node holds the space's
// lease (docs/durable.md "The cluster lease"): the delivery service starts when the lease is
// taken and stops when it is lost or the mesh closes. Every node that may hold the lease uses
// the same delivery identity (the cluster backstop file's), so the consumers the service
// creates are the same durables wherever it runs, and resume from their stored cursors.
type backstop struct {
	space string
	node  string
	log   *slog.Logger
	cfg   delivery.Config // Conn and ACL set; the service's config on every start
	// acl, on a node without the key store, is followed from the bucket while the backstop
	// runs, and loaded before the lease is contended.
	acl *bucketACL

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	kv     jetstream.KeyValue
	svc    *delivery.Service // nil while another node holds the lease
	since  time.Time         // when svc started
	starts int               // how many times this node took the lease
}

// startBackstop starts contending for space's lease over conn, the delivery identity, with
// ctl the delivery control listener's connection. acl is the key-store node's registry
// table, or nil to follow the space's ACL bucket.
func (m *Mesh) startBackstop(space string, conn, ctl *nats.Conn, acl delivery.ACLSource) *backstop {
	cfg := delivery.DefaultConfig()
	cfg.Names, cfg.Conn, cfg.ControlConn, cfg.Logger, cfg.ACL = wire.NewNames(space), conn, ctl, m.log, acl
	cfg.OnPresenceFlood = m.presenceFlood(space)
	b := &backstop{space: space, node: m.broker.Server().Name(), log: m.log.With("space", space), cfg: cfg}
	if acl == nil {
		b.acl = newBucketACL(cfg.Names, conn, m.log)
		b.cfg.ACL = b.acl
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Go(func() { b.run(ctx) })
	return b
}

// run binds the lease bucket (provisioned by the key-store node, perhaps after this node
// started), loads the ACL records when it follows them, then holds the lease until ctx ends.
func (b *backstop) run(ctx context.Context) {
	js, err := jetstream.New(b.cfg.Conn)
	if err != nil {
		b.log.Error("the backstop lease cannot use JetStream", "err", err)
		return
	}
	var kv jetstream.KeyValue
	for kv == nil {
		if kv, err = js.KeyValue(ctx, b.cfg.Names.BackstopBucket()); err != nil {
			kv = nil
			if !pause(ctx, leaseTick) {
				return
			}
		}
	}
	b.mu.Lock()
	b.kv = kv
	b.mu.Unlock()
	if b.acl != nil {
		loaded := make(chan struct{})
		b.wg.Go(func() { b.acl.watch(ctx, func() { close(loaded) }) })
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
		// The key-store node contends as soon as it has provisioned the bucket; the others
		// leave it that moment, so a cluster starting together runs the backstop where the
		// registry is, the read ACL's source that never lags.
		if !pause(ctx, memberGrace) {
			return
		}
	}
	newLease(kv, b.node).hold(ctx, b.serve)
}

// serve runs the delivery service while ctx lasts, starting it again after a failed start.
func (b *backstop) serve(ctx context.Context) {
	took := time.Now()
	var svc *delivery.Service
	for bound := backstopFirstStart; svc == nil; bound = min(2*bound, backstopStartTimeout) {
		sctx, done := context.WithTimeout(ctx, bound)
		var err error
		svc, err = delivery.Start(sctx, b.cfg)
		done()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Error("starting the backstop after taking its lease failed; trying again", "err", err)
			if !pause(ctx, leaseTick) {
				return
			}
		}
	}
	b.mu.Lock()
	b.svc, b.since = svc, time.Now()
	b.starts++
	b.mu.Unlock()
	b.log.Info("this node runs the space's backstop", "node", b.node, "started_in", time.Since(took).Round(time.Millisecond))
	<-ctx.Done()
	b.mu.Lock()
	b.svc = nil
	b.mu.Unlock()
	cctx, done := context.WithTimeout(context.Background(), backstopCloseTimeout)
	defer done()
	if err := svc.Close(cctx); err != nil {
		b.log.Error("stopping the backstop", "err", err)
	}
	b.log.Info("this node stopped running the space's backstop", "node", b.node)
}

// service is the delivery service while this node runs it, else nil.
func (b *backstop) service() *delivery.Service {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.svc
}

// errLeaseNotOpen means this node has not opened the lease bucket yet, so it cannot say who
// holds the lease.
var errLeaseNotOpen = errors.New("this node has not opened the lease bucket yet")

// holder is the name of the node holding the lease, "" when none does.
func (b *backstop) holder(ctx context.Context) (string, error) {
	b.mu.Lock()
	kv := b.kv
	b.mu.Unlock()
	if kv == nil {
		return "", errLeaseNotOpen
	}
	return leaseHolder(ctx, kv)
}

// settle waits until this node runs the backstop or another node holds the lease, or ctx ends.
func (b *backstop) settle(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if b.service() != nil {
			return nil
		}
		if h, err := b.holder(ctx); err == nil && h != "" && h != b.node {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the backstop of space %s to run on some node: %w", b.space, ctx.Err())
		case <-t.C:
		}
	}
}

// close stops contending, stops the service if it runs and releases the lease.
func (b *backstop) close() {
	b.cancel()
	b.wg.Wait()
}

// pause waits d or until ctx ends, reporting whether ctx is still live.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// BackstopHolder is the node that runs a space's durable backstop in a cluster.
type BackstopHolder struct {
	Space string `json:"space"`
	// Node is the holder's server name; empty while no node holds the lease (for up to
	// wire.BackstopLeaseTTL after its holder died) or while Opening.
	Node string `json:"node"`
	// Opening is whether this node is still opening the lease bucket, so it cannot yet say
	// who holds the lease.
	Opening bool `json:"opening,omitempty"`
	// Error says why the lease could not be read, if it could not.
	Error string `json:"error,omitempty"`
}

// backstopHolders reads, for each space this node contends for, who holds its lease.
func (m *Mesh) backstopHolders(ctx context.Context) []BackstopHolder {
	m.mu.Lock()
	bs := make([]*backstop, 0, len(m.backstops))
	for _, b := range m.backstops {
		bs = append(bs, b)
	}
	m.mu.Unlock()
	sort.Slice(bs, func(i, j int) bool { return bs[i].space < bs[j].space })
	out := make([]BackstopHolder, 0, len(bs))
	for _, b := range bs {
		// While the bucket's stream elects a leader no one answers; say so rather than wait.
		rctx, done := context.WithTimeout(ctx, leaseTick)
		h, err := b.holder(rctx)
		done()
		bh := BackstopHolder{Space: b.space, Node: h}
		switch {
		case errors.Is(err, errLeaseNotOpen):
			bh.Opening = true
		case err != nil:
			bh.Error = err.Error()
		}
		out = append(out, bh)
	}
	return out
}

// memberBackstops starts, on a cluster node without the key store that was given the cluster
// backstop file, one backstop per space of the file: its own delivery and control
// connections, the ACL records read from the space's bucket.
func (m *Mesh) memberBackstops() error {
	path := m.opts.Cluster.Backstop
	if path == "" {
		return nil
	}
	file, err := provisioner.ReadClusterBackstop(path)
	if err != nil {
		return err
	}
	spaces := make([]string, 0, len(file.Spaces))
	for s := range file.Spaces {
		spaces = append(spaces, s)
	}
	sort.Strings(spaces)
	for _, s := range spaces {
		c := file.Spaces[s]
		nc, err := m.backstopConn(provisioner.ProfileDelivery, c)
		if err != nil {
			return fmt.Errorf("space %s: %w", s, err)
		}
		ctl, err := m.backstopConn(provisioner.ProfileDeliveryControl, *c.Control)
		if err != nil {
			nc.Close()
			return fmt.Errorf("space %s: %w", s, err)
		}
		b := m.startBackstop(s, nc, ctl, nil)
		m.mu.Lock()
		m.backstops[s] = b
		m.backstopConns = append(m.backstopConns, nc, ctl)
		m.mu.Unlock()
	}
	return nil
}

// backstopConn opens an in-process connection as c, a delivery or delivery control identity
// (profile p) of the cluster backstop file. The space's accounts reach this node through the
// cluster's resolver, perhaps a moment after it starts, so the connection waits for them:
// until then the broker refuses it with an authorization error, after the second of which
// nats.go would otherwise close it for good, and this node could never hold the lease.
func (m *Mesh) backstopConn(p provisioner.Profile, c provisioner.BackstopCredential) (*nats.Conn, error) {
	id, err := c.ID()
	if err != nil {
		return nil, err
	}
	return nats.Connect("", nats.InProcessServer(m.broker.InProcess()), nats.Name("cotal:"+string(p)),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true), nats.ReconnectWait(leaseTick),
		nats.IgnoreAuthErrorAbort(),
		nats.UserJWTAndSeed(c.JWT, c.Seed), nats.CustomInboxPrefix(wire.InboxPrefix(id)))
}

// keyStoreBackstop reads or writes the cluster backstop file of the key-store node: every
// node running a space's backstop uses the identity it holds.
func (m *Mesh) keyStoreBackstop() error {
	file, err := m.store.ClusterBackstop(filepath.Join(m.dir, BackstopFile), m.opts.Spaces)
	if err != nil {
		return err
	}
	m.backstopCreds = file.Spaces
	return nil
}

// errNotHolder is what asks a node for a backstop that another node runs.
var errNotHolder = errors.New("this node does not run the backstop of the space now")
