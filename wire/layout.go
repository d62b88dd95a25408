package wire

import "time"

// Retention and limits of the space's streams (SPEC §8, docs/storage.md "Streams" and "KV
// buckets").
const (
	// ChatPerSubject is CHAT_<s>'s max_msgs_per_subject, per sender+channel subject.
	ChatPerSubject = 1000
	// BackstopPerSubject is INBOX_<s>'s and DLV_<s>'s max_msgs_per_subject, per member subject.
	BackstopPerSubject = 1000
	// DuplicateWindow is the duplicate window of the message streams and the KV buckets.
	DuplicateWindow = 2 * time.Minute
	// BackstopDuplicateWindow is INBOX_<s>'s and DLV_<s>'s duplicate window: a fan-out or
	// reader retry within it stores no second copy.
	BackstopDuplicateWindow = 2 * time.Hour
	// BackstopLeaseTTL is how long the backstop lease outlives its holder's last renewal: the
	// age at which the server drops cotal_backstop_<s>'s one record, so another node may take it.
	BackstopLeaseTTL = 5 * time.Second
	// MembershipMaxBytes caps the display-only membership bucket.
	MembershipMaxBytes = 64 << 20
	// LeaseMaxBytes caps the backstop lease bucket, which holds one small record.
	LeaseMaxBytes = 64 << 10
)

// StreamLimits bound what the space's streams hold: one agent must not be able to fill the disk
// or a shared stream (docs/hostile-agents.md "Bounded shares"). Every stream carries a byte
// limit, so the sum, Total, is the least account storage a space needs; DefaultStreamLimits
// documents each value.
type StreamLimits struct {
	// ChatBytes is CHAT_<s>'s max_bytes; the oldest message goes first.
	ChatBytes int64
	// DMBytes is DM_<s>'s max_bytes. A full DM refuses the new DM (discard new) and the
	// sender sees JetStream's error: no stored DM is ever evicted to make room. The mesh
	// reclaims the space (package space): DMs to ids that are no agent of the space, and,
	// when the stream runs full, DMs their recipient has acknowledged.
	DMBytes int64
	// TaskBytes is TASK_<s>'s max_bytes. TASK is a work queue whose acked tasks leave it, so
	// a full TASK refuses new tasks (discard new, per subject too) and the sender sees
	// JetStream's error.
	TaskBytes int64
	// PerSubject is TASK_<s>'s max_msgs_per_subject: the pending tasks per role and sender
	// (refused past it, as TASK discards new).
	PerSubject int64
	// BackstopBytes is the max_bytes of INBOX_<s> and of DLV_<s>, each.
	BackstopBytes int64
	// HandoffPerSubject is DLV_<s>'s max_msgs_per_subject: the copies one member's handoff
	// keeps. The hand-over refuses, and reports as a gap, a copy that would evict one the
	// member has not acknowledged (docs/durable.md "DLV hand-over"). Zero is
	// BackstopPerSubject.
	HandoffPerSubject int64
	// BucketBytes is the max_bytes of each KV bucket but membership (MembershipMaxBytes) and the
	// backstop lease (LeaseMaxBytes).
	BucketBytes int64
	// WatchConsumers is the max_consumers of the presence and channel-registry buckets, the
	// two streams on which agents create their own (watch) consumers.
	WatchConsumers int
}

// Default stream limits, sized for a laptop mesh of hundreds of agents: a few thousand
// messages of a few KiB per agent; 1920 MiB of streams in all, inside a 2 GiB space.
const (
	DefaultChatBytes      = 512 << 20
	DefaultDMBytes        = 256 << 20
	DefaultTaskBytes      = 256 << 20
	DefaultPerSubject     = 100_000
	DefaultBackstopBytes  = 256 << 20
	DefaultBucketBytes    = 64 << 20
	DefaultWatchConsumers = 2000
)

// PresenceMaxMsgSize bounds one presence record. The bucket refuses writes once full
// (discard new), so without it a few agents with huge records would crowd every other
// instance's heartbeat out; with it a default bucket holds 1024 records of the largest size.
const PresenceMaxMsgSize = 64 << 10

// MaxControlLine is the broker's max_control_line (docs/storage.md "Broker settings"), the
// longest protocol line it accepts: a credential with per-channel grants rides the CONNECT
// line and passes nats-server's 4 KiB default at about two channels, after which the server
// drops the connection and the client retries forever. The provisioner refuses to mint a
// credential that would not fit under it.
const MaxControlLine = 64 << 10

