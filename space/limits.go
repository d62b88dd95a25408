package space

import (
	"errors"
	"fmt"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/wire"
)

// Limits bound what one agent, and one space, may take from the broker: one hostile agent must
// not exhaust the mesh for the others (docs/hostile-agents.md "Bounded shares"). Account limits
// need authentication: an open mesh keeps only the stream limits and the log rate limit.
//
// A zero field takes its DefaultLimits value; the koanf tags are the keys of the limits section
// of cotal.yaml, where byte values are plain integers. Validate checks the floors given here.
type Limits struct {
	// Connections is the most client connections of one space, the mesh's own few included;
	// the next connection is refused. Default 1000, at least 10.
	Connections int `koanf:"connections"`
	// ConnectionsPerIdentity is the most connections one identity (one minted credential's
	// key) may hold at once; the broker closes the ones past it, newest first, just after
	// they connect (broker.Config.ConnectionsPerUser), so one agent cannot take its space's
	// connections from the others. The mesh's own connections are not counted. Default 32,
	// at least 1.
	ConnectionsPerIdentity int `koanf:"connections_per_identity"`
	// Subscriptions is the most subscriptions of one connection of a minted credential; the
	// next subscribe is refused. Default 1000, at least 10.
	Subscriptions int `koanf:"subscriptions"`
	// Payload is the largest message in bytes a minted credential may publish; a larger one
	// is refused and its connection closed. Default and most 1048576 (1 MiB, the broker's own
	// maximum), at least 1024.
	Payload int `koanf:"payload"`
	// SpaceBytes is one space's JetStream storage; its streams' byte limits must fit in it.
	// Default 2147483648 (2 GiB).
	SpaceBytes int64 `koanf:"space_bytes"`
	// DMBytes is the byte limit of DM_<s>; past it a new DM is refused (its sender gets the
	// error) and no stored DM is evicted. The mesh's periodic pass takes back DMs to ids that
	// are no agent of the space and, once the stream is 3/4 full, DMs their recipient has
	// acknowledged (dmreclaim.go). Default 268435456 (256 MiB), at least 1 MiB.
	DMBytes int64 `koanf:"dm_bytes"`
	// TaskBytes is the byte limit of TASK_<s>; past it a new task is refused until pending
	// ones are taken. Default 268435456 (256 MiB), at least 1 MiB.
	TaskBytes int64 `koanf:"task_bytes"`
	// PerSubject is TASK_<s>'s max_msgs_per_subject: the most pending tasks per role and
	// sender (a task past it is refused). DMs have no such bound: it would refuse a sender's
	// DMs to an offline recipient long before the DM stream fills; DMBytes bounds them.
	// Default 100000, at least 1.
	PerSubject int64 `koanf:"per_subject"`
	// WatchConsumers is the max_consumers of the presence and channel-registry buckets, where
	// every agent creates its own watches. Default 2000, at least 10.
	WatchConsumers int `koanf:"watch_consumers"`
	// WatchesPerIdentity is the most consumers one identity may hold on the presence bucket
	// and, separately, on the channel-registry bucket; the on-create check deletes each one
	// past it (docs/hostile-agents.md "Bounded shares"). An Endpoint holds one watch of each.
	// Default 8, at least 2.
	WatchesPerIdentity int `koanf:"watches_per_identity"`
	// ChannelsPerIdentity is the most channels one identity's posts may sit on in CHAT_<s>;
	// past it the pass deletes its posts on the channels over the count (channels other
	// senders post on are kept first) and closes its connections (channelcap.go). Default
	// 1000, at least 10.
	ChannelsPerIdentity int `koanf:"channels_per_identity"`
	// HandoffPerSubject is how many durable copies DLV_<s> keeps per member; zero is
	// wire.BackstopPerSubject. Past it the trusted reader reports new copies as gaps. Not a
	// file key.
	HandoffPerSubject int64 `koanf:"-"`
	// FloodCheck is how often the mesh reads DM_<s>'s and TASK_<s>'s fill between
	// reconciliation passes, taking space back at once past half of one and closing the
	// connections of a sender that flooded it (flood.go); negative leaves it to the pass.
	// Not a file key.
	FloodCheck time.Duration `koanf:"-"`
	// ViolationLogInterval rate-limits each identity's refusal lines in the log
	// (broker.Config.ViolationLogInterval): the first is logged, the rest within the interval
	// are counted in one summary line. Default 10s; negative logs every line, which
	// cotal.yaml writes as 0.
	ViolationLogInterval time.Duration `koanf:"violation_log_interval"`
}

// DefaultWatchesPerIdentity is Limits.WatchesPerIdentity's default: an Endpoint's watch, a
// few more of tools the same credential runs, and the leftovers of reconnects, which live
// wire.WatchInactiveLimit.
const DefaultWatchesPerIdentity = 8

