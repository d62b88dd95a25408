package space

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// Retention and timing fixed by SPEC §8 and LAYOUT.md.
const (
	chatPerSubject     = 1000 // CHAT_<s>: max_msgs_per_subject, per sender+channel subject
	backstopPerSubject = 1000 // INBOX_<s>, DLV_<s>: per member subject
	backstopDupWindow  = 2 * time.Hour
	dupWindow          = 2 * time.Minute
	presenceTTL        = wire.DefaultLivenessWindow
	membershipMaxBytes = 64 << 20
	defaultAckWait     = 60 * time.Second // dm_, svc_, dlv_ (SPEC §8, LAYOUT.md)
)

// streamConfigs returns every message stream of a space (LAYOUT.md "Streams"). None of them
// allows per-message TTLs, message schedules or rollups: an agent can publish into CHAT, DM
// and TASK, and none of those headers is part of the protocol.
func streamConfigs(n wire.Names, storage jetstream.StorageType) []jetstream.StreamConfig {
	base := func(name, subject string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:       name,
			Subjects:   []string{n.Prefix() + "." + subject + ".>"},
			Retention:  jetstream.LimitsPolicy,
			Storage:    storage,
			Replicas:   1,
			Discard:    jetstream.DiscardOld,
			MaxMsgs:    -1,
			MaxBytes:   -1,
			MaxAge:     0,
			Duplicates: dupWindow,
		}
	}
	chat := base(n.ChatStream(), "chat")
	chat.MaxMsgsPerSubject = chatPerSubject
	chat.AllowDirect = true // SPEC §8: CHAT allows Direct Get; agents still hold no grant for it.

	dm := base(n.DMStream(), "inst")
	task := base(n.TaskStream(), "svc")
	task.Retention = jetstream.WorkQueuePolicy

	inbox := base(n.InboxStream(), "dinbox")
	inbox.MaxMsgsPerSubject = backstopPerSubject
	inbox.Duplicates = backstopDupWindow

	dlv := base(n.DLVStream(), "dlv")
	dlv.MaxMsgsPerSubject = backstopPerSubject
	dlv.Duplicates = backstopDupWindow
	return []jetstream.StreamConfig{chat, dm, task, inbox, dlv}
}

// kvConfigs returns the streams behind the space's KV buckets (LAYOUT.md "KV buckets").
// They are built here rather than through CreateKeyValue because the stock bucket allows
// rollups and Direct Get: on the presence bucket a `Nats-Rollup: all` from any agent would
// erase every other instance's presence (LAYOUT.md trap "Presence wipe"), and agents read
// the channel registry through STREAM.MSG.GET only (Appendix B), which the KV client uses
// when Direct Get is off.
func kvConfigs(n wire.Names, storage jetstream.StorageType) []jetstream.StreamConfig {
	kv := func(bucket string, ttl time.Duration) jetstream.StreamConfig {
		dup := dupWindow
		if ttl > 0 && ttl < dup {
			dup = ttl
		}
		return jetstream.StreamConfig{
			Name:              wire.KVStream(bucket),
			Subjects:          []string{"$KV." + bucket + ".>"},
			Retention:         jetstream.LimitsPolicy,
			Storage:           storage,
			Replicas:          1,
			MaxMsgsPerSubject: 1,
			MaxMsgs:           -1,
			MaxBytes:          -1,
			MaxMsgSize:        -1,
			MaxConsumers:      -1,
			MaxAge:            ttl,
			Discard:           jetstream.DiscardNew,
			DenyDelete:        true,
			Duplicates:        dup,
		}
	}
	membership := kv(n.MembershipBucket(), 0)
	membership.MaxBytes = membershipMaxBytes
	return []jetstream.StreamConfig{
		kv(n.PresenceBucket(), presenceTTL),
		kv(n.ChannelsBucket(), 0),
		kv(n.MembersBucket(), 0),
		kv(n.ACLBucket(), 0),
		membership,
	}
}

// dmConsumer, svcConsumer and dlvConsumer are the bind-only durables of SPEC §8 and
// LAYOUT.md "Consumers": created by the mesh, bound (never created) by the agent.
func dmConsumer(n wire.Names, id string, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.DMConsumer(id),
		FilterSubject: n.Prefix() + ".inst." + wire.Sanitize(id) + ".*",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
	}
}

func svcConsumer(n wire.Names, role string, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.SvcConsumer(role),
		FilterSubject: n.Prefix() + ".svc." + wire.Sanitize(role) + ".*",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
	}
}

func dlvConsumer(n wire.Names, id string, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.DLVConsumer(id),
		FilterSubject: n.DLVSubject(id),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
	}
}
