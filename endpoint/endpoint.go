package endpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cotal-go/cotal/internal/loggate"
	"github.com/cotal-go/cotal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Connection errors.
var (
	// ErrInvalidOptions: Options failed Validate; the message names the field.
	ErrInvalidOptions = errors.New("invalid endpoint options")
	// ErrServerTooOld: the broker is older than MinServerVersion.
	ErrServerTooOld = errors.New("broker is too old")
	// ErrControlLine: the broker dropped the connection before authentication, which is what it
	// does when the CONNECT line (carrying the credential's grants) exceeds max_control_line.
	ErrControlLine = errors.New("broker dropped the connection before authentication")
	// ErrNotProvisioned: the space's streams or buckets do not exist on the broker.
	ErrNotProvisioned = errors.New("space is not provisioned on this broker")
	// ErrClosed: the Endpoint was closed.
	ErrClosed = errors.New("endpoint is closed")
	// ErrPassive: a passive Endpoint (an observer or admin credential, or Options.Passive) has
	// no presence to set (SPEC Appendix B: readers do not announce themselves); connect an
	// agent credential without Options.Passive to take part.
	ErrPassive = errors.New("a passive endpoint has no presence of its own")
	// ErrCredentialExpired: the broker ended the connection because the credential's JWT
	// expired; reconnecting with it cannot succeed.
	ErrCredentialExpired = errors.New("the credential expired")
	// ErrCredentialRefused: the broker ended the connection refusing the credential, which
	// happens once it is revoked or replaced by a re-mint; reconnecting with it cannot succeed.
	ErrCredentialRefused = errors.New("the mesh refused the credential")
)

// MinServerVersion is the oldest nats-server an Endpoint talks to (build-a-client.md: refuse
// brokers older than NATS 2.12).
const MinServerVersion = "2.12.0"

// Defaults of Options.
const (
	DefaultMaxReconnects  = 60
	DefaultReconnectWait  = 2 * time.Second
	DefaultControlTimeout = 5 * time.Second
	// DefaultMaxPendingAsync is nats.go's own bound on unacknowledged asynchronous publishes.
	DefaultMaxPendingAsync = 4000
)

// Options configure an Endpoint. The zero value plus a transport (Link or InProcess + Space)
// connects in open mode with a generated id.
type Options struct {
	// Link is a cotal:// or cotals:// join link to a remote broker (SPEC §10). Its channels
	// are joined at connect, after Channels.
	Link string
	// InProcess connects to an embedded broker without TCP; package space hands it out.
	InProcess nats.InProcessConnProvider
	// Space is the space name. Required with InProcess; with Link it must be empty or equal
	// the link's space.
	Space string

	// CredsFile and Creds name the .creds content (user JWT and seed); set at most one. The
	// instance id, name and role are read from it (SPEC §2). Without either, the Endpoint runs
	// in open mode (SPEC §2: outside the security claims).
	CredsFile string
	Creds     []byte
	// ID is an optional explicit instance id. With a credential it must equal the
	// credential's id, else Connect fails with ErrIDMismatch before publishing anything (SPEC
	// §2). In open mode it defaults to a fresh user nkey public key.
	ID string

	// Name is the display name; it defaults to the credential's name, then to the id.
	Name string
	// Kind is the AgentCard kind (SPEC §6); default agent.
	Kind wire.CardKind
	// Role is the service role; it defaults to the credential's cotal-role tag. With a role
	// the Endpoint binds svc_<role> and receives anycasts (SPEC §8).
	Role string
	// Description and Tags complete the AgentCard (SPEC §6).
	Description string
	Tags        []string

	// Passive connects as a reader whatever the credential's profile: no presence of its own,
	// no bound consumer, no durable membership (SPEC Appendix B). Observer and admin
	// credentials are always passive; with an agent credential it reads the roster, channels
	// and history without taking the DMs, anycasts and durable copies waiting for the agent.
	Passive bool

	// Handler receives every delivery from the first one on; see Handler and Handle.
	Handler Handler
	// OnEvent, if set, is told about state changes: late join refusals, durable backstop
	// established or unavailable, consumers missing, connection trouble. It is called from
	// internal goroutines and must not block.
	OnEvent func(Event)

	// Heartbeat is the presence refresh interval; default DefaultHeartbeat (SPEC §6).
	Heartbeat time.Duration
	// LivenessWindow marks a peer offline when its ts is older; default DefaultLivenessWindow.
	LivenessWindow time.Duration
	// Channels are joined at connect, in order, then the link's, then the credential's
	// boot channels (its --subscribe channels, Credential.Subscribe), as cotal mcp joins them.
	// A passive Endpoint joins no boot channels.
	Channels []string
	// SkipCredentialChannels leaves the credential's boot channels unjoined, for a program
	// that reads only the channels it names (cotal tail).
	SkipCredentialChannels bool
	// EchoOwn surfaces the Endpoint's own channel messages; by default they are dropped.
	EchoOwn bool
	// DedupWindow is how many of the most recently met message ids are always remembered;
	// at most twice as many are held. Default DefaultDedupWindow.
	DedupWindow int
	// ControlTimeout bounds a control Request whose context has no deadline, including the
	// durable-join request (SPEC §7); default DefaultControlTimeout.
	ControlTimeout time.Duration
	// MaxPendingAsync bounds the asynchronous sends (SendAsync, SendDMAsync, SendAnycastAsync)
	// awaiting their acknowledgement; default DefaultMaxPendingAsync. A send past it waits up
	// to 200 ms for an acknowledgement to make room, then fails with ErrTooManyPending; a send
	// that is never acknowledged (refused by the broker) holds its place for 30 s. It is a
	// safety bound, not a pacing: a sender keeps its own window below it.
	MaxPendingAsync int
	// Logger receives the Endpoint's logs; default discards. Secrets are never logged.
	Logger *slog.Logger
	// MaxReconnects bounds reconnect attempts (default DefaultMaxReconnects); reconnects are
	// never unbounded unless ReconnectForever. ReconnectWait is the pause between attempts
	// (DefaultReconnectWait).
	MaxReconnects int
	ReconnectWait time.Duration
	// ReconnectForever ignores MaxReconnects and keeps reconnecting until Close, for a
	// long-lived front end that must outlive any mesh outage and answer its own callers in the
	// meantime (cotal mcp). Calls made while the connection is down fail or wait as usual. A
	// broker that drops the CONNECT line before authentication still stops the Endpoint
	// (ErrControlLine): that is retried a few times, never forever.
	ReconnectForever bool
}