// DefaultLimits returns the default of each Limits field, sized for a laptop mesh of
// hundreds of agents: 2 GiB of JetStream per space (its streams take 1920 MiB), 1000
// connections per space and 32 per identity (so one credential takes at most 3 % of its
// space's), 1000 subscriptions per connection, 1 MiB messages.
func DefaultLimits() Limits {
	return Limits{Connections: 1000, ConnectionsPerIdentity: DefaultConnectionsPerIdentity, Subscriptions: 1000, Payload: 1 << 20, SpaceBytes: 2 << 30,
		DMBytes: wire.DefaultDMBytes, TaskBytes: wire.DefaultTaskBytes, PerSubject: wire.DefaultPerSubject,
		WatchConsumers: wire.DefaultWatchConsumers, WatchesPerIdentity: DefaultWatchesPerIdentity,
		ChannelsPerIdentity: DefaultChannelsPerIdentity,
		FloodCheck:          DefaultFloodCheck, ViolationLogInterval: broker.DefaultViolationLogInterval}
}

// DefaultConnectionsPerIdentity is Limits.ConnectionsPerIdentity's default: an agent holds
// one connection, or a few when it runs several processes under one credential.
const DefaultConnectionsPerIdentity = 32

// orDefault is v, or def when v is zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// withDefaults fills every zero field from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		Connections:            orDefault(l.Connections, d.Connections),
		ConnectionsPerIdentity: orDefault(l.ConnectionsPerIdentity, d.ConnectionsPerIdentity),
		Subscriptions:          orDefault(l.Subscriptions, d.Subscriptions),
		Payload:                orDefault(l.Payload, d.Payload),
		SpaceBytes:             orDefault(l.SpaceBytes, d.SpaceBytes),
		DMBytes:                orDefault(l.DMBytes, d.DMBytes),
		TaskBytes:              orDefault(l.TaskBytes, d.TaskBytes),
		PerSubject:             orDefault(l.PerSubject, d.PerSubject),
		WatchConsumers:         orDefault(l.WatchConsumers, d.WatchConsumers),
		WatchesPerIdentity:     orDefault(l.WatchesPerIdentity, d.WatchesPerIdentity),
		ChannelsPerIdentity:    orDefault(l.ChannelsPerIdentity, d.ChannelsPerIdentity),
		HandoffPerSubject:      l.HandoffPerSubject,
		FloodCheck:             orDefault(l.FloodCheck, d.FloodCheck),
		ViolationLogInterval:   orDefault(l.ViolationLogInterval, d.ViolationLogInterval),
	}
}

// streams are the stream limits of every space under l.
func (l Limits) streams() wire.StreamLimits {
	s := wire.DefaultStreamLimits()
	s.DMBytes, s.TaskBytes, s.PerSubject, s.WatchConsumers = l.DMBytes, l.TaskBytes, l.PerSubject, l.WatchConsumers
	s.HandoffPerSubject = l.HandoffPerSubject
	return s
}

// logInterval is the broker's ViolationLogInterval, where zero means every line.
func (l Limits) logInterval() time.Duration { return max(l.ViolationLogInterval, 0) }

// maxPayload is nats-server's default max_payload, which the broker keeps: a credential's
// payload limit above it would change nothing.
const maxPayload = 1 << 20

// Validate reports every field of l below its floor (see each field), Payload above the
// broker's maximum, and a SpaceBytes too small for the space's streams, joined with
// errors.Join. A zero field is taken as its default first, so the zero Limits is valid. Each
// problem names the field's key in cotal.yaml (limits.connections) and a value that works.
func (l Limits) Validate() error {
	l = l.withDefaults()
	var errs []error
	atLeast := func(key string, v, least int64, example string) {
		if v < least {
			errs = append(errs, fmt.Errorf("limits.%s: %d is below the least useful value %d; use e.g. %s", key, v, least, example))
		}
	}
	atLeast("connections", int64(l.Connections), 10, "1000")
	atLeast("connections_per_identity", int64(l.ConnectionsPerIdentity), 1, "32")
	atLeast("subscriptions", int64(l.Subscriptions), 10, "1000")
	atLeast("payload", int64(l.Payload), 1<<10, "1048576")
	atLeast("dm_bytes", l.DMBytes, 1<<20, "268435456")
	atLeast("task_bytes", l.TaskBytes, 1<<20, "268435456")
	atLeast("per_subject", l.PerSubject, 1, "1000")
	atLeast("watch_consumers", int64(l.WatchConsumers), 10, "2000")
	atLeast("watches_per_identity", int64(l.WatchesPerIdentity), 2, "8")
	atLeast("channels_per_identity", int64(l.ChannelsPerIdentity), 10, "1000")
	if l.Payload > maxPayload {
		errs = append(errs, fmt.Errorf("limits.payload: %d is above the broker's own maximum %d; use at most that", l.Payload, maxPayload))
	}
	if l.HandoffPerSubject < 0 {
		errs = append(errs, fmt.Errorf("HandoffPerSubject is %d; use a positive bound, or 0 for the default", l.HandoffPerSubject))
	}
	if need := l.streams().Total(); l.SpaceBytes < need {
		errs = append(errs, fmt.Errorf("limits.space_bytes: %d does not hold the space's streams: limits.dm_bytes + limits.task_bytes + %d for the others = %d; use at least that",
			l.SpaceBytes, need-l.DMBytes-l.TaskBytes, need))
	}
	return errors.Join(errs...)
}
