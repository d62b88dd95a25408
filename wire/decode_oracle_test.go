package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file keeps the encoding/json-based envelope codec that the single-pass decoder and the
// appending encoder replaced, as the oracle of the differential fuzzers: on every input where
// the old reading was not a bug against the schema, the two must agree.

// legacyExtensionKind is the schema's ExtensionPartKind pattern, which isExtensionKind
// hand-compiles.
var legacyExtensionKind = regexp.MustCompile(`^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)

type legacyWireMessage struct {
	ID        *string         `json:"id"`
	TS        json.RawMessage `json:"ts"`
	Space     *string         `json:"space"`
	From      *wireRef        `json:"from"`
	Channel   *string         `json:"channel"`
	To        *string         `json:"to"`
	ToService *string         `json:"toService"`
	Mentions  []string        `json:"mentions"`
	Parts     *[]legacyPart   `json:"parts"`
	ReplyTo   string          `json:"replyTo"`
	ContextID string          `json:"contextId"`
}

// legacyDecodeMessage is the old DecodeMessage.
func legacyDecodeMessage(data []byte) (*CotalMessage, error) {
	var w legacyWireMessage
	if err := legacyDecodeObject(data, &w); err != nil {
		return nil, err
	}
	if w.From == nil || w.From.ID == nil || *w.From.ID == "" {
		return nil, anomalyf(ReasonSenderMismatch, "message has no from.id")
	}
	if err := w.checkPresent(); err != nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w", err)
	}
	ts, err := legacyEpochMillis(w.TS)
	if err != nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w: ts: %w", ErrInvalidMessage, err)
	}
	parts := make([]Part, len(*w.Parts))
	for i, p := range *w.Parts {
		parts[i] = Part(p)
	}
	m := &CotalMessage{
		ID: *w.ID, TS: ts, Space: *w.Space,
		From:    EndpointRef{ID: *w.From.ID, Name: *w.From.Name, Role: w.From.Role},
		Channel: deref(w.Channel), To: deref(w.To), ToService: deref(w.ToService),
		Mentions: w.Mentions, Parts: parts, ReplyTo: w.ReplyTo, ContextID: w.ContextID,
	}
	if err := m.Validate(); err != nil {
		return nil, anomalyf(ReasonMalformedJSON, "%w", err)
	}
	return m, nil
}

func (w *legacyWireMessage) checkPresent() error {
	switch {
	case w.ID == nil:
		return fmt.Errorf("%w: id is missing", ErrInvalidMessage)
	case isNull(w.TS):
		return fmt.Errorf("%w: ts is missing", ErrInvalidMessage)
	case w.Space == nil:
		return fmt.Errorf("%w: space is missing", ErrInvalidMessage)
	case w.From.Name == nil:
		return fmt.Errorf("%w: from.name is missing", ErrInvalidMessage)
	case w.Parts == nil:
		return fmt.Errorf("%w: parts is missing", ErrInvalidMessage)
	}
	routes := 0
	for _, r := range []*string{w.Channel, w.To, w.ToService} {
		if r != nil {
			routes++
		}
	}
	if routes != 1 {
		return fmt.Errorf("%w: %d routing fields present", ErrInvalidMessage, routes)
	}
	return nil
}

func legacyDecodeObject(data []byte, v any) error {
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

func legacyEpochMillis(raw json.RawMessage) (int64, error) {
	var n json.Number
	if raw = bytes.TrimSpace(raw); raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%s is not a number", raw)
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("%s is not an epoch-milliseconds number", n)
	}
	return int64(f), nil
}

// legacyPart is Part with the old encoding/json-based codec.
type legacyPart Part

func (p *legacyPart) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: a part must be a JSON object", ErrInvalidPart)
	}
	var kind string
	if err := json.Unmarshal(obj["kind"], &kind); err != nil || isNull(obj["kind"]) {
		return fmt.Errorf("%w: kind must be a string", ErrInvalidPart)
	}
	*p = legacyPart{Kind: kind}
	switch kind {
	case PartText:
		if err := json.Unmarshal(obj["text"], &p.Text); err != nil || isNull(obj["text"]) {
			return fmt.Errorf("%w: a text part needs a string text field", ErrInvalidPart)
		}
	case PartData:
		data, ok := obj["data"]
		if !ok {
			return fmt.Errorf("%w: a data part needs a data field", ErrInvalidPart)
		}
		p.Data = data
	default:
		delete(obj, "kind")
		p.Extension = obj
	}
	return nil
}

func (p legacyPart) MarshalJSON() ([]byte, error) {
	switch p.Kind {
	case PartText:
		return json.Marshal(struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		}{p.Kind, p.Text})
	case PartData:
		data := p.Data
		if data == nil {
			data = json.RawMessage("null")
		}
		return json.Marshal(struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}{p.Kind, data})
	}
	obj := make(map[string]json.RawMessage, len(p.Extension)+1)
	for k, v := range p.Extension {
		obj[k] = v
	}
	kind, err := json.Marshal(p.Kind)
	if err != nil {
		return nil, err
	}
	obj["kind"] = kind
	return json.Marshal(obj)
}

// legacyMarshalMessage is json.Marshal of a message through the old MarshalJSON.
func legacyMarshalMessage(m *CotalMessage) ([]byte, error) {
	type plain struct {
		ID        string       `json:"id"`
		TS        int64        `json:"ts"`
		Space     string       `json:"space"`
		From      EndpointRef  `json:"from"`
		Channel   string       `json:"channel,omitempty"`
		To        string       `json:"to,omitempty"`
		ToService string       `json:"toService,omitempty"`
		Mentions  []string     `json:"mentions,omitempty"`
		Parts     []legacyPart `json:"parts"`
		ReplyTo   string       `json:"replyTo,omitempty"`
		ContextID string       `json:"contextId,omitempty"`
	}
	parts := make([]legacyPart, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = legacyPart(p)
	}
	return json.Marshal(plain{ID: m.ID, TS: m.TS, Space: m.Space, From: m.From, Channel: m.Channel,
		To: m.To, ToService: m.ToService, Mentions: m.Mentions, Parts: parts, ReplyTo: m.ReplyTo,
		ContextID: m.ContextID})
}

// legacyDiverges reports whether data exercises one of the old decoder's departures from the
// schema, fixed by the new one, where the two may rightly disagree: in the top-level object or
// in from, a repeated key (the old decoder merged or failed on an earlier value, the schema
// takes the last), a key matching a field only without regard to case (encoding/json matched
// it, the schema does not), or a null where the schema wants a string or an array of strings
// (the old decoder read it as absent or empty).
func legacyDiverges(data []byte) bool {
	return objectDiverges(data, []string{"id", "ts", "space", "from", "channel", "to", "toService",
		"mentions", "parts", "replyTo", "contextId"}, []string{"channel", "to", "toService",
		"mentions", "replyTo", "contextId"})
}

func objectDiverges(data []byte, fields, nullable []string) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false
		}
		if seen[key] || slices.ContainsFunc(fields, func(f string) bool { return f != key && strings.EqualFold(f, key) }) ||
			(slices.Contains(nullable, key) && string(raw) == "null") {
			return true
		}
		seen[key] = true
		var items []json.RawMessage
		switch {
		case key == "mentions" && json.Unmarshal(raw, &items) == nil && slices.ContainsFunc(items,
			func(r json.RawMessage) bool { return string(r) == "null" }):
			return true
		case key == "from" && slices.Contains(fields, "from") &&
			objectDiverges(raw, []string{"id", "name", "role"}, []string{"role"}):
			return true
		}
	}
	return false
}
