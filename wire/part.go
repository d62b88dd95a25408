package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// The core Part kinds (SPEC §5). Other core kinds are reserved to the spec; anything else must
// be a namespaced extension kind (SPEC §11).
const (
	PartText = "text"
	PartData = "data"
)

// extensionKind is the schema's ExtensionPartKind: reverse-DNS, at least two dotted labels.
var extensionKind = regexp.MustCompile(`^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)

// Part is one item of a message's content (SPEC §5): a text part, a data part, or an extension
// part whose kind is namespaced reverse-DNS (SPEC §11). Build parts with TextPart, DataPart and
// ExtensionPart; a decoded part keeps exactly the fields of its kind.
type Part struct {
	// Kind is "text", "data" or a reverse-DNS extension kind such as "com.acme.snapshot".
	Kind string
	// Text is the content of a text part.
	Text string
	// Data is the JSON value of a data part; nil encodes as null.
	Data json.RawMessage
	// Extension holds every field of an extension part except kind, verbatim.
	Extension map[string]json.RawMessage
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: PartText, Text: s} }

// DataPart returns a data part carrying v encoded as JSON.
func DataPart(v any) (Part, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return Part{}, fmt.Errorf("data part: %w", err)
	}
	return Part{Kind: PartData, Data: raw}, nil
}

// ExtensionPart returns an extension part of the namespaced kind with fields encoded as JSON.
// The kind must be reverse-DNS under a domain the author controls (SPEC §11), and fields must
// not contain "kind".
func ExtensionPart(kind string, fields map[string]any) (Part, error) {
	p := Part{Kind: kind, Extension: make(map[string]json.RawMessage, len(fields))}
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			return Part{}, fmt.Errorf("extension part %q field %q: %w", kind, k, err)
		}
		p.Extension[k] = raw
	}
	if err := p.Validate(); err != nil {
		return Part{}, err
	}
	return p, nil
}

// IsExtension reports whether the part has a namespaced extension kind. A receiver that does
// not support that extension must ignore the part (SPEC §5).
func (p Part) IsExtension() bool { return extensionKind.MatchString(p.Kind) }

// Validate checks the part against SPEC §5 and the schema: a core kind carries only its own
// field, an extension kind is namespaced and has no second "kind", and a bare kind that is
// neither ("image") is not conformant.
func (p Part) Validate() error {
	switch {
	case p.Kind == PartText:
		if p.Data != nil || p.Extension != nil {
			return fmt.Errorf("%w: a text part carries only text", ErrInvalidPart)
		}
	case p.Kind == PartData:
		if p.Text != "" || p.Extension != nil {
			return fmt.Errorf("%w: a data part carries only data", ErrInvalidPart)
		}
		if p.Data != nil && !json.Valid(p.Data) {
			return fmt.Errorf("%w: data is not valid JSON", ErrInvalidPart)
		}
	case p.IsExtension():
		if p.Text != "" || p.Data != nil {
			return fmt.Errorf("%w: extension part %q keeps its fields in Extension", ErrInvalidPart, p.Kind)
		}
		if _, ok := p.Extension["kind"]; ok {
			return fmt.Errorf("%w: extension part %q has a second kind field", ErrInvalidPart, p.Kind)
		}
		for k, v := range p.Extension {
			if !json.Valid(v) {
				return fmt.Errorf("%w: extension part %q field %q is not valid JSON", ErrInvalidPart, p.Kind, k)
			}
		}
	default:
		return fmt.Errorf("%w: kind %q is neither text, data nor a reverse-DNS extension kind "+
			"such as com.acme.snapshot (SPEC §11)", ErrInvalidPart, p.Kind)
	}
	return nil
}

// MarshalJSON encodes the part with exactly the fields of its kind; text and data are always
// present on core parts, as the schema requires.
func (p Part) MarshalJSON() ([]byte, error) {
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

// UnmarshalJSON decodes a part object. kind must be a string; a text part needs a string text
// and a data part a data field (null allowed). Other kinds keep all their other fields in
// Extension; Validate then decides whether the kind is conformant.
func (p *Part) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: a part must be a JSON object", ErrInvalidPart)
	}
	var kind string
	if err := json.Unmarshal(obj["kind"], &kind); err != nil || isNull(obj["kind"]) {
		return fmt.Errorf("%w: kind must be a string", ErrInvalidPart)
	}
	*p = Part{Kind: kind}
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

// isNull reports whether raw is absent or the JSON null, which encoding/json would silently
// accept as an empty value.
func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
