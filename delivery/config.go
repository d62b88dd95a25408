package delivery

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// ACLSource answers the authoritative current read ACL of an instance (SPEC §9 item 6): the
// allowSubscribe of the credential the broker currently enforces. The mesh supplies it from the
// provisioner's registry, or on a cluster node without the key store from the cotal_acl_<s>
// records the provisioner alone writes, strictly decoded, so that a JetStream acknowledgement
// aimed at a key (docs/hostile-agents.md "Reply subjects are the requester's") never counts as
// an ACL. ReadACL must be safe for concurrent use and fast: the trusted reader calls it once
// per backstop entry.
type ACLSource interface {
	// ReadACL returns the instance's current read ACL, and false when the instance is unknown
	// (never minted, or not yet visible), which is not the same as an ACL that reads nothing.
	ReadACL(id string) (wire.ACLRecord, bool)
}

// NameSource knows the name each credential was minted with, which, unlike a presence
// card's display name, its holder cannot choose. An ACLSource that also implements it makes
// @mentions resolve by minted names: a peer that calls itself bob receives no @bob copy.
type NameSource interface {
	// MintedName returns the name id's credential was minted with; false when unknown.
	MintedName(id string) (string, bool)
	// MintedAs returns the ids whose credential was minted with name, compared
	// case-insensitively.
	MintedAs(name string) []string
}

// Defaults of the tunable Config fields.
const (
	// DefaultUnknownMemberRetries bounds how often an entry for an unknown instance is retried.
	DefaultUnknownMemberRetries = 10
	// DefaultUnknownMemberDelay is the redelivery delay of an entry for an unknown instance.
	DefaultUnknownMemberDelay = 5 * time.Second
	// DefaultRestartBackoff is the first delay before a stopped loop is restarted.
	DefaultRestartBackoff = 500 * time.Millisecond
	// DefaultMaxRestartBackoff caps the doubling restart delay.
	DefaultMaxRestartBackoff = 30 * time.Second
	// DefaultControlWorkers is how many control requests are served at once. Each spends most
	// of its time waiting on the broker (a CHAT frontier read, a KV write), so the workers
	// overlap those waits rather than compete for CPU.
	DefaultControlWorkers = 16
	// DefaultControlQueue is how many admitted control requests may wait for a worker.
	DefaultControlQueue = 256
	// DefaultControlPerSender is how many control requests of one sender may be admitted and
	// unanswered at once. An Endpoint has one in flight per channel it is joining.
	DefaultControlPerSender = 8
)

// Config configures a Service. Names, Conn and ACL are required; zero tunables take the
// defaults of DefaultConfig.
type Config struct {
	// Names are the space's stream, bucket, consumer and subject names.
	Names wire.Names
	// Conn is the service's own scoped connection, holding exactly wire.DeliveryPermissions. The
	// Service never closes it; the caller does, after Close.
	Conn *nats.Conn
	// ControlConn is where the control service takes requests and answers them: a connection
	// in the space's agent account holding exactly wire.DeliveryControlPermissions, so that
	// each request arrives with the reply subject its sender named and is answered only
	// inside the sender's own subtree. Nil takes them on Conn, which serves only a mesh of
	// one account (open mode). The Service never closes it.
	ControlConn *nats.Conn
	// OnPresenceFlood, when set, is called with the key of a presence row rewritten faster
	// than any holder needs (presencerate.go), at most once per key every 10 s; nil ignores
	// the rate. It runs on the presence follower: it must not block.
	OnPresenceFlood func(id string)
	// ACL answers each member's current read ACL (SPEC §9 items 5, 6).
	ACL ACLSource
	// Logger receives the service's logs; nil logs through slog.Default().
	Logger *slog.Logger
	// UnknownMemberRetries is how many deliveries a backstop entry addressed to an instance the
	// ACL source does not know gets before the trusted reader terminates it, logged and counted
	// as Stats.ReaderGaveUpUnknown. Default DefaultUnknownMemberRetries.
	UnknownMemberRetries int
	// UnknownMemberDelay is the redelivery delay between those attempts. Default
	// DefaultUnknownMemberDelay.
	UnknownMemberDelay time.Duration
	// RestartBackoff is the first delay before the supervisor restarts a loop that stopped; it
	// doubles on each consecutive failure up to MaxRestartBackoff. Default DefaultRestartBackoff.
	RestartBackoff time.Duration
	// MaxRestartBackoff caps the restart delay. Default DefaultMaxRestartBackoff.
	MaxRestartBackoff time.Duration
	// ControlWorkers is how many control requests (durableJoin, durableLeave,
	// listMemberships) are served concurrently. Default DefaultControlWorkers.
	ControlWorkers int
	// ControlQueue bounds the admitted requests waiting for a worker; one past it is answered
	// at once with ReasonControlBusy. Default DefaultControlQueue.
	ControlQueue int
	// ControlPerSender bounds the admitted, unanswered requests of one sender; one past it is
	// answered at once with ReasonControlSenderBusy, so one agent's flood cannot fill the
	// queue ahead of another's join. At most ControlQueue. Default DefaultControlPerSender.
	ControlPerSender int
}

