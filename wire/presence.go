package wire

import (
	"fmt"
	"time"
)

// ProtocolVersion is the wire version cotal advertises in AgentCard.protocolVersion (SPEC §6,
// §11). SPEC's v0.3 header keeps advertising "0.2" only until the core-subscription live
// delivery ships; cotal ships exactly that behaviour, so it advertises "0.3".
const ProtocolVersion = "0.3"

// Presence timing (SPEC §6): an instance refreshes its presence every DefaultHeartbeat, and a
// peer whose last heartbeat is older than DefaultLivenessWindow is offline. The presence
// bucket's TTL equals the liveness window (SPEC §8).
const (
	DefaultHeartbeat      = 2000 * time.Millisecond
	DefaultLivenessWindow = 6000 * time.Millisecond
)

// CardKind is an AgentCard's participation class (SPEC §6).
type CardKind string

// The participation classes of SPEC §6.
const (
	CardKindAgent    CardKind = "agent"
	CardKindEndpoint CardKind = "endpoint"
)

// PresenceStatus is an instance's announced state (SPEC §6).
type PresenceStatus string

// The presence statuses of SPEC §6. A live instance never heartbeats StatusOffline.
const (
	StatusIdle    PresenceStatus = "idle"
	StatusWaiting PresenceStatus = "waiting"
	StatusWorking PresenceStatus = "working"
	StatusOffline PresenceStatus = "offline"
)

// AttentionMode is an instance's global attention mode (SPEC §6); advisory, never access control.
type AttentionMode string

// The attention modes of SPEC §6; absent means AttentionOpen.
const (
	AttentionOpen  AttentionMode = "open"
	AttentionDND   AttentionMode = "dnd"
	AttentionFocus AttentionMode = "focus"
)

// ChannelMode is a per-channel attention override (SPEC §6); advisory, never access control.
type ChannelMode string

// The channel modes of SPEC §6.
const (
	ChannelModeQuiet ChannelMode = "quiet"
	ChannelModeMuted ChannelMode = "muted"
)

// AgentSkill is one skill an AgentCard advertises (SPEC §6).
type AgentSkill struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Description is optional.
	Description string `json:"description,omitempty"`
}

// AgentCard is an instance's identity record in presence (SPEC §6). ID is the instance id and
// the presence key.
type AgentCard struct {
	// ID is the instance id (SPEC §2).
	ID string `json:"id"`
	// Name is the display name; mentions resolve it lowercased (SPEC §4).
	Name string `json:"name"`
	// Kind is agent or endpoint.
	Kind CardKind `json:"kind"`
	// Role is the service role the instance serves by anycast, if any.
	Role string `json:"role,omitempty"`
	// Description is a one-line summary.
	Description string `json:"description,omitempty"`
	// Tags are capability tags; non-core tags are namespaced reverse-DNS (SPEC §11).
	Tags   []string     `json:"tags,omitempty"`
	Skills []AgentSkill `json:"skills,omitempty"`
	// Meta is free-form display metadata; reserved keys include connector and model, and
	// non-core keys are namespaced reverse-DNS (SPEC §6, §11).
	Meta map[string]any `json:"meta,omitempty"`
	// ProtocolVersion is the wire version spoken; set it to ProtocolVersion.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
}

// Presence is one instance's row in the presence directory, keyed by its card id (SPEC §6).
type Presence struct {
	Card   AgentCard      `json:"card"`
	Status PresenceStatus `json:"status"`
	// Activity is free-form text about what the instance is doing.
	Activity string `json:"activity,omitempty"`
	// Attention is the global attention mode; empty means open.
	Attention AttentionMode `json:"attention,omitempty"`
	// ChannelModes maps concrete channel names to attention overrides.
	ChannelModes map[string]ChannelMode `json:"channelModes,omitempty"`
	// TS is the epoch-millisecond time of the last heartbeat.
	TS int64 `json:"ts"`
}

// Validate checks the fields SPEC §6 requires and every enumerated value. Errors wrap
// ErrInvalidPresence.
func (p *Presence) Validate() error {
	switch {
	case p.Card.ID == "":
		return fmt.Errorf("%w: card.id is empty", ErrInvalidPresence)
	case p.Card.Name == "":
		return fmt.Errorf("%w: card.name is empty", ErrInvalidPresence)
	case p.Card.Kind != CardKindAgent && p.Card.Kind != CardKindEndpoint:
		return fmt.Errorf("%w: card.kind %q is not agent or endpoint", ErrInvalidPresence, p.Card.Kind)
	}
	switch p.Status {
	case StatusIdle, StatusWaiting, StatusWorking, StatusOffline:
	default:
		return fmt.Errorf("%w: status %q is not idle, waiting, working or offline", ErrInvalidPresence, p.Status)
	}
	switch p.Attention {
	case "", AttentionOpen, AttentionDND, AttentionFocus:
	default:
		return fmt.Errorf("%w: attention %q is not open, dnd or focus", ErrInvalidPresence, p.Attention)
	}
	for ch, m := range p.ChannelModes {
		if m != ChannelModeQuiet && m != ChannelModeMuted {
			return fmt.Errorf("%w: channel mode %q for %q is not quiet or muted", ErrInvalidPresence, m, ch)
		}
	}
	return nil
}

// DecodePresence decodes the presence row stored under key and refuses anything that is not
// that instance's valid Presence: invalid JSON, a missing card, status or ts, an unknown enum
// value, or card.id other than key (SPEC §6: the key equals card.id). A reader drops and counts
// what this refuses; in particular a JetStream PubAck that an injected reply subject wrote onto
// a presence key is refused (docs/hostile-agents.md "Reply subjects are the requester's").
func DecodePresence(key string, data []byte) (*Presence, error) {
	var w struct {
		Card *AgentCard `json:"card"`
		Presence
		TS *int64 `json:"ts"`
	}
	if err := decodeObject(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPresence, err)
	}
	if w.Card == nil || w.TS == nil {
		return nil, fmt.Errorf("%w: card or ts is missing", ErrInvalidPresence)
	}
	p := w.Presence
	p.Card, p.TS = *w.Card, *w.TS
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Card.ID != key {
		return nil, fmt.Errorf("%w: card.id %q written under key %q", ErrInvalidPresence, p.Card.ID, key)
	}
	return &p, nil
}

// Stale reports whether the last heartbeat is older than window at now, which makes the peer
// offline whatever its status says (SPEC §6).
func (p Presence) Stale(now time.Time, window time.Duration) bool {
	// Subtracting from now rather than from TS cannot overflow for any TS a peer writes.
	return p.TS < now.UnixMilli()-window.Milliseconds()
}

// EffectiveStatus is Status, or StatusOffline when the row is stale (SPEC §6).
func (p Presence) EffectiveStatus(now time.Time, window time.Duration) PresenceStatus {
	if p.Stale(now, window) {
		return StatusOffline
	}
	return p.Status
}
