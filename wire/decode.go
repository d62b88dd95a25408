package wire

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The envelope's fields (SPEC §5), as bits of an envelopeDecoder's masks.
const (
	fieldID uint16 = 1 << iota
	fieldTS
	fieldSpace
	fieldFrom
	fieldFromID
	fieldFromName
	fieldRole
	fieldChannel
	fieldTo
	fieldToService
	fieldMentions
	fieldParts
	fieldReplyTo
	fieldContextID
)

// fieldNames names the fields in bit order, for error messages.
var fieldNames = [...]string{"id", "ts", "space", "from", "from.id", "from.name", "from.role",
	"channel", "to", "toService", "mentions", "parts", "replyTo", "contextId"}

// errWrongType marks a field value of the wrong JSON type.
var errWrongType = errors.New("wrong JSON type")

// envelopeDecoder reads a delivery envelope in one pass over the payload. Keys match exactly,
// as in the schema; when a key repeats, its last value counts, as in the schema validator's
// reading, so an earlier value of the wrong type is no error.
type envelopeDecoder struct {
	s jsonScanner
	m *CotalMessage
	// ts is the text of the last ts number.
	ts string
	// present holds the fields whose last value has the right type; wrong those whose last
	// value has not. A null from or from.id is in neither: it counts as missing.
	present, wrong uint16
	// partsErr says why the last parts value was refused.
	partsErr error
}

// decodeEnvelope fills m from data and checks what the schema checks, leaving the rest of
// SPEC §5 to Validate. Every error is an *Anomaly.
func decodeEnvelope(data []byte, m *CotalMessage) error {
	if !utf8.Valid(data) {
		return anomalyf(ReasonMalformedJSON, "payload is not valid UTF-8")
	}
	d := envelopeDecoder{s: jsonScanner{data: data, str: string(data), utf8Checked: true}, m: m}
	if d.s.ws() != '{' {
		return anomalyf(ReasonMalformedJSON, "payload is not a JSON object")
	}
	if err := d.object(); err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	if d.wrong != 0 {
		if d.wrong&fieldParts != 0 {
			return anomalyf(ReasonMalformedJSON, "%w: parts: %w", ErrInvalidMessage, d.partsErr)
		}
		return anomalyf(ReasonMalformedJSON, "%w: %s is not of the schema's type", ErrInvalidMessage,
			fieldNames[bits.TrailingZeros16(d.wrong)])
	}
	if d.present&fieldFrom == 0 || d.present&fieldFromID == 0 || m.From.ID == "" {
		return anomalyf(ReasonSenderMismatch, "message has no from.id")
	}
	if err := d.checkPresent(); err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	ts, err := epochMillis(d.ts)
	if err != nil {
		return anomalyf(ReasonMalformedJSON, "%w: ts: %w", ErrInvalidMessage, err)
	}
	m.TS = ts
	return nil
}

// object reads the top-level object.
func (d *envelopeDecoder) object() error {
	if err := d.s.enter(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := d.s.more(first, '}')
		if err != nil {
			return err
		}
		if !more {
			return d.s.end()
		}
		key, err := d.s.key()
		if err != nil {
			return err
		}
		if err := d.field(key); err != nil {
			return err
		}
	}
}

// field reads the value of key; an unknown key's value is checked and ignored (SPEC §11).
func (d *envelopeDecoder) field(key string) error {
	m := d.m
	switch key {
	case "id":
		return d.typed(fieldID, &m.ID)
	case "ts":
		return d.typed(fieldTS, nil)
	case "space":
		return d.typed(fieldSpace, &m.Space)
	case "from":
		return d.from()
	case "channel":
		return d.typed(fieldChannel, &m.Channel)
	case "to":
		return d.typed(fieldTo, &m.To)
	case "toService":
		return d.typed(fieldToService, &m.ToService)
	case "mentions":
		return d.typed(fieldMentions, nil)
	case "parts":
		return d.typed(fieldParts, nil)
	case "replyTo":
		return d.typed(fieldReplyTo, &m.ReplyTo)
	case "contextId":
		return d.typed(fieldContextID, &m.ContextID)
	}
	return d.s.skip()
}

