package provisioner

import (
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
)

// Options configures a Store. Start from DefaultOptions.
type Options struct {
	// LockTimeout is how long Open waits for another process to release keys.db before it
	// fails with ErrLocked. Default 1 s: a held lock means `cotal up` is running, and waiting
	// longer only delays the error.
	LockTimeout time.Duration

	// JetStream is written into every space account JWT. An account JWT without JetStream
	// limits has no JetStream at all (docs/accounts.md "Two accounts per space"), so the limits
	// are always explicit. Default: every limit unlimited (-1).
	JetStream JetStreamLimits

	// Limits are the connection, subscription and payload bounds written into every space
	// account JWT and every minted credential. Default: every limit unlimited (-1).
	Limits Limits

	// Temporary says the store lives in a directory its owner deletes when done (a per-test
	// mesh's temporary data directory): its writes are not fsynced, because nothing in it
	// has to survive a crash or power failure, and a crash leaves only a directory nobody
	// opens again. Never set it for a data directory that outlives the process: there an
	// acknowledged mint or revocation must be on disk. Default false.
	Temporary bool

	// CredentialTTL is the lifetime of a minted credential whose request names no expiry.
	// Default 24 h; a mesh sets it from space.Options.Expiry (config key expiry).
	CredentialTTL time.Duration
}

// Limits bound what one space and one credential may hold on the broker: a hostile agent must
// not exhaust the mesh (docs/hostile-agents.md "Bounded shares"). -1 means unlimited.
type Limits struct {
	// Connections is the space account's maximum client connections (account JWT conn),
	// the mesh's own connections included.
	Connections int64
	// LeafNodes is the agent account's maximum leaf node connections (account JWT leaf),
	// counted on each side of a link: the links a hub accepts, or the one a leaf makes. Zero
	// refuses every one, the default for a mesh that runs no leaf link (docs/accounts.md "Leaf
	// links").
	LeafNodes int64
	// Subscriptions is the maximum subscriptions of one connection of a minted credential
	// (user JWT subs); the broker refuses the next one.
	Subscriptions int64
	// Payload is the largest message, in bytes, a minted credential may publish (user JWT
	// payload); the broker refuses a larger one and closes the connection.
	Payload int64
}

// JetStreamLimits are the per-space account JetStream limits. -1 means unlimited; a byte
// limit of 0 disables that storage type.
type JetStreamLimits struct {
	// MemoryStorage is the account's total memory-backed stream bytes.
	MemoryStorage int64
	// DiskStorage is the account's total file-backed stream bytes.
	DiskStorage int64
	// Streams is the maximum number of streams (KV buckets count as streams).
	Streams int64
	// Consumers is the maximum number of consumers of any one stream of the account, unless
	// the stream's own max_consumers is lower.
	Consumers int64
}

// DefaultOptions returns the options `cotal up` uses.
func DefaultOptions() Options {
	return Options{
		LockTimeout:   time.Second,
		JetStream:     JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumers: -1},
		Limits:        Limits{Connections: -1, Subscriptions: -1, Payload: -1},
		CredentialTTL: 24 * time.Hour,
	}
}

// Validate reports the first field out of range, naming it and the fix.
func (o Options) Validate() error {
	switch {
	case o.LockTimeout <= 0:
		return fmt.Errorf("%w: LockTimeout must be positive (default 1s)", ErrInvalidOptions)
	case o.CredentialTTL <= 0:
		return fmt.Errorf("%w: CredentialTTL must be positive (default 24h)", ErrInvalidOptions)
	}
	if err := o.Limits.validate(); err != nil {
		return err
	}
	return o.JetStream.validate()
}

func (l Limits) validate() error {
	fields := []struct {
		name string
		v    int64
	}{{"Connections", l.Connections}, {"Subscriptions", l.Subscriptions}, {"Payload", l.Payload}}
	for _, f := range fields {
		if f.v == 0 || f.v < -1 {
			return fmt.Errorf("%w: Limits.%s is %d; use a positive bound or -1 for unlimited", ErrInvalidOptions, f.name, f.v)
		}
	}
	return nil
}

func (l JetStreamLimits) validate() error {
	fields := []struct {
		name string
		v    int64
	}{{"MemoryStorage", l.MemoryStorage}, {"DiskStorage", l.DiskStorage},
		{"Streams", l.Streams}, {"Consumers", l.Consumers}}
	for _, f := range fields {
		if f.v < -1 {
			return fmt.Errorf("%w: JetStream.%s is %d; use -1 for unlimited", ErrInvalidOptions, f.name, f.v)
		}
	}
	if l.MemoryStorage == 0 && l.DiskStorage == 0 {
		return fmt.Errorf("%w: JetStream.MemoryStorage and DiskStorage are both 0, which disables JetStream for every space; use -1 for unlimited", ErrInvalidOptions)
	}
	if l.Streams == 0 || l.Consumers == 0 {
		return fmt.Errorf("%w: JetStream.Streams and Consumers must be -1 (unlimited) or positive", ErrInvalidOptions)
	}
	return nil
}

func (l JetStreamLimits) jwt() jwt.JetStreamLimits {
	return jwt.JetStreamLimits{
		MemoryStorage: l.MemoryStorage,
		DiskStorage:   l.DiskStorage,
		Streams:       l.Streams,
		Consumer:      l.Consumers,
	}
}
