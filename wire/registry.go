package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ACLRecord is an instance's read ACL in cotal_acl_<s>, keyed by instance id and written by the
// provisioner at mint, re-mint and revoke (docs/storage.md "ACL records"). The trusted reader
// re-authorizes every durable copy against it (SPEC §9 item 5). An empty AllowSubscribe reads
// nothing; a missing key means unknown, which is not the same.
type ACLRecord struct {
	// AllowSubscribe is the read ACL: policy channels, wildcards allowed (ValidatePolicyChannel).
	AllowSubscribe []string `json:"allowSubscribe"`
	// Revision increases with every write of the record.
	Revision uint64 `json:"revision"`
	// UpdatedAt is the epoch-millisecond time of the write.
	UpdatedAt int64 `json:"updatedAt"`
}

// MarshalJSON encodes AllowSubscribe as an array even when empty, because a null would not
// decode: an ACL that reads nothing is [] (docs/storage.md "ACL records").
func (r ACLRecord) MarshalJSON() ([]byte, error) {
	type plain ACLRecord
	if r.AllowSubscribe == nil {
		r.AllowSubscribe = []string{}
	}
	return json.Marshal(plain(r))
}

// Validate checks every AllowSubscribe entry with ValidatePolicyChannel. Errors wrap
// ErrInvalidRecord.
func (r *ACLRecord) Validate() error {
	for _, ch := range r.AllowSubscribe {
		if err := ValidatePolicyChannel(ch); err != nil {
			return fmt.Errorf("%w: allowSubscribe: %w", ErrInvalidRecord, err)
		}
	}
	return nil
}

