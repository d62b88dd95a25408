package space

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/internal/local"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// Options configures a mesh started by Start; it is also what cotal.yaml, the COTAL_*
// environment and the flags of `cotal up` load into (package config), so embedding a mesh and
// running one from a file share one type. The zero value is a valid per-test mesh: a
// temporary directory, one space "main", no TCP listener, authentication on.
//
// A field's koanf tag is its key in cotal.yaml ("tls.cert" for TLS.Cert); a field tagged "-"
// is not configuration and only a program embedding the mesh sets it. Start fills a zero
// field with the default its comment gives; the loader's defaults differ where the comment
// says so.
type Options struct {
	// Dir is the data directory (keys.db, the JetStream store). Empty means a
	// temporary directory that Close removes; its key store is never fsynced, since nothing
	// in it outlives Close. The loader's default is the user's data directory + "/cotal".
	Dir string `koanf:"dir"`
	// Spaces are the spaces to provision; default ["main"]. Each is one NATS account (SPEC §9)
	// named by a token SPEC §3 sanitization leaves unchanged: letters, digits, _ and -.
	Spaces []string `koanf:"spaces"`
	// Listen is the TCP client listener "host:port"; empty means in-process connections only.
	// The loader's default is "127.0.0.1:4222", SPEC §10's default port.
	Listen string `koanf:"listen"`
	// TLS enables TLS on the listener; join links then use cotals:// (SPEC §10).
	TLS TLSOptions `koanf:"tls"`
	// HTTP is the optional monitoring listener "host:port". It must be a loopback address
	// (127.0.0.0/8, ::1, localhost) unless HTTPPublic is set.
	HTTP string `koanf:"http"`
	// HTTPPublic allows HTTP beyond loopback. The endpoints that show identities need the
	// bearer token of HTTPTokenFile either way; /healthz, /metrics and /varz do not.
	HTTPPublic bool `koanf:"http_public"`
	// Console, when set, answers every path of the HTTP listener that no ops route takes,
	// from "/" down (the web console).
	Console http.Handler `koanf:"-"`
	// Sync is the JetStream durability mode: broker.SyncAlways (the default, "always") fsyncs
	// every write, so an acknowledged publish survives power loss; broker.SyncInterval
	// ("interval") fsyncs every SyncInterval, faster but may lose the last interval on a crash.
	Sync broker.SyncMode `koanf:"sync"`
	// SyncInterval is the flush period under broker.SyncInterval; the loader's default is 2m,
	// at least 1s.
	SyncInterval time.Duration `koanf:"sync_interval"`
	// Memory keeps every stream in memory: nothing survives Close. Fastest for tests.
	Memory bool `koanf:"-"`
	// Open runs without authentication (dev mode; SPEC §9 claims do not hold). Start refuses
	// it with a Listen beyond loopback (ErrOpenBind) unless OpenInsecureBind is set.
	Open bool `koanf:"open"`
	// OpenInsecureBind lets an Open mesh listen beyond loopback, where anyone who reaches the
	// listener reads and writes everything; Start then logs a warning.
	OpenInsecureBind bool `koanf:"open_insecure_bind"`
	// Log is the format and level of the log `cotal up` writes (LogOptions.Logger). Start does
	// not read it: it logs to Logger.
	Log LogOptions `koanf:"log"`
	// Logger receives the mesh's and nats-server's logs; nil discards them.
	Logger *slog.Logger `koanf:"-"`
	// AckWait is how long the bind-only dm_, svc_ and dlv_ consumers wait for an ack before
	// redelivering (SPEC §8: 60 s, the default). A crashed receiver's unacked message reaches
	// the next binding after this long; tests shorten it.
	AckWait time.Duration `koanf:"-"`
	// ReconcileInterval is how often every consumer of each space is re-checked against the
	// registry (Mesh.Reconcile); zero means 30 s. Each consumer create is also checked as it
	// happens. A negative value turns both off; the passes at start, after every revoke and
	// after every mint that runs one (Mesh.Mint) still run.
	ReconcileInterval time.Duration `koanf:"-"`
	// Expiry is the lifetime of a credential minted with no expiry of its own (the exp of
	// the SPEC §9 user JWT is issue time + Expiry). Zero means 24 h, provisioner's default;
	// the loader wants at least 1s, since JWT expiry has whole-second resolution.
	Expiry time.Duration `koanf:"expiry"`
	// Limits bound each space and each minted credential; a zero field takes its
	// DefaultLimits value.
	Limits Limits `koanf:"limits"`
	// Cluster makes the mesh one node of a NATS cluster of cotal nodes (ClusterOptions); the
	// zero value runs it alone.
	Cluster ClusterOptions `koanf:"cluster"`
	// Leaf makes the mesh a hub that leaf meshes connect to, or a leaf of one (LeafOptions);
	// the zero value runs no leaf link.
	Leaf LeafOptions `koanf:"leaf"`
}

