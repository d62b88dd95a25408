package space

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
)

// Mesh is a running cotal mesh: one embedded broker, the key store, and every provisioned
// space with its delivery loops. All methods are safe for concurrent use.
type Mesh struct {
	opts    Options
	dir     string
	tempDir bool
	log     *slog.Logger

	store *provisioner.Store // nil in open mode
	// agentAccounts are the public keys of the spaces' agent accounts, where every credential
	// the mesh hands out lives; nil without the key store.
	agentAccounts []string
	// agentAccount is each space's agent account public key, by space; nil without the key
	// store.
	agentAccount map[string]string
	broker       *broker.Broker
	ops          *opsServer

	// life ends when Close begins: it stops the watcher and the reconcilers, and cancels the
	// requests of a reconciliation pass in flight, which on a cluster that lost its quorum
	// would otherwise each wait out their timeout before Close could go on.
	life     context.Context
	endLife  context.CancelFunc
	watcher  sync.WaitGroup // the goroutine that turns a dead broker into Done, and each space's reconciler
	done     chan struct{}  // closed once the mesh has stopped (see Done)
	doneOnce sync.Once
	err      error // why the mesh stopped; written before done is closed

	// backstopCreds are, on a cluster's key-store node, the delivery identities every node
	// running a space's backstop uses (BackstopFile); written before the spaces start.
	backstopCreds map[string]provisioner.BackstopCredential
	// keyStoreNode is, on a cluster node without the key store, the node its trust file names
	// as holding it; written before the broker starts.
	keyStoreNode string
	// clusterTrust is, on a cluster node without the key store, its trust file, which carries
	// the route secret and certificate.
	clusterTrust provisioner.ClusterTrust

	// mu guards spaces, backstops, backstopConns, endpoints and closed. Mints do not take it:
	// they serialize on their space's mintMu.
	mu     sync.Mutex
	spaces map[string]*spaceRuntime
	// backstops are the spaces whose backstop lease this cluster node contends for, by space.
	backstops map[string]*backstop
	// backstopConns are the delivery connections of a node without the key store.
	backstopConns []*nats.Conn
	endpoints     []*endpoint.Endpoint // handed out in process; closed first
	closed        bool

	// ghostMu guards ghostsDone and each addition to ghosts, the goroutines that give back
	// what pulls nobody holds took (ghostpulls.go), which Close waits for.
	ghostMu    sync.Mutex
	ghostsDone bool
	ghosts     sync.WaitGroup
}

// Start starts a whole mesh and returns once every space is provisioned and ready: open (or
// create) the key store, start the broker in operator mode with every account preloaded,
// provision each space's streams and buckets, start its delivery loops (ARCHITECTURE.md
// "Start"), and only then open the client listener, so a TCP client that reaches the port
// finds a mesh ready for it. On error everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (*Mesh, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("space: %w", err)
	}
	m := &Mesh{opts: opts, log: opts.Logger, spaces: map[string]*spaceRuntime{}, backstops: map[string]*backstop{},
		done: make(chan struct{})}
	m.life, m.endLife = context.WithCancel(context.Background())
	if err := m.start(ctx); err != nil {
		_ = m.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return m, nil
}

func (m *Mesh) start(ctx context.Context) error {
	if err := m.openDir(); err != nil {
		return err
	}
	if err := m.checkClusterStore(); err != nil {
		return err
	}
	if err := m.awaitTrustFile(ctx); err != nil {
		return err
	}
	bcfg, err := m.brokerConfig()
	if err != nil {
		return err
	}
	infra := m.mintInfra()
	m.broker, err = broker.Start(ctx, bcfg)
	creds, credErr := infra()
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	if credErr != nil {
		return credErr
	}
	if err := m.awaitCluster(ctx); err != nil {
		return err
	}
	for _, name := range m.provisionedSpaces() {
		rt, err := m.startSpace(ctx, name, creds)
		if err != nil {
			return fmt.Errorf("space %s: %w", name, err)
		}
		m.mu.Lock()
		m.spaces[name] = rt
		if rt.backstop != nil {
			m.backstops[name] = rt.backstop
		}
		m.mu.Unlock()
	}
	if err := m.memberBackstops(); err != nil {
		return err
	}
	if m.opts.HTTP != "" {
		if m.ops, err = m.serveOps(m.opts.HTTP); err != nil {
			return err
		}
	}
	// Before the listener opens, so that every pull of an agent is seen (ghostpulls.go).
	if err := m.watchGhostPulls(); err != nil {
		return err
	}
	if err := m.broker.Listen(); err != nil {
		return err
	}
	m.watcher.Add(1)
	go m.watch()
	m.startReconcilers()
	return nil
}