// DecodeACLRecord decodes an ACL record strictly: allowSubscribe must be a present, non-null
// array of valid policy channels and revision and updatedAt must be present. Anything else,
// notably a JetStream PubAck an agent wrote onto its own record through an injected reply
// subject, is refused and must be treated as no record (docs/hostile-agents.md "Reply subjects
// are the requester's").
func DecodeACLRecord(data []byte) (*ACLRecord, error) {
	var w struct {
		AllowSubscribe *[]string `json:"allowSubscribe"`
		Revision       *uint64   `json:"revision"`
		UpdatedAt      *int64    `json:"updatedAt"`
	}
	if err := decodeRegistry(data, &w, ErrInvalidRecord); err != nil {
		return nil, err
	}
	if w.AllowSubscribe == nil || w.Revision == nil || w.UpdatedAt == nil {
		return nil, fmt.Errorf("%w: an ACL record needs allowSubscribe (an array), revision and updatedAt",
			ErrInvalidRecord)
	}
	r := &ACLRecord{AllowSubscribe: *w.AllowSubscribe, Revision: *w.Revision, UpdatedAt: *w.UpdatedAt}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Covers reports whether the ACL lets its owner read the concrete channel (MatchChannel).
func (r ACLRecord) Covers(channel string) bool {
	for _, p := range r.AllowSubscribe {
		if MatchChannel(p, channel) {
			return true
		}
	}
	return false
}

// MembershipState is the state of a durable membership record (docs/storage.md "Membership
// records").
type MembershipState string

// The membership states a record may carry; cotal writes MemberDurableActive only.
const (
	// MemberLiveConfirmed: the live subscribe was confirmed, durable activation is pending.
	MemberLiveConfirmed MembershipState = "live-confirmed"
	// MemberDurableActive: the member receives durable copies.
	MemberDurableActive MembershipState = "durable-active"
)

// Membership is one member of one durable channel in cotal_members_<s>, under
// MemberKey(Channel, Owner), written only by the privileged delivery service (SPEC §7,
// docs/storage.md "Membership records"). Writes carry a higher Generation and use KV revision
// compare-and-set.
type Membership struct {
	// Channel is the sanitized concrete channel.
	Channel string `json:"channel"`
	// Owner is the member's instance id.
	Owner string          `json:"owner"`
	State MembershipState `json:"state"`
	// JoinCursor is the CHAT last sequence captured at join; only later messages are eligible.
	JoinCursor uint64 `json:"joinCursor"`
	// Activated reports whether the activation catch-up of (JoinCursor, fence] completed.
	Activated bool `json:"activated,omitempty"`
	// LeaveCursor is the CHAT last sequence captured at leave; nil while joined.
	LeaveCursor *uint64 `json:"leaveCursor,omitempty"`
	// Generation increases with every write; it tags durable copies and guards leave.
	Generation uint64 `json:"generation"`
	// WriterIdentity is the identity of the privileged writer.
	WriterIdentity string `json:"writerIdentity"`
	// UpdatedAt is the epoch-millisecond time of the write.
	UpdatedAt int64 `json:"updatedAt"`
}

// Validate checks the record: a sanitized concrete channel, a sanitized owner, a known state,
// a writer identity, and a leave cursor not before the join cursor. Errors wrap ErrInvalidRecord.
func (m *Membership) Validate() error {
	if err := validateKeyChannel(m.Channel); err != nil {
		return fmt.Errorf("%w: membership: %w", ErrInvalidRecord, err)
	}
	switch {
	case !IsToken(m.Owner):
		return fmt.Errorf("%w: membership owner %q is not a sanitized instance id", ErrInvalidRecord, m.Owner)
	case m.State != MemberLiveConfirmed && m.State != MemberDurableActive:
		return fmt.Errorf("%w: membership state %q is not live-confirmed or durable-active", ErrInvalidRecord, m.State)
	case m.WriterIdentity == "":
		return fmt.Errorf("%w: membership has no writerIdentity", ErrInvalidRecord)
	case m.LeaveCursor != nil && *m.LeaveCursor < m.JoinCursor:
		return fmt.Errorf("%w: membership leaveCursor %d is before joinCursor %d",
			ErrInvalidRecord, *m.LeaveCursor, m.JoinCursor)
	}
	return nil
}

// DecodeMembership decodes the record stored under key strictly: every field docs/storage.md
// "Membership records" does not mark optional must be present, the record must pass Validate,
// and key must be MemberKey(channel, owner). Anything else must be treated as no record.
func DecodeMembership(key string, data []byte) (*Membership, error) {
	var w struct {
		Membership
		Channel        *string          `json:"channel"`
		Owner          *string          `json:"owner"`
		State          *MembershipState `json:"state"`
		JoinCursor     *uint64          `json:"joinCursor"`
		Generation     *uint64          `json:"generation"`
		WriterIdentity *string          `json:"writerIdentity"`
		UpdatedAt      *int64           `json:"updatedAt"`
	}
	if err := decodeRegistry(data, &w, ErrInvalidRecord); err != nil {
		return nil, err
	}
	if w.Channel == nil || w.Owner == nil || w.State == nil || w.JoinCursor == nil ||
		w.Generation == nil || w.WriterIdentity == nil || w.UpdatedAt == nil {
		return nil, fmt.Errorf("%w: a membership record needs channel, owner, state, joinCursor, "+
			"generation, writerIdentity and updatedAt", ErrInvalidRecord)
	}
	m := w.Membership
	m.Channel, m.Owner, m.State, m.JoinCursor = *w.Channel, *w.Owner, *w.State, *w.JoinCursor
	m.Generation, m.WriterIdentity, m.UpdatedAt = *w.Generation, *w.WriterIdentity, *w.UpdatedAt
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if want := MemberKey(m.Channel, m.Owner); key != want {
		return nil, fmt.Errorf("%w: membership for %q stored under key %q", ErrInvalidRecord, want, key)
	}
	return &m, nil
}

// Eligible reports whether the CHAT message with stream sequence seq falls in the membership
// interval: joinCursor < seq, and seq <= leaveCursor once left (SPEC §7).
func (m Membership) Eligible(seq uint64) bool {
	return m.JoinCursor < seq && (m.LeaveCursor == nil || seq <= *m.LeaveCursor)
}

// MemberKey is the membership key <channel>/<id> in cotal_members_<s> (docs/storage.md), both
// parts sanitized so the key is a valid KV key.
func MemberKey(channel, id string) string { return SanitizeChannel(channel) + "/" + Sanitize(id) }

// ParseMemberKey splits a membership key into its channel and instance id, for KV delete
// events that carry only the key.
func ParseMemberKey(key string) (channel, id string, err error) {
	channel, id, ok := strings.Cut(key, "/")
	if !ok || !IsToken(id) {
		return "", "", fmt.Errorf("%w: membership key %q is not <channel>/<id>", ErrInvalidRecord, key)
	}
	if err := validateKeyChannel(channel); err != nil {
		return "", "", fmt.Errorf("%w: membership key %q: %w", ErrInvalidRecord, key, err)
	}
	return channel, id, nil
}

// validateKeyChannel accepts a sanitized concrete channel, the form registry keys carry.
func validateKeyChannel(ch string) error {
	if err := ValidatePublishChannel(ch); err != nil {
		return err
	}
	return ValidatePolicyChannel(ch)
}
