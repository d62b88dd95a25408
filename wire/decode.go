package wire

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
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

// stringFields are the fields whose value is a string.
const stringFields = fieldID | fieldSpace | fieldFromID | fieldFromName | fieldRole | fieldChannel |
	fieldTo | fieldToService | fieldReplyTo | fieldContextID

// errWrongType marks a field value of the wrong JSON type.
var errWrongType = errors.New("wrong JSON type")

// envelopeDecoder reads a delivery envelope in one pass over the payload. Keys match exactly,
// as in the schema; when a key repeats, its last value counts, as in the schema validator's
// reading, so an earlier value of the wrong type is no error.
//
// Values are held as slices of the payload until the end, when the envelope's short strings
// are copied into one allocation and each text into its own: a decoded message shares no
// memory with the payload, and a string it keeps, such as an id in a dedup window, pins no
// more than the envelope's other short strings.
type envelopeDecoder struct {
	s jsonScanner
	m *CotalMessage
	// strs holds the last value of each string field, by field bit.
	strs [len(fieldNames)][]byte
	// mentionsAt is the offset of the last mentions array, read again when it is copied.
	mentionsAt int
	// ts is the text of the last ts number.
	ts []byte
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
	d := envelopeDecoder{s: jsonScanner{data: data, utf8Checked: true}, m: m}
	if d.s.ws() != '{' {
		return anomalyf(ReasonMalformedJSON, "payload is not a JSON object")
	}
	if err := d.object(); err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	// A ts of the wrong type is found after the sender check, as the old decoder found it.
	if d.wrong&^fieldTS != 0 {
		if d.wrong&fieldParts != 0 {
			return anomalyf(ReasonMalformedJSON, "%w: parts: %w", ErrInvalidMessage, d.partsErr)
		}
		return anomalyf(ReasonMalformedJSON, "%w: %s is not of the schema's type", ErrInvalidMessage,
			fieldNames[bits.TrailingZeros16(d.wrong)])
	}
	if d.present&fieldFrom == 0 || d.present&fieldFromID == 0 || len(d.strs[fieldIndex(fieldFromID)]) == 0 {
		return anomalyf(ReasonSenderMismatch, "message has no from.id")
	}
	if d.wrong&fieldTS != 0 {
		return anomalyf(ReasonMalformedJSON, "%w: ts is not a number", ErrInvalidMessage)
	}
	if err := d.checkPresent(); err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	ts, err := epochMillis(d.ts)
	if err != nil {
		return anomalyf(ReasonMalformedJSON, "%w: ts: %w", ErrInvalidMessage, err)
	}
	m.TS = ts
	var buf [8][]byte
	mentions, err := d.readMentions(buf[:0])
	if err != nil {
		return anomalyf(ReasonMalformedJSON, "%w", err)
	}
	d.copyStrings(mentions)
	return nil
}

func fieldIndex(field uint16) int { return bits.TrailingZeros16(field) }

// copyStrings sets the message's string fields and mentions from one allocation.
func (d *envelopeDecoder) copyStrings(mentions [][]byte) {
	n := 0
	for _, v := range d.strs {
		n += len(v)
	}
	for _, v := range mentions {
		n += len(v)
	}
	var b strings.Builder
	b.Grow(n)
	for _, v := range d.strs {
		b.Write(v)
	}
	for _, v := range mentions {
		b.Write(v)
	}
	all := b.String()
	take := func(v []byte) string {
		s := all[:len(v)]
		all = all[len(v):]
		return s
	}
	m := d.m
	for i, dst := range [...]*string{&m.ID, nil, &m.Space, nil, &m.From.ID, &m.From.Name, &m.From.Role,
		&m.Channel, &m.To, &m.ToService, nil, nil, &m.ReplyTo, &m.ContextID} {
		if dst != nil {
			*dst = take(d.strs[i])
		}
	}
	if d.present&fieldMentions != 0 {
		m.Mentions = make([]string, len(mentions))
		for i, v := range mentions {
			m.Mentions[i] = take(v)
		}
	}
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
func (d *envelopeDecoder) field(key []byte) error {
	switch string(key) {
	case "id":
		return d.typed(fieldID)
	case "ts":
		return d.typed(fieldTS)
	case "space":
		return d.typed(fieldSpace)
	case "from":
		return d.from()
	case "channel":
		return d.typed(fieldChannel)
	case "to":
		return d.typed(fieldTo)
	case "toService":
		return d.typed(fieldToService)
	case "mentions":
		return d.typed(fieldMentions)
	case "parts":
		return d.typed(fieldParts)
	case "replyTo":
		return d.typed(fieldReplyTo)
	case "contextId":
		return d.typed(fieldContextID)
	}
	return d.s.skip()
}

// typed reads the value of field. A value of the wrong type is skipped and marks the field
// wrong; only a syntax error ends the decoding.
func (d *envelopeDecoder) typed(field uint16) error {
	start, depth := d.s.pos, d.s.depth
	err := d.value(field)
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

func (d *envelopeDecoder) value(field uint16) error {
	c := d.s.ws()
	switch {
	case field&stringFields != 0 && c == '"':
		v, err := d.s.string()
		d.strs[fieldIndex(field)] = v
		return err
	case field == fieldTS && (c == '-' || (c >= '0' && c <= '9')):
		start := d.s.pos
		err := d.s.number()
		d.ts = d.s.data[start:d.s.pos]
		return err
	case field == fieldMentions && c == '[':
		d.mentionsAt = d.s.pos
		return d.checkMentions()
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
	for _, f := range []uint16{fieldFromID, fieldFromName, fieldRole} {
		d.strs[fieldIndex(f)] = nil
	}
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
		switch string(key) {
		case "id":
			err = d.fromID()
		case "name":
			err = d.typed(fieldFromName)
		case "role":
			err = d.typed(fieldRole)
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
		d.strs[fieldIndex(fieldFromID)] = nil
		return nil
	}
	return d.typed(fieldFromID)
}

// checkMentions checks that the array at the current position holds only strings.
func (d *envelopeDecoder) checkMentions() error {
	if err := d.s.enter(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := d.s.more(first, ']')
		if err != nil || !more {
			return err
		}
		if d.s.ws() != '"' {
			return errWrongType
		}
		if err := d.s.skipString(); err != nil {
			return err
		}
	}
}

// readMentions appends to names the strings of the last mentions array, if any.
func (d *envelopeDecoder) readMentions(names [][]byte) ([][]byte, error) {
	if d.present&fieldMentions == 0 {
		return nil, nil
	}
	s := jsonScanner{data: d.s.data, pos: d.mentionsAt, utf8Checked: true}
	if err := s.enter(); err != nil {
		return nil, err
	}
	for first := true; ; first = false {
		more, err := s.more(first, ']')
		if err != nil || !more {
			return names, err
		}
		s.ws()
		name, err := s.string()
		if err != nil {
			return nil, err
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
func epochMillis(n []byte) (int64, error) {
	if i, ok := smallInt(n); ok {
		return i, nil
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("%s is not an epoch-milliseconds number", n)
	}
	return int64(f), nil
}

// smallInt parses an integer of at most 18 digits, which cannot overflow, without allocating.
func smallInt(n []byte) (int64, bool) {
	digits := n
	if len(n) > 0 && n[0] == '-' {
		digits = n[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if len(digits) < len(n) {
		v = -v
	}
	return v, true
}