// Validate checks Options without touching the network. Errors wrap ErrInvalidOptions and name
// the field to fix.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	switch {
	case (o.Link == "") == (o.InProcess == nil):
		return bad("set exactly one of Link and InProcess")
	case o.InProcess != nil && o.Space == "":
		return bad("Space is required with InProcess")
	case o.CredsFile != "" && o.Creds != nil:
		return bad("set at most one of CredsFile and Creds")
	case o.Kind != "" && o.Kind != wire.CardKindAgent && o.Kind != wire.CardKindEndpoint:
		return bad("Kind %q is not agent or endpoint", o.Kind)
	case o.Heartbeat < 0, o.LivenessWindow < 0, o.ControlTimeout < 0, o.ReconnectWait < 0:
		return bad("durations must not be negative")
	case o.MaxReconnects < 0:
		return bad("MaxReconnects must not be negative: reconnects are bounded")
	case o.DedupWindow < 0:
		return bad("DedupWindow must not be negative")
	case o.MaxPendingAsync < 0:
		return bad("MaxPendingAsync must not be negative")
	case o.ID != "" && wire.Sanitize(o.ID) != o.ID:
		return bad("ID %q has characters outside [A-Za-z0-9_-]", o.ID)
	}
	for _, ch := range o.Channels {
		if err := wire.ValidatePublishChannel(ch); err != nil {
			return bad("Channels: %v", err)
		}
	}
	return nil
}

func (o *Options) setDefaults() {
	if o.Kind == "" {
		o.Kind = wire.CardKindAgent
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = wire.DefaultHeartbeat
	}
	if o.LivenessWindow == 0 {
		o.LivenessWindow = wire.DefaultLivenessWindow
	}
	if o.ControlTimeout == 0 {
		o.ControlTimeout = DefaultControlTimeout
	}
	if o.MaxReconnects == 0 {
		o.MaxReconnects = DefaultMaxReconnects
	}
	if o.ReconnectWait == 0 {
		o.ReconnectWait = DefaultReconnectWait
	}
	if o.MaxPendingAsync == 0 {
		o.MaxPendingAsync = DefaultMaxPendingAsync
	}
}