// openDir prepares the data directory and, in authenticated mode, opens the key store and
// makes sure every space has its account.
func (m *Mesh) openDir() error {
	m.dir = m.opts.Dir
	if m.dir == "" {
		d, err := os.MkdirTemp("", "cotal-")
		if err != nil {
			return fmt.Errorf("create temporary data directory: %w", err)
		}
		m.dir, m.tempDir = d, true
	}
	was, err := local.SecureDir(m.dir)
	if err != nil {
		return err
	}
	if was != 0 {
		m.log.Warn("the data directory was writable by other users; narrowed it to 0700: check that its files are yours",
			"dir", m.dir, "was", fmt.Sprintf("%04o", was))
	}
	if m.opts.Open || m.opts.member() {
		return nil
	}
	so := m.opts.storeOptions()
	// A temporary directory is deleted at Close, so its key store need not reach the disk.
	so.Temporary = m.tempDir
	store, err := provisioner.Open(m.dir, so)
	if err != nil {
		return err
	}
	m.store = store
	m.agentAccount = map[string]string{}
	for _, name := range m.opts.Spaces {
		acct, err := store.EnsureSpace(name)
		if err != nil {
			return fmt.Errorf("space %s: %w", name, err)
		}
		m.logRetired(acct)
		m.logRetiredLeaves(acct)
		m.agentAccounts = append(m.agentAccounts, acct.PublicKey)
		m.agentAccount[name] = acct.PublicKey
	}
	return nil
}

// logRetired says which credentials an upgrade to the storage/agent account split retired
// (provisioner.Account.Retired): each must be minted again before its holder reconnects.
func (m *Mesh) logRetired(acct provisioner.Account) {
	if len(acct.Retired) == 0 {
		return
	}
	m.log.Warn("upgraded the space to a separate storage account: credentials minted before can no longer connect; "+
		"mint each again from its .creds file to keep its id and consumers (cotal auth mint --identity FILE, with its old name, profile and grants)",
		"space", acct.Space, "count", len(acct.Retired))
	for _, rec := range acct.Retired {
		m.log.Warn("retired credential", "space", acct.Space, "name", rec.Name, "id", rec.ID, "profile", rec.Profile,
			"subscribe", rec.Grants.Subscribe, "allow_subscribe", rec.Grants.AllowSubscribe,
			"allow_publish", rec.Grants.AllowPublish, "role", rec.Grants.Role)
	}
}

// logRetiredLeaves says which leaf credentials an upgrade revoked
// (provisioner.Account.RetiredLeaves): each leaf needs a new one before it links again.
func (m *Mesh) logRetiredLeaves(acct provisioner.Account) {
	for _, rec := range acct.RetiredLeaves {
		m.log.Warn("revoked a leaf credential minted for an older link: "+
			"mint a new one (cotal auth mint --profile leaf) and save it on that leaf",
			"space", acct.Space, "name", rec.Name, "id", rec.ID)
	}
}

func (m *Mesh) brokerConfig() (broker.Config, error) {
	c := broker.DefaultConfig()
	c.Listen, c.TLSCert, c.TLSKey = m.opts.Listen, m.opts.TLS.Cert, m.opts.TLS.Key
	c.DeferListen = true // opened by start once every space is ready
	c.Sync, c.Logger, c.Open = m.opts.Sync, m.log, m.opts.Open
	c.ViolationLogInterval = m.opts.Limits.logInterval()
	// A logger at debug level (config log.level: debug) is asked for debug lines; nats-server
	// writes none unless told to, and the mesh itself logs nothing at debug.
	c.Debug = m.log.Enabled(context.Background(), slog.LevelDebug)
	if m.opts.SyncInterval > 0 {
		c.SyncInterval = m.opts.SyncInterval
	}
	if m.opts.Memory {
		c.Memory = true
	} else {
		c.StoreDir = filepath.Join(m.dir, "jetstream")
	}
	if m.opts.Open {
		return c, nil
	}
	var trust provisioner.Trust
	var err error
	if m.opts.member() {
		trust, err = m.memberTrust()
	} else {
		trust, err = m.store.Trust()
	}
	if err != nil {
		return c, err
	}
	c.OperatorJWT, c.SystemAccount, c.Accounts = trust.OperatorJWT, trust.SystemAccount, trust.Accounts
	if err := m.capIdentities(&c); err != nil {
		return c, err
	}
	if m.opts.clustered() {
		err = m.clusterConfig(&c)
	}
	m.leafConfig(&c)
	return c, err
}

// capIdentities gives the broker a system user and has it cap the connections of every
// identity the mesh hands out (Limits.ConnectionsPerIdentity): the users of each space's
// agent account. The mesh's own connections live in the storage accounts and are not capped.
// A cluster node without the key store has no system user, and caps nothing.
func (m *Mesh) capIdentities(c *broker.Config) error {
	if m.store == nil {
		return nil
	}
	sys, err := m.store.SystemCredential()
	if err != nil {
		return err
	}
	c.SystemUserJWT, c.SystemUserSeed = sys.JWT, string(sys.Seed)
	c.ConnectionsPerUser, c.CappedAccounts = m.opts.Limits.ConnectionsPerIdentity, m.agentAccounts
	return nil
}