// TLSOptions name the PEM certificate (chain) and private key of the client listener: both
// or neither.
type TLSOptions struct {
	// Cert is the path of the PEM certificate (chain).
	Cert string `koanf:"cert"`
	// Key is the path of the PEM private key; it is read, never logged.
	Key string `koanf:"key"`
}

// storeOptions are the key store options of a mesh run with o: provisioner.DefaultOptions
// with o's credential lifetime and limits. It is the one place Options reach the
// provisioner. The space's storage goes to the one storage type its streams use; the other
// gets none. The account does not require a byte limit on every stream (max_bytes_required):
// only the mesh creates streams, each with its limit, and a data directory from before the
// limits would hold streams without one, which the broker then refuses to recover.
func (o Options) storeOptions() provisioner.Options {
	p := provisioner.DefaultOptions()
	if o.Expiry > 0 {
		p.CredentialTTL = o.Expiry
	}
	l := o.Limits
	p.Limits = provisioner.Limits{Connections: int64(l.Connections), Subscriptions: int64(l.Subscriptions), Payload: int64(l.Payload)}
	if o.leafLinked() {
		// A leaf link counts on both sides: one per space on a leaf, one per leaf on a hub.
		p.Limits.LeafNodes = int64(l.Connections)
	}
	// A clustered account is charged for every replica, so a space of SpaceBytes on R3 needs
	// three times as much of the account's limit.
	bytes := l.SpaceBytes * int64(o.replicas())
	p.JetStream.MemoryStorage, p.JetStream.DiskStorage = 0, bytes
	if o.Memory {
		p.JetStream.MemoryStorage, p.JetStream.DiskStorage = bytes, 0
	}
	return p
}

// ErrNoSuchSpace is returned for a space the mesh was not started with.
var ErrNoSuchSpace = errors.New("no such space")

// ErrUnsafePath is returned by Start for a data directory, or an entry at its top level, that
// another local user owns: it could hold a planted key store (SPEC §9 assumes the data
// directory is the user's). It is config.ErrUnsafePath too.
var ErrUnsafePath = local.ErrUnsafePath

// ErrOpenBind is returned by Start for an Open mesh whose Listen reaches beyond loopback
// without OpenInsecureBind: with no authentication and no TLS, anyone who reaches such a
// listener reads and writes everything.
var ErrOpenBind = errors.New("space: open mode on a listener beyond loopback")

func (o Options) withDefaults() Options {
	if len(o.Spaces) == 0 {
		o.Spaces = []string{"main"}
	}
	if o.AckWait <= 0 {
		o.AckWait = defaultAckWait
	}
	if o.ReconcileInterval == 0 {
		o.ReconcileInterval = defaultReconcileInterval
	}
	if o.Sync == "" {
		o.Sync = broker.SyncAlways
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Limits = o.Limits.withDefaults()
	if o.clustered() && o.Cluster.ServerName == "" {
		if _, port, err := net.SplitHostPort(o.Cluster.Listen); err == nil {
			o.Cluster.ServerName = "cotal-" + port
		}
	}
	return o
}

// validate reports the first option out of range. It also logs, at Warn, an open mesh
// listening beyond loopback under OpenInsecureBind, so the exposure is in the structured log
// and not only on a terminal.
func (o Options) validate() error {
	if o.Expiry < 0 {
		return fmt.Errorf("credential expiry %v is negative; use a positive duration such as 24h, or 0 for the default", o.Expiry)
	}
	if o.HTTP != "" && !o.HTTPPublic && !local.IsLoopback(o.HTTP) {
		return fmt.Errorf("monitoring listener %q binds beyond this machine; use a loopback address such as 127.0.0.1:8222, or set HTTPPublic", o.HTTP)
	}
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range o.Spaces {
		if s == "" || wire.Sanitize(s) != s {
			return fmt.Errorf("space %q: use letters, digits, '_' and '-' only", s)
		}
		if seen[s] {
			return fmt.Errorf("space %q is listed twice", s)
		}
		seen[s] = true
	}
	if err := o.validateCluster(); err != nil {
		return err
	}
	if err := o.validateLeaf(); err != nil {
		return err
	}
	// Last, so that the warning is logged only for options that start a mesh.
	return o.checkOpenBind()
}

// checkOpenBind applies the loopback rule (local.IsLoopback) to an open mesh's listener.
func (o Options) checkOpenBind() error {
	if !o.Open || o.Listen == "" || local.IsLoopback(o.Listen) {
		return nil
	}
	if !o.OpenInsecureBind {
		return fmt.Errorf("%w: Listen %q reaches beyond loopback while Open is set, so anyone who reaches it "+
			"reads and writes everything with no authentication and no TLS; listen on loopback (127.0.0.1), "+
			"leave Open unset, or set OpenInsecureBind to accept the exposure", ErrOpenBind, o.Listen)
	}
	o.Logger.Warn("open mode listens beyond loopback: no authentication and no TLS, anyone who reaches "+
		"the listener reads and writes everything", "listen", o.Listen, "open_insecure_bind", true)
	return nil
}