// Endpoint is a connected Cotal instance (SPEC §12): it announces presence, keeps a roster,
// publishes, joins channels and surfaces every delivery through one receive pipeline. Its
// methods are safe for concurrent use. Close it to leave no goroutine or connection behind.
type Endpoint struct {
	opts  Options
	log   *slog.Logger
	names wire.Names
	space string
	id    string
	role  string
	card  wire.AgentCard
	// readACL is the credential's read ACL; nil in open mode, where there is none.
	readACL []string
	// lastDMTarget is the last DM target checkDMTarget passed.
	lastDMTarget atomic.Pointer[string]
	// cred is what the credential says of its holder; zero in open mode (Credential).
	cred Credential
	// minted is set when the Endpoint connects with a credential: the space then publishes
	// minted names (identities.go), which open mode has none of.
	minted bool
	// expires is when the credential's JWT expires; zero without one, or when it does not.
	expires time.Time
	// passive is set for observer and admin credentials and with Options.Passive: readers that
	// hold no presence key, no DM, anycast or durable-copy consumer and no durable membership
	// (SPEC Appendix B).
	passive bool

	nc         *nats.Conn
	js         jetstream.JetStream
	binds      []binding // the bound consumers, set before Connect returns
	presenceKV jetstream.KeyValue
	channelsKV jetstream.KeyValue

	identities identityCache

	handler atomic.Pointer[Handler]
	// rejectLog paces the warnings of terminated anomalies, which a peer can provoke at will.
	rejectLog  loggate.Gate
	dedup      *dedup
	stats      stats
	roster     *Roster
	conn       connWatch
	pres       presenceState
	joins      joinState
	histMu     sync.Mutex // one chathist_<id> consumer exists at a time (SPEC §8)
	violations violations // calls waiting on a publish or subscribe the broker may refuse
	async      asyncSends // asynchronous sends awaiting their outcome

	ctx       context.Context // ends at Close; every goroutine and Handler call watches it
	cancel    context.CancelFunc
	spawnMu   sync.Mutex // orders spawn against shutdown's wg.Wait
	stopping  bool
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Connect authenticates, announces presence, starts the roster and the bound consumers, and
// joins the configured channels (SPEC §2, §6, §8, §10). The instance inbox prefix is set on
// the connection before any request, pull or watch (SPEC §10). When it returns, each bound
// consumer (dm_, dlv_ and, with a role, svc_) is consuming, or did not exist yet, was reported
// with EventConsumerMissing and is bound as soon as the mesh creates it; Backlog says which.
// On error nothing is left running.
func Connect(ctx context.Context, opts Options) (*Endpoint, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	e := &Endpoint{opts: opts, log: logger(opts.Logger), dedup: newDedup(opts.DedupWindow)}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.conn.init()
	if opts.Handler != nil {
		e.Handle(opts.Handler)
	}
	url, natsOpts, channels, err := e.resolve()
	if err == nil {
		e.log = e.log.With("space", e.space, "id", e.id)
		err = e.dial(url, natsOpts)
	}
	if err != nil {
		e.cancel()
		return nil, err
	}
	if err := e.start(ctx, append(append([]string{}, opts.Channels...), channels...)); err != nil {
		_ = e.shutdown(context.Background(), false)
		return nil, err
	}
	return e, nil
}

// resolve works out identity, space and transport from Options, before any network use. It
// fails with ErrIDMismatch when an explicit id differs from the credential's (SPEC §2).
func (e *Endpoint) resolve() (string, []nats.Option, []string, error) {
	o := &e.opts
	var natsOpts []nats.Option
	url, space := nats.DefaultURL, o.Space
	var channels []string
	linkAuthSet := false
	if o.Link != "" {
		l, err := wire.ParseLink(o.Link)
		if err != nil {
			return "", nil, nil, err
		}
		if space != "" && space != l.Space {
			return "", nil, nil, fmt.Errorf("%w: Space %q differs from the link's space %q",
				ErrInvalidOptions, space, l.Space)
		}
		url, space, channels = l.ServerURL(), l.Space, l.Channels
		natsOpts = append(natsOpts, LinkOptions(l)...)
		linkAuthSet = l.Token != "" || l.User != ""
	} else {
		natsOpts = append(natsOpts, nats.InProcessServer(o.InProcess))
	}
	cred, err := readCredential(o)
	if err != nil {
		return "", nil, nil, err
	}
	if cred != nil && linkAuthSet {
		return "", nil, nil, fmt.Errorf("%w: a credential excludes the link's token or user:pass (SPEC §10)",
			ErrInvalidOptions)
	}
	if err := e.adoptIdentity(cred); err != nil {
		return "", nil, nil, err
	}
	if cred != nil {
		natsOpts = append(natsOpts, nats.UserJWT(cred.userJWT, cred.sign))
	}
	e.space, e.names = space, wire.NewNames(space)
	if cred != nil {
		e.cred = cred.Credential
		e.readACL = cred.readACL(e.names)
		e.passive = cred.Profile == wire.ProfileObserver || cred.Profile == wire.ProfileAdmin
	}
	e.passive = e.passive || o.Passive
	if cred != nil && !e.passive && !o.SkipCredentialChannels {
		channels = append(channels, cred.Subscribe...)
	}
	e.card = wire.AgentCard{ID: e.id, Name: e.card.Name, Kind: o.Kind, Role: e.role,
		Description: o.Description, Tags: o.Tags, ProtocolVersion: wire.ProtocolVersion}
	return url, natsOpts, channels, nil
}

// LinkOptions are the connect options a join link carries besides its address (SPEC §10):
// its token or user:pass, taken out of the URL, and TLS for cotals://.
func LinkOptions(l wire.Link) []nats.Option {
	opts := []nats.Option{}
	switch {
	case l.Token != "":
		opts = append(opts, nats.Token(l.Token))
	case l.User != "":
		opts = append(opts, nats.UserInfo(l.User, l.Password))
	}
	if l.TLS {
		opts = append(opts, nats.Secure())
	}
	return opts
}

func readCredential(o *Options) (*credential, error) {
	contents := o.Creds
	if o.CredsFile != "" {
		b, err := os.ReadFile(o.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("read credential %s: %w", o.CredsFile, err)
		}
		contents = b
	}
	if contents == nil {
		return nil, nil
	}
	return parseCreds(contents)
}

// adoptIdentity takes the id, name and role bound to the credential (SPEC §2), or in open
// mode the explicit id or a fresh user nkey.
func (e *Endpoint) adoptIdentity(cred *credential) error {
	o := &e.opts
	e.id, e.role, e.card.Name = o.ID, o.Role, o.Name
	if cred != nil {
		if o.ID != "" && o.ID != cred.ID {
			return fmt.Errorf("%w: Options.ID is %s, the credential is bound to %s", ErrIDMismatch, o.ID, cred.ID)
		}
		e.id, e.minted, e.expires = cred.ID, true, cred.Expires
		if e.role == "" {
			e.role = cred.Role
		}
		if e.card.Name == "" {
			e.card.Name = cred.Name
		}
	}
	if e.id == "" {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("generate an open-mode id: %w", err)
		}
		if e.id, err = kp.PublicKey(); err != nil {
			return fmt.Errorf("generate an open-mode id: %w", err)
		}
	}
	if e.card.Name == "" {
		e.card.Name = e.id
	}
	return nil
}

