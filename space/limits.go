package space

import (
	"fmt"
	"time"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/wire"
)

// Limits bound what one agent, and one space, may take from the broker: one hostile agent must
// not exhaust the mesh for the others (docs/hostile-agents.md "Bounded shares"). Account limits
// need authentication: an open mesh keeps only the stream limits and the log rate limit.
type Limits struct {
	// Connections is the most client connections of one space, the mesh's own included.
	Connections int
	// ConnectionsPerIdentity is the most connections one identity (one minted credential's
	// key) may hold at once; the broker closes the ones past it, newest first, just after
	// they connect (broker.Config.ConnectionsPerUser). The mesh's own connections are not
	// counted.
	ConnectionsPerIdentity int
	// Subscriptions is the most subscriptions of one connection of a minted credential.
	Subscriptions int
	// Payload is the largest message in bytes a minted credential may publish.
	Payload int
	// SpaceBytes is one space's JetStream storage; its streams' byte limits must fit in it.
	SpaceBytes int64
	// DMBytes and TaskBytes are the byte limits of DM_<s> and TASK_<s>; both refuse new
	// messages when full (discard new), and the mesh reclaims DM space (dmreclaim.go).
	DMBytes, TaskBytes int64
	// PerSubject is TASK_<s>'s max_msgs_per_subject (pending tasks per role and sender).
	PerSubject int64
	// WatchConsumers is the max_consumers of the presence and channel-registry buckets.
	WatchConsumers int
	// WatchesPerIdentity is the most consumers one identity may hold on the presence bucket
	// and, separately, on the channel-registry bucket; the on-create check deletes each one
	// past it (docs/hostile-agents.md "Bounded shares"). An Endpoint holds one watch of each.
	WatchesPerIdentity int
	// ChannelsPerIdentity is the most channels one identity's posts may sit on in CHAT_<s>;
	// past it the pass deletes its posts on the channels over the count and closes its
	// connections (channelcap.go).
	ChannelsPerIdentity int
	// HandoffPerSubject is how many durable copies DLV_<s> keeps per member; zero is
	// wire.BackstopPerSubject. Past it the trusted reader reports new copies as gaps.
	HandoffPerSubject int64
	// FloodCheck is how often the mesh reads DM_<s>'s and TASK_<s>'s fill between
	// reconciliation passes, taking space back at once past half of one and closing the
	// connections of a sender that flooded it (flood.go); negative leaves it to the pass.
	FloodCheck time.Duration
	// ViolationLogInterval rate-limits each identity's refusal lines in the log
	// (broker.Config.ViolationLogInterval); negative logs every line.
	ViolationLogInterval time.Duration
}

// DefaultWatchesPerIdentity is Limits.WatchesPerIdentity's default: an Endpoint's watch, a
// few more of tools the same credential runs, and the leftovers of reconnects, which live
// wire.WatchInactiveLimit.
const DefaultWatchesPerIdentity = 8

// DefaultLimits returns the limits config.Default documents, sized for a laptop mesh of
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

// validate checks limits that withDefaults has filled.
func (l Limits) validate() error {
	bounds := []struct {
		name string
		v    int64
	}{{"connections", int64(l.Connections)}, {"connections per identity", int64(l.ConnectionsPerIdentity)}, {"subscriptions", int64(l.Subscriptions)}, {"payload", int64(l.Payload)},
		{"DM bytes", l.DMBytes}, {"task bytes", l.TaskBytes}, {"per-subject limit", l.PerSubject},
		{"watch consumers", int64(l.WatchConsumers)}, {"watches per identity", int64(l.WatchesPerIdentity)}, {"channels per identity", int64(l.ChannelsPerIdentity)}, {"handoff per-subject limit", l.HandoffPerSubject}}
	for _, b := range bounds {
		if b.v < 0 {
			return fmt.Errorf("limit on %s is %d; use a positive bound, or 0 for the default", b.name, b.v)
		}
	}
	if need := l.streams().Total(); l.SpaceBytes < need {
		return fmt.Errorf("space storage %d bytes is below the %d its streams take (DM %d, task %d, the rest fixed); raise the space storage or lower the DM and task bytes",
			l.SpaceBytes, need, l.DMBytes, l.TaskBytes)
	}
	return nil
}