// WatchInactiveLimit is the consumer inactive threshold the presence and channel-registry
// buckets impose (stream consumer_limits): a consumer an agent created and left, durable or
// not, is deleted this long after its last reader went, a restart included. It equals the
// threshold nats.go gives ordered consumers (KV watches); a longer request is refused.
const WatchInactiveLimit = 5 * time.Minute

// DefaultStreamLimits returns the documented defaults.
func DefaultStreamLimits() StreamLimits {
	return StreamLimits{ChatBytes: DefaultChatBytes, DMBytes: DefaultDMBytes, TaskBytes: DefaultTaskBytes,
		PerSubject: DefaultPerSubject, BackstopBytes: DefaultBackstopBytes, BucketBytes: DefaultBucketBytes,
		WatchConsumers: DefaultWatchConsumers}
}

// Total is the sum of every stream's max_bytes under l: the account storage a space needs
// for its streams never to hit the account limit before their own.
func (l StreamLimits) Total() int64 {
	return l.ChatBytes + l.DMBytes + l.TaskBytes + 2*l.BackstopBytes + 5*l.BucketBytes + MembershipMaxBytes + LeaseMaxBytes
}

// Retention is a stream's retention policy.
type Retention int

const (
	// RetainLimits keeps messages until a limit removes them.
	RetainLimits Retention = iota
	// RetainWorkQueue removes a message once a consumer acks it (TASK_<s>).
	RetainWorkQueue
)

// Discard says which messages a full stream drops.
type Discard int

const (
	// DiscardOld drops the oldest message to make room.
	DiscardOld Discard = iota
	// DiscardNew refuses the new message.
	DiscardNew
)

// Unlimited is the value of a stream limit that does not apply.
const Unlimited = -1

// StreamSpec is one stream of a space's layout as plain data, independent of any client
// library. Zero limits take the server's default; Unlimited says so explicitly.
type StreamSpec struct {
	Name      string
	Subjects  []string
	Retention Retention
	Discard   Discard
	// DiscardNewPerSubject applies DiscardNew to the per-subject limit too: a subject at
	// MaxMsgsPerSubject refuses the next message instead of dropping its oldest.
	DiscardNewPerSubject bool
	MaxMsgs              int64
	MaxBytes             int64
	MaxMsgSize           int32
	MaxConsumers         int
	MaxMsgsPerSubject    int64
	// MaxAge is zero for no age limit.
	MaxAge     time.Duration
	Duplicates time.Duration
	// AllowDirect lets Direct Get read the stream (SPEC §8: CHAT only; agents hold no grant).
	AllowDirect bool
	// DenyDelete refuses deleting single messages.
	DenyDelete bool
	// ConsumerInactiveLimit, when positive, is the longest inactive threshold a consumer of
	// the stream may ask for and the one it gets when it asks for none.
	ConsumerInactiveLimit time.Duration
}

// Streams returns every stream of the space under DefaultStreamLimits, in the order they are
// provisioned: the message streams, then the streams behind the KV buckets.
func (n Names) Streams() []StreamSpec { return n.StreamsWithin(DefaultStreamLimits()) }

// StreamsWithin is Streams with the limits l.
func (n Names) StreamsWithin(l StreamLimits) []StreamSpec {
	return append(n.MessageStreams(l), n.BucketStreams(l)...)
}

