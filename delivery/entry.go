package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cotal-go/cotal/wire"
)

// Reasons a backstop entry was written (docs/durable.md "Deferred hand-over").
const (
	// ReasonDurableChannel: the entry is a durable channel's copy for one of its members.
	ReasonDurableChannel = "durable-channel"
	// ReasonLiveMention: the entry is a live channel's copy for a mentioned, authorized target.
	ReasonLiveMention = "live-mention"
)

// errInvalidEntry: an INBOX value is not a backstop entry this package wrote, for example a
// JetStream acknowledgement an injected reply subject put there.
var errInvalidEntry = errors.New("not a valid backstop entry")

// entry is one value of INBOX_<s> on cotal.<s>.dinbox.<member> (docs/durable.md "Deferred
// hand-over"): the message as its sender published it, the channel from its subject, its CHAT
// stream sequence, why it was written, and the membership generation it was written under (0
// for a mention).
type entry struct {
	Msg        json.RawMessage `json:"msg"`
	Channel    string          `json:"channel"`
	Seq        uint64          `json:"seq"`
	Reason     string          `json:"reason"`
	Generation uint64          `json:"generation"`
}

// entryMsgID is the INBOX Nats-Msg-Id <msgId>:<member>:<generation>: a redelivered CHAT message
// is written once per member and membership.
func entryMsgID(msgID, member string, generation uint64) string {
	return msgID + ":" + member + ":" + strconv.FormatUint(generation, 10)
}

// entryHead is an entry encoded but for its generation and closing brace: what every
// member's entry of one CHAT message shares, encoded once per message.
type entryHead []byte

// newEntryHead encodes msg (the CHAT payload as published; CheckDelivery proved it a valid
// JSON object), channel, seq and reason. encoding/json would compact and copy msg once per
// member.
func newEntryHead(msg []byte, channel string, seq uint64, reason string) (entryHead, error) {
	ch, err := json.Marshal(channel)
	if err != nil {
		return nil, fmt.Errorf("encode entry channel: %w", err)
	}
	b := make([]byte, 0, len(msg)+len(ch)+len(reason)+64)
	b = append(append(append(b, `{"msg":`...), msg...), `,"channel":`...)
	b = append(append(b, ch...), `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(append(append(b, `,"reason":"`...), reason...), `","generation":`...)
	return b, nil
}

// entry returns the member's entry: the head with its generation. reason is one of the
// Reason constants, which need no JSON escaping.
func (h entryHead) entry(generation uint64) []byte {
	b := make([]byte, 0, len(h)+21)
	b = strconv.AppendUint(append(b, h...), generation, 10)
	return append(b, '}')
}

// dlvMsgID is the DLV Nats-Msg-Id <msgId>:<member>. It is not the bare message id: JetStream
// deduplicates per stream, not per subject, so with the bare id the copy for the second member
// of a channel would be acknowledged as a duplicate of the first member's copy and never stored.
func dlvMsgID(msgID, member string) string { return msgID + ":" + member }

// decodeEntry decodes an INBOX value strictly: every field present and valid, the message a
// valid CotalMessage (SPEC §5). It returns the decoded message too, whose id the handoff uses.
func decodeEntry(data []byte) (*entry, *wire.CotalMessage, error) {
	e, ok := parseEntryLayout(data)
	if !ok {
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errInvalidEntry, err)
		}
	}
	switch {
	case len(e.Msg) == 0:
		return nil, nil, fmt.Errorf("%w: msg is missing", errInvalidEntry)
	case wire.ValidatePolicyChannel(e.Channel) != nil || wire.ValidatePublishChannel(e.Channel) != nil:
		return nil, nil, fmt.Errorf("%w: channel %q is not a sanitized concrete channel", errInvalidEntry, e.Channel)
	case e.Seq == 0:
		return nil, nil, fmt.Errorf("%w: seq is missing", errInvalidEntry)
	case e.Reason != ReasonDurableChannel && e.Reason != ReasonLiveMention:
		return nil, nil, fmt.Errorf("%w: reason %q is not %s or %s", errInvalidEntry, e.Reason,
			ReasonDurableChannel, ReasonLiveMention)
	}
	m, err := wire.DecodeMessage(e.Msg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: msg: %w", errInvalidEntry, err)
	}
	return &e, m, nil
}

// parseEntryLayout reads an entry in exactly the layout entryHead writes,
// {"msg":M,"channel":"C","seq":N,"reason":"R","generation":G}, without encoding/json, which
// would scan M twice and copy it. The fields after M are cut from the end; C and R hold no
// quote or backslash (printable ASCII only) and N and G are plain digits, so the tail has one
// reading. decodeEntry then decodes M as a CotalMessage, which proves it one complete JSON
// value, so the whole is the object encoding/json would read. Any other layout reports false
// and is left to encoding/json.
func parseEntryLayout(data []byte) (entry, bool) {
	var e entry
	rest, ok := bytes.CutSuffix(data, []byte("}"))
	if !ok || !bytes.HasPrefix(rest, []byte(`{"msg":`)) {
		return e, false
	}
	rest, gen, ok := cutLastField(rest, `,"generation":`)
	if !ok || !wire.PlainDigits(gen) {
		return e, false
	}
	rest, reason, ok := cutLastField(rest, `,"reason":`)
	if !ok || !plainString(reason) {
		return e, false
	}
	rest, seq, ok := cutLastField(rest, `,"seq":`)
	if !ok || !wire.PlainDigits(seq) {
		return e, false
	}
	rest, channel, ok := cutLastField(rest, `,"channel":`)
	if !ok || !plainString(channel) {
		return e, false
	}
	e.Msg = bytes.Trim(rest[len(`{"msg":`):], " \t\r\n")
	e.Channel, e.Reason = string(channel[1:len(channel)-1]), string(reason[1:len(reason)-1])
	e.Seq, _ = strconv.ParseUint(string(seq), 10, 64)
	e.Generation, _ = strconv.ParseUint(string(gen), 10, 64)
	return e, true
}

// cutLastField splits b at the last occurrence of marker into what precedes it and the value
// that follows it.
func cutLastField(b []byte, marker string) (before, value []byte, ok bool) {
	i := bytes.LastIndex(b, []byte(marker))
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+len(marker):], true
}

// plainString reports whether b is a JSON string of printable ASCII without escapes, so its
// content is its bytes.
func plainString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
