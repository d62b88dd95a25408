package wire

import "time"

// Consumer settings fixed by SPEC §8 and docs/storage.md "Consumers".
const (
	// DefaultAckWait is the ack wait of dm_, svc_ and dlv_ and of the delivery service's
	// fanout and reader.
	DefaultAckWait = 60 * time.Second
	// HistoryInactiveThreshold is how long an abandoned chathist_<id> survives.
	HistoryInactiveThreshold = 30 * time.Second
	// ReaderMaxAckPending is the reader consumer's max ack pending.
	ReaderMaxAckPending = 1000
	// MaxTransientInactiveThreshold is the longest inactive threshold a transient consumer
	// (chathist_<id>, dmhist_<id>, a reader's own CHAT read, a KV watch) may carry and still
	// count as transient: the 5 min nats.go's ordered consumers choose on their own, well above
	// chathist's 30 s. A longer one is a durable in disguise (docs/hostile-agents.md "Nothing
	// outlives its grants").
	MaxTransientInactiveThreshold = 5 * time.Minute
)

// AckPolicy is how a consumer's messages are acknowledged.
type AckPolicy int

const (
	// AckExplicit requires an ack per message.
	AckExplicit AckPolicy = iota
	// AckNone acks nothing (chathist_<id>).
	AckNone
)

// DeliverPolicy is where a new consumer starts in its stream.
type DeliverPolicy int

const (
	// DeliverAll starts at the first retained message.
	DeliverAll DeliverPolicy = iota
	// DeliverNew starts after the last stored message.
	DeliverNew
	// DeliverByStartTime starts at the first message stored at or after StartTime.
	DeliverByStartTime
)

// ConsumerSpec is one durable consumer of the layout as plain data, independent of any client
// library. Zero values take the server's default.
type ConsumerSpec struct {
	// Stream is the stream the consumer reads.
	Stream string
	// Name is the durable name, which the grants pin (SPEC §9).
	Name string
	// Filter is the one filter subject.
	Filter  string
	Ack     AckPolicy
	AckWait time.Duration
	Deliver DeliverPolicy
	// StartTime is where a DeliverByStartTime consumer starts.
	StartTime time.Time
	// MemoryStorage keeps the consumer's state in memory only.
	MemoryStorage bool
	// InactiveThreshold deletes the consumer after this long without a reader.
	InactiveThreshold time.Duration
	MaxAckPending     int
}

// DMConsumerSpec is dm_<id> on DM_<s>: created by the mesh, bound (never created) by the agent
// (SPEC §8, §9 item 3).
func (n Names) DMConsumerSpec(id string, ackWait time.Duration) ConsumerSpec {
	return ConsumerSpec{Stream: n.DMStream(), Name: n.DMConsumer(id),
		Filter: n.Prefix() + ".inst." + Sanitize(id) + ".*",
		Ack:    AckExplicit, AckWait: ackWait, Deliver: DeliverAll}
}

// SvcConsumerSpec is svc_<role> on TASK_<s>, shared by every holder of the role: created by
// the mesh, bound by the agent (SPEC §8).
func (n Names) SvcConsumerSpec(role string, ackWait time.Duration) ConsumerSpec {
	return ConsumerSpec{Stream: n.TaskStream(), Name: n.SvcConsumer(role),
		Filter: n.Prefix() + ".svc." + Sanitize(role) + ".*",
		Ack:    AckExplicit, AckWait: ackWait, Deliver: DeliverAll}
}

// DLVConsumerSpec is dlv_<id> on DLV_<s>: created by the mesh, bound by the agent
// (docs/storage.md "Consumers").
func (n Names) DLVConsumerSpec(id string, ackWait time.Duration) ConsumerSpec {
	return ConsumerSpec{Stream: n.DLVStream(), Name: n.DLVConsumer(id), Filter: n.DLVSubject(id),
		Ack: AckExplicit, AckWait: ackWait, Deliver: DeliverAll}
}

// InstanceConsumerSpecs are the bind-only consumers of one instance: dm_<id>, dlv_<id> and,
// with a role, svc_<role> (SPEC §8, §9 item 3). The mesh creates them; agents may bind but
// never create them.
func (n Names) InstanceConsumerSpecs(id, role string, ackWait time.Duration) []ConsumerSpec {
	specs := []ConsumerSpec{n.DMConsumerSpec(id, ackWait), n.DLVConsumerSpec(id, ackWait)}
	if role != "" {
		specs = append(specs, n.SvcConsumerSpec(role, ackWait))
	}
	return specs
}

// HistoryConsumerSpec is the pinned chathist_<id> on CHAT_<s> with exactly one filter,
// ChatFilter(channel): the only CHAT consumer an agent may create, through a create subject
// its grants pin to that name and filter (SPEC §8, §9 item 4). It acks nothing, lives in
// memory and dies 30 s after its reader goes; a zero since reads from the first retained
// message, otherwise from since.
func (n Names) HistoryConsumerSpec(id, channel string, since time.Time) ConsumerSpec {
	c := ConsumerSpec{Stream: n.ChatStream(), Name: n.HistoryConsumer(id), Filter: n.ChatFilter(channel),
		Ack: AckNone, Deliver: DeliverAll, MemoryStorage: true, InactiveThreshold: HistoryInactiveThreshold}
	if !since.IsZero() {
		c.Deliver, c.StartTime = DeliverByStartTime, since
	}
	return c
}

// DMHistoryConsumer is dmhist_<id>, the admin's own DM history consumer.
func (n Names) DMHistoryConsumer(id string) string { return "dmhist_" + Sanitize(id) }

// DMHistoryConsumerSpec is the admin's pinned dmhist_<id> on DM_<s>, the DM history of SPEC
// Appendix B's god view read through a consumer of the admin's own: its grants pin the name and
// the subtree cotal.<s>.inst.>, so the admin reads every DM without any verb on another
// identity's dm_ (docs/hostile-agents.md "Nothing outlives its grants"). Like chathist_<id> it
// acks nothing and is transient.
func (n Names) DMHistoryConsumerSpec(id string) ConsumerSpec {
	return ConsumerSpec{Stream: n.DMStream(), Name: n.DMHistoryConsumer(id), Filter: n.Prefix() + ".inst.>",
		Ack: AckNone, Deliver: DeliverAll, MemoryStorage: true, InactiveThreshold: HistoryInactiveThreshold}
}

// FanoutConsumerSpec is the delivery service's fanout on CHAT_<s>, reading every chat message
// stored after it was created (docs/durable.md "Fan-out").
func (n Names) FanoutConsumerSpec() ConsumerSpec {
	return ConsumerSpec{Stream: n.ChatStream(), Name: FanoutConsumer, Filter: n.Prefix() + ".chat.>",
		Ack: AckExplicit, AckWait: DefaultAckWait, Deliver: DeliverNew}
}

// ReaderConsumerSpec is the delivery service's trusted reader on INBOX_<s> (docs/durable.md
// "Deferred hand-over").
func (n Names) ReaderConsumerSpec() ConsumerSpec {
	return ConsumerSpec{Stream: n.InboxStream(), Name: ReaderConsumer, Filter: n.Prefix() + ".dinbox.>",
		Ack: AckExplicit, AckWait: DefaultAckWait, Deliver: DeliverAll, MaxAckPending: ReaderMaxAckPending}
}
