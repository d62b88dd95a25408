package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// EndpointRef names the sender of a message or control request (SPEC §5).
type EndpointRef struct {
	// ID is the sender's instance id (SPEC §2); receivers check it against the subject sender.
	ID string `json:"id"`
	// Name is the sender's display name.
	Name string `json:"name"`
	// Role is the sender's service role, if any.
	Role string `json:"role,omitempty"`
}

// CotalMessage is the delivery envelope of SPEC §5: a multicast (Channel), unicast (To) or
// anycast (ToService) message. Exactly one routing field is set; it is advisory, since a
// receiver derives the delivery kind from the subject (SPEC §4). json.Marshal of a message that
// passes Validate yields JSON that validates against cotal.schema.json.
type CotalMessage struct {
	// ID is unique per message and doubles as the JetStream Nats-Msg-Id (SPEC §8).
	ID string `json:"id"`
	// TS is the send time in epoch milliseconds.
	TS int64 `json:"ts"`
	// Space is the space name.
	Space string `json:"space"`
	// From is the sender.
	From EndpointRef `json:"from"`
	// Channel is the multicast target, a concrete channel.
	Channel string `json:"channel,omitempty"`
	// To is the unicast target instance id.
	To string `json:"to,omitempty"`
	// ToService is the anycast target role.
	ToService string `json:"toService,omitempty"`
	// Mentions are lowercased peer names (see NormalizeMentions); a wake hint and, on a live
	// channel, a durable copy to each mentioned target authorized to read it (SPEC §4).
	Mentions []string `json:"mentions,omitempty"`
	// Parts is the content; it always encodes as an array.
	Parts []Part `json:"parts"`
	// ReplyTo is the id of the message replied to.
	ReplyTo string `json:"replyTo,omitempty"`
	// ContextID correlates a thread or conversation.
	ContextID string `json:"contextId,omitempty"`
}

// NewMessageID returns a fresh UUIDv7: unique, and ordered by creation time within a sender.
func NewMessageID() string { return uuid.Must(uuid.NewV7()).String() }

// NewChannelMessage returns a multicast message on channel with a fresh id and the current time.
func NewChannelMessage(space string, from EndpointRef, channel string, parts ...Part) *CotalMessage {
	m := newMessage(space, from, parts)
	m.Channel = channel
	return m
}

// NewDirectMessage returns a unicast message to the instance id to.
func NewDirectMessage(space string, from EndpointRef, to string, parts ...Part) *CotalMessage {
	m := newMessage(space, from, parts)
	m.To = to
	return m
}

// NewServiceMessage returns an anycast message to the service role.
func NewServiceMessage(space string, from EndpointRef, role string, parts ...Part) *CotalMessage {
	m := newMessage(space, from, parts)
	m.ToService = role
	return m
}

func newMessage(space string, from EndpointRef, parts []Part) *CotalMessage {
	return &CotalMessage{ID: NewMessageID(), TS: time.Now().UnixMilli(), Space: space, From: from, Parts: parts}
}

// Validate checks what SPEC §5 and the schema require of a message before it is published or
// surfaced: non-empty id, space and from.id, exactly one routing field, a concrete valid
// channel when multicast, and conformant parts. Errors wrap ErrInvalidMessage.
func (m *CotalMessage) Validate() error { return m.validate(true) }

// validate is Validate; checkJSON false skips the check that raw part values are JSON, for a
// message just decoded, whose raw values the decoder has checked.
func (m *CotalMessage) validate(checkJSON bool) error {
	switch {
	case m.ID == "":
		return fmt.Errorf("%w: id is empty; use NewMessageID", ErrInvalidMessage)
	case m.Space == "":
		return fmt.Errorf("%w: space is empty", ErrInvalidMessage)
	case m.From.ID == "":
		return fmt.Errorf("%w: from.id is empty", ErrInvalidMessage)
	}
	routes := 0
	for _, r := range []string{m.Channel, m.To, m.ToService} {
		if r != "" {
			routes++
		}
	}
	if routes != 1 {
		return fmt.Errorf("%w: %d routing fields set; set exactly one of channel, to and toService (SPEC §5)",
			ErrInvalidMessage, routes)
	}
	if m.Channel != "" {
		if err := ValidatePublishChannel(m.Channel); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
	}
	for i, p := range m.Parts {
		if err := p.validate(checkJSON); err != nil {
			return fmt.Errorf("%w: part %d: %w", ErrInvalidMessage, i, err)
		}
	}
	return nil
}

// MarshalJSON encodes the message with parts always an array and empty optional fields
// omitted. It writes what AppendJSON writes.
func (m CotalMessage) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil) }

// NormalizeMentions trims and lowercases mention names (SPEC §5), drops empty ones and
// duplicates keeping the first occurrence, and returns nil when nothing remains, so the field
// is omitted on the wire.
func NormalizeMentions(names []string) []string {
	var out []string
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// wireRef mirrors EndpointRef with pointers, so decoding can tell an absent or null field from
// an empty one, as the schema does.
type wireRef struct {
	ID   *string `json:"id"`
	Name *string `json:"name"`
	Role string  `json:"role"`
}

// DecodeMessage decodes and validates a delivery payload (SPEC §5). Unknown fields are
// ignored (SPEC §11); keys match exactly, as in the schema, and of a repeated key the last
// value counts. Every error is an *Anomaly: sender-mismatch when from or from.id is missing
// (absent, null or empty), malformed-json for anything else (invalid UTF-8 or JSON, not an
// object, a field of the wrong type, a missing required field, or a message failing Validate).
//
// The message shares no memory with data, which may be reused once DecodeMessage returns; its
// short strings share one allocation, and each text part has its own.
func DecodeMessage(data []byte) (*CotalMessage, error) {
	m := new(CotalMessage)
	if err := decodeEnvelope(data, m); err != nil {
		return nil, err
	}
	if err := m.validate(false); err != nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w", err)
	}
	return m, nil
}

// decodeObject decodes data, which must be UTF-8 JSON whose top level is an object, into v.
// Failures are malformed-json anomalies.
func decodeObject(data []byte, v any) error {
	if !utf8.Valid(data) {
		return anomalyf(ReasonMalformedJSON, "payload is not valid UTF-8")
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return anomalyf(ReasonMalformedJSON, "payload is not a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CheckDelivery is the whole receive check of a delivery (SPEC §3, §4, §5): the subject must
// parse with kind chat, inst or svc, the payload must decode and validate, and from.id must be
// the subject's sender token. Every error is an *Anomaly whose reason the caller counts before
// terminating the message. The parsed subject is returned with a payload error, so the
// rejection can name the sender.
//
// from.id is compared in its sanitized form, because subjects carry sanitized tokens (SPEC §3).
// An authenticated id is an nkey, which sanitizes to itself, so there the comparison is exact.
func CheckDelivery(subject string, payload []byte) (Subject, *CotalMessage, error) {
	sub, err := ParseSubject(subject)
	if err != nil {
		return Subject{}, nil, err
	}
	if sub.Kind == KindCtl {
		return Subject{}, nil, anomalyf(ReasonMalformedSubject,
			"%q is a control subject, not a delivery", subject)
	}
	m, err := DecodeMessage(payload)
	if err != nil {
		return sub, nil, err
	}
	if Sanitize(m.From.ID) != sub.Sender {
		return sub, nil, anomalyf(ReasonSenderMismatch,
			"from.id %q is not the subject sender %q", m.From.ID, sub.Sender)
	}
	return sub, m, nil
}
