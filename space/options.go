package space

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/config"
	"github.com/cotal-go/cotal/wire"
)

// Options configures a mesh started by Start. The zero value is a valid per-test mesh: a
// temporary directory, one space "main", no TCP listener, authentication on.
type Options struct {
	// Dir is the data directory (keys.db, the JetStream store). Empty means a
	// temporary directory that Close removes.
	Dir string
	// Spaces are the spaces to provision; default ["main"]. Each is one NATS account (SPEC §9).
	Spaces []string
	// Listen is the TCP client listener "host:port"; empty means in-process connections only.
	Listen string
	// TLSCert and TLSKey enable TLS on the listener; join links then use cotals:// (SPEC §10).
	TLSCert, TLSKey string
	// HTTP is the optional monitoring listener "host:port".
	HTTP string
	// Sync is the JetStream durability mode; default broker.SyncAlways.
	Sync broker.SyncMode
	// SyncInterval is the flush period under broker.SyncInterval.
	SyncInterval time.Duration
	// Memory keeps every stream in memory: nothing survives Close. Fastest for tests.
	Memory bool
	// Open runs without authentication (dev mode; SPEC §9 claims do not hold).
	Open bool
	// Logger receives the mesh's and nats-server's logs; nil discards them.
	Logger *slog.Logger
	// AckWait is how long the bind-only dm_, svc_ and dlv_ consumers wait for an ack before
	// redelivering (SPEC §8: 60 s, the default). A crashed receiver's unacked message reaches
	// the next binding after this long; tests shorten it.
	AckWait time.Duration
}

// FromConfig maps a loaded config.Config to Options for `cotal up`.
func FromConfig(c config.Config, logger *slog.Logger) Options {
	return Options{
		Dir:          c.Dir,
		Spaces:       c.Spaces,
		Listen:       c.Listen,
		TLSCert:      c.TLS.Cert,
		TLSKey:       c.TLS.Key,
		HTTP:         c.HTTP,
		Sync:         broker.SyncMode(c.Sync),
		SyncInterval: c.SyncInterval,
		Open:         c.Open,
		Logger:       logger,
	}
}

// ErrNoSuchSpace is returned for a space the mesh was not started with.
var ErrNoSuchSpace = errors.New("no such space")

func (o Options) withDefaults() Options {
	if len(o.Spaces) == 0 {
		o.Spaces = []string{"main"}
	}
	if o.AckWait <= 0 {
		o.AckWait = defaultAckWait
	}
	if o.Sync == "" {
		o.Sync = broker.SyncAlways
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
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
	return nil
}
