package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Broker is one running embedded nats-server. It is safe for concurrent use.
type Broker struct {
	cfg      Config
	log      *slog.Logger
	srv      *server.Server
	trust    *trustChain            // nil in open mode
	resolver server.AccountResolver // nil in open mode
	sys      *nats.Conn             // system user connection (Config.SystemUserJWT), or nil
	userCap  *userCap               // Config.ConnectionsPerUser, or nil
	store    *store
	fatal    *fatalSignal
	// violations rate-limits client refusal lines (Config.ViolationLogInterval).
	violations *violationLimiter

	// accountMu serializes UpdateAccount so the resolver and the server end on the same JWT.
	accountMu sync.Mutex

	stopOnce sync.Once
	stopping chan struct{} // closed when Shutdown is first called
	stopped  chan struct{} // closed when the server has stopped and the store is released
	stopErr  error         // written before stopped is closed
	watchers sync.WaitGroup

	listenMu sync.Mutex // serializes Listen, so AcceptLoop runs at most once

	done    chan struct{} // closed when nats-server has stopped, for whatever reason
	doneErr error         // why it stopped: nil after Shutdown; written before done is closed
}

// Start runs nats-server with cfg and returns once it accepts connections and JetStream is
// enabled, or with an error after stopping whatever it started. A memory mesh without a
// listener starts in a few milliseconds; recovering a large file store takes longer.
//
// nats-server's own start sequence (JetStream recovery included) cannot be interrupted
// safely, so when ctx is cancelled or ReadyTimeout passes, Start lets that sequence finish,
// shuts the server down, and then returns ctx's error or ErrNotReady.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	b, err := newBroker(cfg)
	if err != nil {
		return nil, err
	}
	// Accounts are loaded before the server starts: Start dials the leaf remotes at once, and
	// nats-server names a remote's account while dialing without the lock its account loading
	// writes that name under.
	err = b.loadAccounts()
	if err == nil {
		err = b.run(ctx)
	}
	if err == nil {
		err = b.connectSystem()
	}
	if err == nil {
		err = b.startUserCap()
	}
	if err == nil && b.sys != nil {
		err = b.watchAuthErrors()
	}
	if err != nil {
		if b.sys != nil {
			b.sys.Close()
		}
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
		if relErr := b.store.release(); relErr != nil {
			b.log.Error("release store after a failed start", "err", relErr)
		}
		return nil, err
	}
	b.watchers.Add(2)
	go b.watchFatal()
	go b.watchServer()
	return b, nil
}

// newBroker prepares the store, the options and the server, without starting it.
func newBroker(cfg Config) (*Broker, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Broker{
		cfg:      cfg,
		log:      log,
		fatal:    newFatalSignal(),
		stopping: make(chan struct{}),
		stopped:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := b.configureTrust(); err != nil {
		return nil, err
	}
	st, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	b.store = st
	if err = b.newResolver(); err == nil {
		b.srv, err = b.newServer()
	}
	if err != nil {
		if relErr := st.release(); relErr != nil {
			b.log.Error("release store after a failed start", "err", relErr)
		}
		return nil, err
	}
	return b, nil
}

// newServer creates the nats-server on the opened store, with the slog logger installed
// before Start, so no line ever reaches nats-server's os.Exit-ing loggers.
func (b *Broker) newServer() (*server.Server, error) {
	opts, err := b.serverOptions(b.store.dir)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configure nats-server: %w", err)
	}
	b.violations = newViolationLimiter(b.log, b.cfg.ViolationLogInterval)
	srv.SetLoggerV2(&serverLogger{log: b.log, fatal: b.fatal, violations: b.violations}, b.cfg.Debug, b.cfg.Trace, false)
	return srv, nil
}

// configureTrust decodes the operator mode fields and preloads the account resolver.
func (b *Broker) configureTrust() error {
	if b.cfg.Open {
		return nil
	}
	tc, accounts, err := b.cfg.trust()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	b.trust = tc
	for _, claims := range accounts {
		tc.warnNoJetStream(b.log, claims)
	}
	return nil
}

// newResolver preloads the account resolver: a memory one on a single server, the full NATS
// resolver in the store directory on a cluster node.
func (b *Broker) newResolver() error {
	if b.trust == nil {
		return nil
	}
	var err error
	if b.cfg.Cluster != nil {
		b.resolver, err = newClusterResolver(b.store.dir, b.cfg.Accounts)
	} else {
		b.resolver, err = newResolver(b.cfg.Accounts)
	}
	return err
}

// readyStep is how often run looks for a fatal error while it waits for readiness.
const readyStep = 100 * time.Millisecond

