package wire

import "time"

// Retention and limits of the space's streams (SPEC §8, LAYOUT.md "Streams" and "KV buckets").
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
	// MembershipMaxBytes caps the display-only membership bucket.
	MembershipMaxBytes = 64 << 20
)

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
	Name              string
	Subjects          []string
	Retention         Retention
	Discard           Discard
	MaxMsgs           int64
	MaxBytes          int64
	MaxMsgSize        int32
	MaxConsumers      int
	MaxMsgsPerSubject int64
	// MaxAge is zero for no age limit.
	MaxAge     time.Duration
	Duplicates time.Duration
	// AllowDirect lets Direct Get read the stream (SPEC §8: CHAT only; agents hold no grant).
	AllowDirect bool
	// DenyDelete refuses deleting single messages.
	DenyDelete bool
}

// Streams returns every stream of the space in the order they are provisioned: the message
// streams, then the streams behind the KV buckets.
func (n Names) Streams() []StreamSpec {
	return append(n.MessageStreams(), n.BucketStreams()...)
}

// MessageStreams returns CHAT, DM, TASK, INBOX and DLV (LAYOUT.md "Streams"). None of them
// allows per-message TTLs, message schedules or rollups: an agent can publish into CHAT, DM and
// TASK, and none of those headers is part of the protocol.
func (n Names) MessageStreams() []StreamSpec {
	base := func(name, subject string) StreamSpec {
		return StreamSpec{
			Name:       name,
			Subjects:   []string{n.Prefix() + "." + subject + ".>"},
			Retention:  RetainLimits,
			Discard:    DiscardOld,
			MaxMsgs:    Unlimited,
			MaxBytes:   Unlimited,
			Duplicates: DuplicateWindow,
		}
	}
	chat := base(n.ChatStream(), "chat")
	chat.MaxMsgsPerSubject = ChatPerSubject
	chat.AllowDirect = true // SPEC §8: CHAT allows Direct Get; agents still hold no grant for it.

	dm := base(n.DMStream(), "inst")
	task := base(n.TaskStream(), "svc")
	task.Retention = RetainWorkQueue

	inbox := base(n.InboxStream(), "dinbox")
	inbox.MaxMsgsPerSubject = BackstopPerSubject
	inbox.Duplicates = BackstopDuplicateWindow

	dlv := base(n.DLVStream(), "dlv")
	dlv.MaxMsgsPerSubject = BackstopPerSubject
	dlv.Duplicates = BackstopDuplicateWindow
	return []StreamSpec{chat, dm, task, inbox, dlv}
}

// BucketStreams returns the streams behind the space's KV buckets (LAYOUT.md "KV buckets"):
// presence, channels, members, acl and membership. They are spelled out rather than left to a
// client's bucket defaults, which allow rollups and Direct Get: on the presence bucket a
// `Nats-Rollup: all` from any agent would erase every other instance's presence (LAYOUT.md
// trap "Presence wipe"), and agents read the channel registry through STREAM.MSG.GET only
// (Appendix B), which a KV client uses when Direct Get is off.
func (n Names) BucketStreams() []StreamSpec {
	kv := func(bucket string, ttl time.Duration) StreamSpec {
		return StreamSpec{
			Name:              KVStream(bucket),
			Subjects:          []string{"$KV." + bucket + ".>"},
			Retention:         RetainLimits,
			Discard:           DiscardNew,
			MaxMsgs:           Unlimited,
			MaxBytes:          Unlimited,
			MaxMsgSize:        Unlimited,
			MaxConsumers:      Unlimited,
			MaxMsgsPerSubject: 1,
			MaxAge:            ttl,
			Duplicates:        bucketDuplicates(ttl),
			DenyDelete:        true,
		}
	}
	membership := kv(n.MembershipBucket(), 0)
	membership.MaxBytes = MembershipMaxBytes
	return []StreamSpec{
		kv(n.PresenceBucket(), DefaultLivenessWindow),
		kv(n.ChannelsBucket(), 0),
		kv(n.MembersBucket(), 0),
		kv(n.ACLBucket(), 0),
		membership,
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
