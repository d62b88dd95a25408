package wire

import "strings"

// Sanitize maps every character outside [A-Za-z0-9_-] to '_' (SPEC §3). The mapping is lossy
// and is never reversed: a sanitized token is a routing key, not a display name.
func Sanitize(token string) string {
	if tokenBytes(token) {
		return token // the common case, which then costs no allocation
	}
	var b strings.Builder
	b.Grow(len(token))
	for i := 0; i < len(token); i++ {
		if c := token[i]; tokenByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// tokenBytes reports whether Sanitize keeps every byte of s.
func tokenBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return false
		}
	}
	return true
}

// tokenByte reports whether Sanitize keeps c.
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Names builds every stream, bucket, consumer and subject name of one space, exactly as SPEC §8
// and docs/storage.md fix them. The zero value is not usable; call NewNames.
type Names struct {
	space string // sanitized
}

// NewNames returns the names of the space called space; the name is sanitized (SPEC §3).
func NewNames(space string) Names { return Names{space: Sanitize(space)} }

// Space is the sanitized space token used in every name.
func (n Names) Space() string { return n.space }

// Prefix is the root of every wire subject of the space: cotal.<s> (SPEC §3).
func (n Names) Prefix() string { return "cotal." + n.space }

// ChatStream is CHAT_<s>, capturing cotal.<s>.chat.> (SPEC §8).
func (n Names) ChatStream() string { return "CHAT_" + n.space }

// DMStream is DM_<s>, capturing cotal.<s>.inst.> (SPEC §8).
func (n Names) DMStream() string { return "DM_" + n.space }

// TaskStream is TASK_<s>, the work-queue stream capturing cotal.<s>.svc.> (SPEC §8).
func (n Names) TaskStream() string { return "TASK_" + n.space }

// InboxStream is INBOX_<s>, the durable backstop's mixed store (docs/durable.md "Deferred
// hand-over").
func (n Names) InboxStream() string { return "INBOX_" + n.space }

// DLVStream is DLV_<s>, the per-member handoff after re-authorization (docs/durable.md "DLV
// hand-over").
func (n Names) DLVStream() string { return "DLV_" + n.space }

// PresenceBucket is the KV bucket cotal_presence_<s> (SPEC §6, §8).
func (n Names) PresenceBucket() string { return "cotal_presence_" + n.space }

// ChannelsBucket is the channel registry bucket cotal_channels_<s> (SPEC §7).
func (n Names) ChannelsBucket() string { return "cotal_channels_" + n.space }

// DurableMembersBucket is the durable membership registry cotal_members_<s> (docs/storage.md
// "Membership records").
func (n Names) DurableMembersBucket() string { return "cotal_members_" + n.space }

// ACLBucket is cotal_acl_<s>, the read-ACL records the hand-over checks (docs/storage.md "ACL
// records").
func (n Names) ACLBucket() string { return "cotal_acl_" + n.space }

// BackstopBucket is cotal_backstop_<s>, where the nodes of a cluster hold the lease on the
// space's durable backstop (BackstopLeaseKey): whoever holds it runs the fan-out and the
// trusted reader.
func (n Names) BackstopBucket() string { return "cotal_backstop_" + n.space }

// BackstopLeaseKey is the one key of BackstopBucket: the name of the node holding the lease.
const BackstopLeaseKey = "lease"

// MembershipFeedBucket is the display-only membership feed cotal_membership_<s> (SPEC §8).
func (n Names) MembershipFeedBucket() string { return "cotal_membership_" + n.space }

// KVStream is the stream behind a KV bucket: KV_<bucket>.
func KVStream(bucket string) string { return "KV_" + bucket }

// DMConsumer is dm_<id>, the bind-only DM durable of an instance (SPEC §8).
func (n Names) DMConsumer(id string) string { return "dm_" + Sanitize(id) }

// SvcConsumer is svc_<role>, the bind-only anycast durable shared by a role (SPEC §8).
func (n Names) SvcConsumer(role string) string { return "svc_" + Sanitize(role) }

// DLVConsumer is dlv_<id>, the bind-only durable-copy consumer of an instance (docs/storage.md
// "Consumers").
func (n Names) DLVConsumer(id string) string { return "dlv_" + Sanitize(id) }

// HistoryConsumer is chathist_<id>, the transient pinned history consumer (SPEC §8).
func (n Names) HistoryConsumer(id string) string { return "chathist_" + Sanitize(id) }

// FanoutConsumer and ReaderConsumer are the delivery package's own consumers (docs/storage.md
// "Consumers").
const (
	FanoutConsumer = "fanout"
	ReaderConsumer = "reader"
)

// DeliveryService is the control service name of the durable backstop (docs/storage.md "Control
// service").
const DeliveryService = "delivery"

// ManagerService is the control service name of the agent manager (docs/agents.md "The
// manager service"): spawn, despawn, persona and list of supervised agents.
const ManagerService = "manager"

// DefaultsKey is the reserved channel-registry key holding ChannelDefaults (SPEC §7).
const DefaultsKey = "=defaults"

// InboxPrefix is _INBOX_<id>, the reply-inbox prefix an instance sets before any request,
// pull or KV watch (SPEC §9 item 1, §10).
func InboxPrefix(id string) string { return "_INBOX_" + Sanitize(id) }

// BackstopInboxSubject is cotal.<s>.dinbox.<member>, where fan-out writes backstop entries.
func (n Names) BackstopInboxSubject(member string) string {
	return n.Prefix() + ".dinbox." + Sanitize(member)
}

// DLVSubject is cotal.<s>.dlv.<member>, where the trusted reader hands over a copy.
func (n Names) DLVSubject(member string) string { return n.Prefix() + ".dlv." + Sanitize(member) }

// PresenceKVSubject is $KV.cotal_presence_<s>.<id>, the one presence key an agent may write.
func (n Names) PresenceKVSubject(id string) string {
	return "$KV." + n.PresenceBucket() + "." + Sanitize(id)
}