// typed reads the value of field, into str for a string field. A value of the wrong type is
// skipped and marks the field wrong; only a syntax error ends the decoding.
func (d *envelopeDecoder) typed(field uint16, str *string) error {
	start, depth := d.s.pos, d.s.depth
	err := d.value(field, str)
	if err == nil {
		d.present |= field
		d.wrong &^= field
		return nil
	}
	d.s.pos, d.s.depth = start, depth
	if err := d.s.skip(); err != nil {
		return err
	}
	if field == fieldParts {
		d.partsErr = err
	}
	d.present &^= field
	d.wrong |= field
	return nil
}

func (d *envelopeDecoder) value(field uint16, str *string) error {
	c := d.s.ws()
	switch {
	case str != nil && c == '"':
		v, err := d.s.string()
		*str = v
		return err
	case field == fieldTS && (c == '-' || (c >= '0' && c <= '9')):
		start := d.s.pos
		err := d.s.number()
		d.ts = d.s.str[start:d.s.pos]
		return err
	case field == fieldMentions && c == '[':
		return d.mentions()
	case field == fieldParts && c == '[':
		return d.parts()
	}
	return errWrongType
}

// from reads the sender. A later from replaces an earlier one whole; a null one is missing.
func (d *envelopeDecoder) from() error {
	const all = fieldFrom | fieldFromID | fieldFromName | fieldRole
	d.present &^= all
	d.wrong &^= all
	d.m.From = EndpointRef{}
	switch c := d.s.ws(); {
	case d.s.isNull():
		return nil
	case c != '{':
		d.wrong |= fieldFrom
		return d.s.skip()
	}
	if err := d.s.enter(); err != nil {
		return err
	}
	d.present |= fieldFrom
	for first := true; ; first = false {
		more, err := d.s.more(first, '}')
		if err != nil || !more {
			return err
		}
		key, err := d.s.key()
		if err != nil {
			return err
		}
		switch key {
		case "id":
			err = d.fromID()
		case "name":
			err = d.typed(fieldFromName, &d.m.From.Name)
		case "role":
			err = d.typed(fieldRole, &d.m.From.Role)
		default:
			err = d.s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// fromID reads from.id, where null counts as missing: a sender-mismatch, not malformed JSON.
func (d *envelopeDecoder) fromID() error {
	if d.s.isNull() {
		d.present &^= fieldFromID
		d.wrong &^= fieldFromID
		d.m.From.ID = ""
		return nil
	}
	return d.typed(fieldFromID, &d.m.From.ID)
}

// mentions reads an array of strings.
func (d *envelopeDecoder) mentions() error {
	if err := d.s.enter(); err != nil {
		return err
	}
	var buf [8]string
	names := buf[:0]
	for first := true; ; first = false {
		more, err := d.s.more(first, ']')
		if err != nil {
			return err
		}
		if !more {
			d.m.Mentions = append(make([]string, 0, len(names)), names...)
			return nil
		}
		if d.s.ws() != '"' {
			return errWrongType
		}
		name, err := d.s.string()
		if err != nil {
			return err
		}
		names = append(names, name)
	}
}

// parts reads an array of part objects.
func (d *envelopeDecoder) parts() error {
	if err := d.s.enter(); err != nil {
		return err
	}
	var buf [4]Part
	parts := buf[:0]
	for first := true; ; first = false {
		more, err := d.s.more(first, ']')
		if err != nil {
			return err
		}
		if !more {
			d.m.Parts = append(make([]Part, 0, len(parts)), parts...)
			return nil
		}
		p, err := d.s.part()
		if err != nil {
			return fmt.Errorf("part %d: %w", len(parts), err)
		}
		parts = append(parts, p)
	}
}

// checkPresent reports the first required field the payload lacks, and a payload with other
// than exactly one routing field present (the schema's oneOf).
func (d *envelopeDecoder) checkPresent() error {
	for _, f := range []uint16{fieldID, fieldTS, fieldSpace, fieldFromName, fieldParts} {
		if d.present&f == 0 {
			return fmt.Errorf("%w: %s is missing", ErrInvalidMessage, fieldNames[bits.TrailingZeros16(f)])
		}
	}
	if routes := bits.OnesCount16(d.present & (fieldChannel | fieldTo | fieldToService)); routes != 1 {
		return fmt.Errorf("%w: %d routing fields present, want exactly one of channel, to and toService",
			ErrInvalidMessage, routes)
	}
	return nil
}

// epochMillis converts the text of a JSON number to integral epoch milliseconds. The schema
// allows any number, so a fractional value is truncated; a number outside int64 is refused.
func epochMillis(n string) (int64, error) {
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("%s is not an epoch-milliseconds number", n)
	}
	return int64(f), nil
}