// provisionedSpaces are the spaces this mesh provisions and serves the backstop of: every
// configured space, except on a cluster node without the key store, which leaves both to the
// node that has it.
func (m *Mesh) provisionedSpaces() []string {
	if m.opts.member() {
		return nil
	}
	return m.opts.Spaces
}

// storage is the JetStream storage every stream of the mesh uses.
func (m *Mesh) storage() jetstream.StorageType {
	if m.opts.Memory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// Dir is the data directory in use.
func (m *Mesh) Dir() string { return m.dir }

// Spaces lists the spaces of the mesh, sorted.
func (m *Mesh) Spaces() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.spaces))
	for name := range m.spaces {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// HTTPURL is the http:// address of the health, metrics and monitoring listener, or "".
func (m *Mesh) HTTPURL() string {
	if m.ops == nil {
		return ""
	}
	return m.ops.URL()
}

// DeliveryStats are the counters of space's durable backstop (docs/durable.md), on the node
// that runs it; on another node of a cluster the error says to look at the cluster status.
func (m *Mesh) DeliveryStats(space string) (delivery.Stats, error) {
	svc, err := m.delivery(space)
	if err != nil {
		return delivery.Stats{}, err
	}
	return svc.Stats(), nil
}

// Info describes what Start resolved: the node's name and the listeners bound to port 0.
type Info struct {
	// Node is the broker's server name, as cluster peers and Status name it.
	Node string
	// LeafURL is where leaf meshes connect; empty unless the mesh is a hub.
	LeafURL string
}

// Info describes the running mesh.
func (m *Mesh) Info() Info {
	return Info{Node: m.broker.Server().Name(), LeafURL: m.broker.LeafURL()}
}

func (m *Mesh) delivery(space string) (*delivery.Service, error) {
	rt, err := m.runtime(space)
	if err != nil {
		return nil, err
	}
	svc := rt.service()
	if svc == nil {
		return nil, fmt.Errorf("%w %s: see the cluster status for the node that does", errNotHolder, space)
	}
	return svc, nil
}

// Broker is the embedded broker, for tests that inject faults below the mesh (a server shut
// down underneath it, a client disconnected) or count what nats-server holds. The mesh's
// guarantees are those of its methods; what is done to the broker directly is outside them.
func (m *Mesh) Broker() *broker.Broker { return m.broker }

// InProcess is the in-process connection provider: a nats.Conn made with
// nats.InProcessServer(m.InProcess()) reaches the broker without TCP.
func (m *Mesh) InProcess() nats.InProcessConnProvider { return m.broker.InProcess() }

// runtime is the running parts of space name, or ErrClosed or an unknown-space error.
func (m *Mesh) runtime(name string) (*spaceRuntime, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	rt, ok := m.spaces[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: the mesh serves %v", ErrNoSuchSpace, name, m.opts.Spaces)
	}
	return rt, nil
}

// ErrClosed is returned by a Mesh method called after Close.
var ErrClosed = errors.New("space: mesh is closed")

// Close stops everything in the reverse order of Start: each space's delivery loops and
// connections, the broker, the key store; a temporary data directory is removed. Done is
// closed when it returns. It is idempotent, and also releases a mesh whose broker died.
func (m *Mesh) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	spaces, endpoints, backstopConns := m.spaces, m.endpoints, m.backstopConns
	backstops := make([]*backstop, 0, len(m.backstops))
	for _, b := range m.backstops {
		backstops = append(backstops, b)
	}
	m.mu.Unlock()
	m.endLife()
	m.watcher.Wait()
	m.stopGhostWork()
	defer m.stop(nil)

	var errs []error
	if m.ops != nil {
		errs = append(errs, m.ops.close(ctx))
	}
	// The endpoints handed out and the mesh's own loops need nothing of each other to stop,
	// so they stop at once; the broker goes after both.
	var epErr error
	var endpointsClosed sync.WaitGroup
	endpointsClosed.Go(func() { epErr = closeEndpoints(ctx, endpoints) })
	// Each backstop stops its delivery loops and releases its lease, so another node takes
	// over within a second; they stop at once, like the endpoints.
	var stopping sync.WaitGroup
	for _, b := range backstops {
		stopping.Go(b.close)
	}
	stopping.Wait()
	for _, nc := range backstopConns {
		nc.Close()
	}
	for _, rt := range spaces {
		errs = append(errs, rt.close(ctx))
	}
	endpointsClosed.Wait()
	errs = append(errs, epErr)
	if m.broker != nil {
		errs = append(errs, m.broker.Shutdown(ctx))
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
	}
	if m.tempDir {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}

// closeEndpoints closes the endpoints handed out in process all at once: each Close waits on
// its own round trips and on nats.go's drain polling, none on another's, so together they
// take as long as the slowest one rather than the sum.
func closeEndpoints(ctx context.Context, eps []*endpoint.Endpoint) error {
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			if err := ep.Close(ctx); err != nil && !errors.Is(err, endpoint.ErrClosed) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
