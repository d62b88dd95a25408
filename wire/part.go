package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The core Part kinds (SPEC §5). Other core kinds are reserved to the spec; anything else must
// be a namespaced extension kind (SPEC §11).
const (
	PartText = "text"
	PartData = "data"
)

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
func (p Part) IsExtension() bool { return isExtensionKind(p.Kind) }

// isExtensionKind matches the schema's ExtensionPartKind, ^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$:
// reverse-DNS, at least two dotted labels.
func isExtensionKind(kind string) bool {
	labels, size := 1, 0
	for i := 0; i < len(kind); i++ {
		switch c := kind[i]; {
		case c == '.':
			if size == 0 {
				return false
			}
			labels, size = labels+1, 0
		case c == '-' || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z'):
			size++
		default:
			return false
		}
	}
	return labels >= 2 && size > 0
}

// Validate checks the part against SPEC §5 and the schema: a core kind carries only its own
// field, an extension kind is namespaced and has no second "kind", and a bare kind that is
// neither ("image") is not conformant.
func (p Part) Validate() error { return p.validate(true) }

// validate is Validate; checkJSON false skips the check that raw values are JSON.
func (p Part) validate(checkJSON bool) error {
	switch {
	case p.Kind == PartText:
		if p.Data != nil || p.Extension != nil {
			return fmt.Errorf("%w: a text part carries only text", ErrInvalidPart)
		}
	case p.Kind == PartData:
		if p.Text != "" || p.Extension != nil {
			return fmt.Errorf("%w: a data part carries only data", ErrInvalidPart)
		}
		if checkJSON && p.Data != nil && !json.Valid(p.Data) {
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
			if checkJSON && !json.Valid(v) {
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
// present on core parts, as the schema requires. It writes what AppendJSON writes.
func (p Part) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil) }

// UnmarshalJSON decodes a part object. kind must be a string; a text part needs a string text
// and a data part a data field (null allowed). Other kinds keep all their other fields in
// Extension; Validate then decides whether the kind is conformant. When a key repeats, its
// last value counts.
func (p *Part) UnmarshalJSON(b []byte) error {
	s := jsonScanner{data: b}
	part, err := s.part()
	if err == nil {
		err = s.end()
	}
	if err != nil && !errors.Is(err, ErrInvalidPart) {
		err = fmt.Errorf("%w: %w", ErrInvalidPart, err)
	}
	if err != nil {
		return err
	}
	*p = part
	return nil
}

// part reads one part object (SPEC §5) in one pass; only an extension part is read twice,
// into its map.
func (s *jsonScanner) part() (Part, error) {
	if s.ws() != '{' {
		return Part{}, fmt.Errorf("%w: a part must be a JSON object", ErrInvalidPart)
	}
	start := s.pos
	if err := s.enter(); err != nil {
		return Part{}, err
	}
	var (
		kind, text, data []byte
		kindOK, textOK   bool
	)
	for first := true; ; first = false {
		more, err := s.more(first, '}')
		if err != nil {
			return Part{}, err
		}
		if !more {
			break
		}
		key, err := s.key()
		if err != nil {
			return Part{}, err
		}
		switch string(key) {
		case "kind":
			kind, kindOK, err = s.stringOrSkip()
		case "text":
			text, textOK, err = s.stringOrSkip()
		case "data":
			data, err = s.span()
		default:
			err = s.skip()
		}
		if err != nil {
			return Part{}, err
		}
	}
	switch {
	case !kindOK:
		return Part{}, fmt.Errorf("%w: kind must be a string", ErrInvalidPart)
	case string(kind) == PartText && !textOK:
		return Part{}, fmt.Errorf("%w: a text part needs a string text field", ErrInvalidPart)
	case string(kind) == PartText:
		return Part{Kind: PartText, Text: string(text)}, nil
	case string(kind) == PartData && data == nil:
		return Part{}, fmt.Errorf("%w: a data part needs a data field", ErrInvalidPart)
	case string(kind) == PartData:
		return Part{Kind: PartData, Data: append(json.RawMessage(nil), data...)}, nil
	}
	ext, err := s.extensionFields(start)
	return Part{Kind: string(kind), Extension: ext}, err
}

// stringOrSkip reads a string value, reporting false for a value of another type.
func (s *jsonScanner) stringOrSkip() ([]byte, bool, error) {
	if s.ws() != '"' {
		return nil, false, s.skip()
	}
	v, err := s.string()
	return v, err == nil, err
}

// extensionFields reads again the part object at start, already checked, into a map of its
// fields other than kind, each value verbatim.
func (s *jsonScanner) extensionFields(start int) (map[string]json.RawMessage, error) {
	end, depth := s.pos, s.depth
	defer func() { s.pos, s.depth = end, depth }()
	s.pos = start
	if err := s.enter(); err != nil {
		return nil, err
	}
	ext := make(map[string]json.RawMessage)
	for first := true; ; first = false {
		more, err := s.more(first, '}')
		if err != nil || !more {
			return ext, err
		}
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		raw, err := s.span()
		if err != nil {
			return nil, err
		}
		if string(key) != "kind" {
			ext[string(key)] = append(json.RawMessage(nil), raw...)
		}
	}
}

// isNull reports whether raw is absent or the JSON null, which encoding/json would silently
// accept as an empty value.
func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