// MessageStreams returns CHAT, DM, TASK, INBOX and DLV (docs/storage.md "Streams") bounded by l.
// None of them allows per-message TTLs, message schedules or rollups: an agent can publish into
// CHAT, DM and TASK, and none of those headers is part of the protocol.
func (n Names) MessageStreams(l StreamLimits) []StreamSpec {
	base := func(name, subject string, maxBytes int64) StreamSpec {
		return StreamSpec{
			Name:       name,
			Subjects:   []string{n.Prefix() + "." + subject + ".>"},
			Retention:  RetainLimits,
			Discard:    DiscardOld,
			MaxMsgs:    Unlimited,
			MaxBytes:   maxBytes,
			Duplicates: DuplicateWindow,
		}
	}
	chat := base(n.ChatStream(), "chat", l.ChatBytes)
	chat.MaxMsgsPerSubject = ChatPerSubject
	chat.AllowDirect = true // SPEC §8: CHAT allows Direct Get; agents still hold no grant for it.

	// DM evicts nothing: with discard old, a flood within DMBytes evicted other agents' DMs
	// still waiting for their recipient, silently (SPEC §4 at-least-once). So a full DM refuses
	// the new DM and its sender is told. It keeps no per-subject bound, which would refuse a
	// sender's DMs to an offline recipient long before the stream fills.
	dm := base(n.DMStream(), "inst", l.DMBytes)
	dm.MaxMsgsPerSubject = Unlimited
	dm.Discard = DiscardNew
	task := base(n.TaskStream(), "svc", l.TaskBytes)
	task.Retention = RetainWorkQueue
	task.MaxMsgsPerSubject = l.PerSubject
	// Acked tasks leave a work queue, so a full TASK holds only unconsumed tasks: refuse the
	// new one (the sender sees the error) rather than silently drop the oldest pending task,
	// past the stream's bytes and past a role and sender's PerSubject alike.
	task.Discard, task.DiscardNewPerSubject = DiscardNew, true

	inbox := base(n.InboxStream(), "dinbox", l.BackstopBytes)
	inbox.MaxMsgsPerSubject = BackstopPerSubject
	inbox.Duplicates = BackstopDuplicateWindow

	dlv := base(n.DLVStream(), "dlv", l.BackstopBytes)
	dlv.MaxMsgsPerSubject = BackstopPerSubject
	if l.HandoffPerSubject > 0 {
		dlv.MaxMsgsPerSubject = l.HandoffPerSubject
	}
	dlv.Duplicates = BackstopDuplicateWindow
	return []StreamSpec{chat, dm, task, inbox, dlv}
}

// BucketStreams returns the streams behind the space's KV buckets (docs/storage.md "KV
// buckets"): presence, channels, members, acl, identities, membership and the backstop
// lease. They are spelled out rather than left to a client's bucket defaults, which allow
// rollups and Direct Get: on the presence bucket a `Nats-Rollup: all` from any agent would
// erase every other instance's presence (docs/hostile-agents.md "Presence cannot be wiped"),
// and agents read the channel registry through STREAM.MSG.GET only (Appendix B), which a KV
// client uses when Direct Get is off.
//
// Each bucket is bounded by l.BucketBytes. The presence and channel-registry buckets, where
// agents create their own watch consumers, are also bounded in consumers (l.WatchConsumers)
// and in how long an abandoned consumer lives (WatchInactiveLimit).
func (n Names) BucketStreams(l StreamLimits) []StreamSpec {
	kv := func(bucket string, ttl time.Duration) StreamSpec {
		return StreamSpec{
			Name:              KVStream(bucket),
			Subjects:          []string{"$KV." + bucket + ".>"},
			Retention:         RetainLimits,
			Discard:           DiscardNew,
			MaxMsgs:           Unlimited,
			MaxBytes:          l.BucketBytes,
			MaxMsgSize:        Unlimited,
			MaxConsumers:      Unlimited,
			MaxMsgsPerSubject: 1,
			MaxAge:            ttl,
			Duplicates:        bucketDuplicates(ttl),
			DenyDelete:        true,
		}
	}
	watched := func(s StreamSpec) StreamSpec {
		s.MaxConsumers, s.ConsumerInactiveLimit = l.WatchConsumers, WatchInactiveLimit
		return s
	}
	presence := watched(kv(n.PresenceBucket(), DefaultLivenessWindow))
	presence.MaxMsgSize = PresenceMaxMsgSize
	membership := kv(n.MembershipFeedBucket(), 0)
	membership.MaxBytes = MembershipMaxBytes
	lease := kv(n.BackstopBucket(), BackstopLeaseTTL)
	lease.MaxBytes = LeaseMaxBytes
	return []StreamSpec{
		presence,
		watched(kv(n.ChannelsBucket(), 0)),
		kv(n.DurableMembersBucket(), 0),
		kv(n.ACLBucket(), 0),
		kv(n.IdentitiesBucket(), 0),
		membership,
		lease,
	}
}

// bucketDuplicates is a bucket's duplicate window: never longer than its TTL, which the server
// requires.
func bucketDuplicates(ttl time.Duration) time.Duration {
	if ttl > 0 && ttl < DuplicateWindow {
		return ttl
	}
	return DuplicateWindow
}