// start runs everything after the connection is up, in the order SPEC §10 and §6 want: the
// JetStream handles, the first presence write, the roster, the bound consumers, then joins.
func (e *Endpoint) start(ctx context.Context, channels []string) error {
	js, err := jetstream.New(e.nc, jetstream.WithPublishAsyncMaxPending(e.opts.MaxPendingAsync),
		jetstream.WithPublishAsyncTimeout(asyncAckWait), jetstream.WithPublishAsyncAckHandler(e.acked),
		jetstream.WithPublishAsyncErrHandler(e.failed))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	e.js = js
	// The two buckets are looked up at once: each lookup is a round trip through the storage
	// account and neither needs the other.
	var chErr error
	var opened sync.WaitGroup
	opened.Go(func() { e.channelsKV, chErr = e.openBucket(ctx, e.names.ChannelsBucket()) })
	e.presenceKV, err = e.openBucket(ctx, e.names.PresenceBucket())
	opened.Wait()
	if err = errors.Join(err, chErr); err != nil {
		return err
	}
	if e.roster, err = joinDirectory(ctx, e); err != nil {
		return err
	}
	if e.passive {
		// SPEC Appendix B: an observer or admin writes no presence and binds no consumer; it
		// reads the roster, channels and history only. Its final offline is never written.
		e.pres.final = true
	} else {
		e.pres.status = wire.StatusIdle
		// A put of the same row twice is harmless, so one whose answer was lost (a presence
		// stream electing its leader in a cluster just started) is asked again rather than
		// spending the connect's whole deadline.
		if err := retryRead(ctx, readAttempt, e.writePresence); err != nil {
			return fmt.Errorf("announce presence: %w", err)
		}
		e.spawn(e.heartbeatLoop)
		if err := e.startBindings(ctx); err != nil {
			return err
		}
	}
	for _, ch := range channels {
		if _, err := e.Join(ctx, ch); err != nil {
			return fmt.Errorf("join %s at connect: %w", ch, err)
		}
	}
	return nil
}