// DefaultConfig returns a Config with every tunable at its default; the caller sets Names,
// Conn and ACL.
func DefaultConfig() Config {
	return Config{
		UnknownMemberRetries: DefaultUnknownMemberRetries,
		UnknownMemberDelay:   DefaultUnknownMemberDelay,
		RestartBackoff:       DefaultRestartBackoff,
		MaxRestartBackoff:    DefaultMaxRestartBackoff,
		ControlWorkers:       DefaultControlWorkers,
		ControlQueue:         DefaultControlQueue,
		ControlPerSender:     DefaultControlPerSender,
	}
}

// withDefaults returns c with every zero tunable set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.UnknownMemberRetries == 0 {
		c.UnknownMemberRetries = d.UnknownMemberRetries
	}
	if c.UnknownMemberDelay == 0 {
		c.UnknownMemberDelay = d.UnknownMemberDelay
	}
	if c.RestartBackoff == 0 {
		c.RestartBackoff = d.RestartBackoff
	}
	if c.MaxRestartBackoff == 0 {
		c.MaxRestartBackoff = d.MaxRestartBackoff
	}
	if c.ControlWorkers == 0 {
		c.ControlWorkers = d.ControlWorkers
	}
	if c.ControlQueue == 0 {
		c.ControlQueue = d.ControlQueue
	}
	if c.ControlPerSender == 0 {
		c.ControlPerSender = min(d.ControlPerSender, c.ControlQueue)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first field that is missing or out of range, and how to fix it.
func (c Config) Validate() error {
	switch {
	case c.Names.Space() == "":
		return fmt.Errorf("%w: Names is the zero value; build it with wire.NewNames", ErrInvalidConfig)
	case c.Conn == nil:
		return fmt.Errorf("%w: Conn is nil; pass the service's scoped in-process connection", ErrInvalidConfig)
	case c.ACL == nil:
		return fmt.Errorf("%w: ACL is nil; pass the provisioner's read-ACL registry", ErrInvalidConfig)
	case c.UnknownMemberRetries < 1:
		return fmt.Errorf("%w: UnknownMemberRetries is %d; use at least 1", ErrInvalidConfig, c.UnknownMemberRetries)
	case c.UnknownMemberDelay < 0:
		return fmt.Errorf("%w: UnknownMemberDelay is negative", ErrInvalidConfig)
	case c.RestartBackoff < 0 || c.MaxRestartBackoff < c.RestartBackoff:
		return fmt.Errorf("%w: RestartBackoff %v and MaxRestartBackoff %v; use 0 <= RestartBackoff <= MaxRestartBackoff",
			ErrInvalidConfig, c.RestartBackoff, c.MaxRestartBackoff)
	case c.ControlWorkers < 1 || c.ControlQueue < 1:
		return fmt.Errorf("%w: ControlWorkers %d and ControlQueue %d; use at least 1 each",
			ErrInvalidConfig, c.ControlWorkers, c.ControlQueue)
	case c.ControlPerSender < 1 || c.ControlPerSender > c.ControlQueue:
		return fmt.Errorf("%w: ControlPerSender is %d; use 1 to ControlQueue (%d), so one sender cannot fill the queue",
			ErrInvalidConfig, c.ControlPerSender, c.ControlQueue)
	}
	return nil
}