// run starts the server and waits for readiness within ReadyTimeout.
func (b *Broker) run(ctx context.Context) error {
	deadline := time.Now().Add(b.cfg.ReadyTimeout)
	started := make(chan struct{})
	go func() {
		defer close(started)
		b.srv.Start()
	}()
	timer := time.NewTimer(b.cfg.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-started:
	case <-ctx.Done():
		<-started
		return fmt.Errorf("start broker: %w", ctx.Err())
	case <-timer.C:
		<-started
		return fmt.Errorf("%w: nats-server did not finish starting within ReadyTimeout %v", ErrNotReady, b.cfg.ReadyTimeout)
	}
	// nats-server opens its route and leaf listeners from goroutines of their own, so a port
	// already in use is reported after Start returns: watch for it while waiting.
	for !b.srv.ReadyForConnections(readyStep) {
		if err := b.fatal.error(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: nats-server accepts no connections within ReadyTimeout %v", ErrNotReady, b.cfg.ReadyTimeout)
		}
	}
	if err := b.fatal.error(); err != nil {
		return err
	}
	if !b.srv.JetStreamEnabled() {
		return fmt.Errorf("%w: %w: check the log for the reason", ErrNotReady, ErrJetStreamDisabled)
	}
	return nil
}

// watchFatal shuts the server down after a fatal error, from a goroutine of its own: the
// logger that raised the error may be running under nats-server's locks.
func (b *Broker) watchFatal() {
	defer b.watchers.Done()
	select {
	case <-b.fatal.raised():
		b.log.Error("nats-server failed; shutting it down", "err", b.fatal.error())
		b.srv.Shutdown()
	case <-b.stopping:
	}
}

// Shutdown stops the server: listeners close, clients are disconnected, JetStream flushes
// its store, the store lock is released (a Memory mesh's store is deleted). It returns when
// all of that is done, or with ctx's error if ctx ends first, in which case the shutdown
// continues and a later Shutdown call waits for it again. Calling it more than once is safe.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.stopOnce.Do(func() {
		close(b.stopping)
		go b.stop()
	})
	select {
	case <-b.stopped:
		return b.stopErr
	case <-ctx.Done():
		return fmt.Errorf("broker shutdown still in progress: %w", ctx.Err())
	}
}

// watchServer closes done once nats-server has stopped, recording why: a fatal error, a
// shutdown nobody asked for through Shutdown, or none.
func (b *Broker) watchServer() {
	defer b.watchers.Done()
	b.srv.WaitForShutdown()
	switch err := b.fatal.error(); {
	case err != nil:
		b.doneErr = err
	case !b.isStopping():
		b.doneErr = ErrStopped
	}
	close(b.done)
}

// Done is closed when nats-server has stopped: after Shutdown, after a fatal error, or when
// something shut the server down underneath the broker. Err then says which.
func (b *Broker) Done() <-chan struct{} { return b.done }

// Err is nil while the server runs and after a Shutdown; once Done is closed for another
// reason it is the cause: an ErrFatal error or ErrStopped.
func (b *Broker) Err() error {
	select {
	case <-b.done:
		return b.doneErr
	default:
		return nil
	}
}

func (b *Broker) stop() {
	b.accountMu.Lock()
	if b.sys != nil {
		b.sys.Close()
	}
	b.accountMu.Unlock()
	// JetStream first: Shutdown otherwise sleeps 50 ms whenever a pull request is pending,
	// which every bound consumer has. ShutdownJetStream flushes and stops the streams as
	// Shutdown would; its error only says JetStream was already off.
	_ = b.srv.ShutdownJetStream()
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	b.watchers.Wait()
	b.violations.stop()
	b.stopErr = b.store.release()
	close(b.stopped)
}

func (b *Broker) isStopping() bool {
	select {
	case <-b.stopping:
		return true
	default:
		return false
	}
}

// Healthy returns nil while the server runs with JetStream enabled; otherwise ErrClosed after
// Shutdown, the ErrFatal error that stopped it, ErrNotRunning, or ErrJetStreamDisabled.
func (b *Broker) Healthy() error {
	if b.isStopping() {
		return ErrClosed
	}
	if err := b.fatal.error(); err != nil {
		return err
	}
	if !b.srv.Running() {
		return ErrNotRunning
	}
	if !b.srv.JetStreamEnabled() {
		return ErrJetStreamDisabled
	}
	return nil
}

// ClientURL returns the listener's URL with the port actually bound: "tls://" when TLS is
// required, "nats://" otherwise, "" without a listener or after Shutdown. An unspecified
// listen host (0.0.0.0, ::) is reported as loopback, so the URL always dials from this host.
func (b *Broker) ClientURL() string {
	addr, ok := b.srv.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	scheme := "nats"
	if b.cfg.TLSCert != "" {
		scheme = "tls"
	}
	return (&url.URL{Scheme: scheme, Host: dialable(addr)}).String()
}

// MonitorURL returns the monitoring endpoint's "http://" URL with the port actually bound,
// or "" without one.
func (b *Broker) MonitorURL() string {
	addr := b.srv.MonitorAddr()
	if addr == nil {
		return ""
	}
	return (&url.URL{Scheme: "http", Host: dialable(addr)}).String()
}

func dialable(addr *net.TCPAddr) string {
	ip := addr.IP
	switch {
	case ip.Equal(net.IPv4zero) || ip == nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.Equal(net.IPv6unspecified):
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port))
}

// Server returns the running nats-server, for monitoring and statistics. Do not shut it down
// directly: use Shutdown, which also releases the store.
func (b *Broker) Server() *server.Server { return b.srv }