// openBucket binds the space's bucket, asking again when a request is lost (retryRead).
func (e *Endpoint) openBucket(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := retryRead(ctx, readAttempt, func(ctx context.Context) (err error) {
		kv, err = e.js.KeyValue(ctx, bucket)
		return err
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: bucket %s is missing; start the space with `cotal up` or space.Start",
			ErrNotProvisioned, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// spawn runs f on a goroutine the Endpoint owns: Close cancels e.ctx and waits for it. Once
// Close has begun it runs nothing and reports false.
func (e *Endpoint) spawn(f func(ctx context.Context)) bool {
	e.spawnMu.Lock()
	defer e.spawnMu.Unlock()
	if e.stopping {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f(e.ctx)
	}()
	return true
}

// ID is the instance id (SPEC §2).
func (e *Endpoint) ID() string { return e.id }

// Name is the display name.
func (e *Endpoint) Name() string { return e.card.Name }

// Space is the space name as configured.
func (e *Endpoint) Space() string { return e.space }

// Card returns a copy of the AgentCard announced in presence (SPEC §6), which also holds the
// service role.
func (e *Endpoint) Card() wire.AgentCard {
	c := e.card
	c.Tags = append([]string(nil), e.card.Tags...)
	return c
}

// ref is the EndpointRef this instance signs its messages with (SPEC §5).
func (e *Endpoint) ref() wire.EndpointRef {
	return wire.EndpointRef{ID: e.id, Name: e.card.Name, Role: e.role}
}

// Roster is the live presence directory of the space (SPEC §6).
func (e *Endpoint) Roster() *Roster { return e.roster }

// Connected reports whether the connection to the broker is up. While it is down the Endpoint
// reconnects (Options.MaxReconnects) and calls fail or wait; Done says when it gave up.
func (e *Endpoint) Connected() bool { return e.nc.IsConnected() }

// Done is closed when the Endpoint stops: after Close, or when the connection is lost for
// good (reconnects exhausted, or refused before authentication). Err then says why.
func (e *Endpoint) Done() <-chan struct{} { return e.conn.closed }

// Err is nil while the Endpoint runs, and after Done says why it stopped.
func (e *Endpoint) Err() error { return e.conn.err() }

// Close writes one final offline presence record (SPEC §6), stops every goroutine, leaves
// the bound consumers, naks the copies they had pulled but not surfaced (they are redelivered
// at once, not after their ack wait), flushes and closes the connection. ctx bounds the final
// write and the flush.
// Close is idempotent; later calls return the first result.
func (e *Endpoint) Close(ctx context.Context) error {
	e.closeOnce.Do(func() { e.closeErr = e.shutdown(ctx, true) })
	return e.closeErr
}

// shutdown stops the Endpoint in order: heartbeats end before the final offline write, the
// goroutines stop before the connection drains.
func (e *Endpoint) shutdown(ctx context.Context, announce bool) error {
	var errs []error
	if announce {
		if err := e.writeFinalPresence(ctx); err != nil {
			errs = append(errs, fmt.Errorf("final offline presence: %w", err))
		}
	} else {
		e.pres.stop()
	}
	e.cancel()
	e.async.close(ErrClosed)
	e.spawnMu.Lock()
	e.stopping = true
	e.spawnMu.Unlock()
	e.wg.Wait()
	if e.roster != nil {
		// The shared watch may run on this connection: it moves before the connection drains.
		e.roster.leave()
	}
	if e.nc != nil {
		if err := e.drain(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	e.conn.finish(ErrClosed)
	return errors.Join(errs...)
}

// drain flushes what the Endpoint published (acks and naks included) and closes the
// connection. Every subscription that owes anything was drained before: the bindings nak'd
// their pulled copies, the roster watch moved; live copies still buffered are at-most-once
// (SPEC §4). nats.go's Conn.Drain would poll for the subscriptions every 10 ms instead.
func (e *Endpoint) drain(ctx context.Context) error {
	if e.nc.IsClosed() {
		return nil
	}
	var err error
	// A connection the broker closed meanwhile (a mesh shutting down) has nothing left to flush.
	if e.nc.IsConnected() {
		if ferr := flush(ctx, e.nc); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
			err = fmt.Errorf("flush before close: %w", ferr)
		}
	}
	e.nc.Close()
	<-e.conn.natsClosed
	return err
}

// closeFlushWait bounds the flush at Close when its ctx has no deadline.
const closeFlushWait = 5 * time.Second

// flush waits until the broker has read everything published on nc, within ctx's deadline or
// closeFlushWait.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); ok {
		return nc.FlushWithContext(ctx)
	}
	return nc.FlushTimeout(closeFlushWait)
}
