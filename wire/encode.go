package wire

import (
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the message's JSON encoding to dst and returns the extended buffer, so a
// sender can reuse one buffer. It writes exactly what json.Marshal writes for the message:
// parts always an array, empty optional fields omitted, HTML-sensitive characters escaped.
// An error, which wraps ErrInvalidPart when a raw data or extension value is not JSON,
// returns dst as it was.
func (m *CotalMessage) AppendJSON(dst []byte) ([]byte, error) {
	orig := len(dst)
	dst = slices.Grow(dst, m.sizeHint())
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, m.TS, 10)
	dst = append(dst, `,"space":`...)
	dst = appendJSONString(dst, m.Space)
	dst = append(dst, `,"from":{"id":`...)
	dst = appendJSONString(dst, m.From.ID)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, m.From.Name)
	dst = appendOptional(dst, `,"role":`, m.From.Role)
	dst = append(dst, '}')
	dst = appendOptional(dst, `,"channel":`, m.Channel)
	dst = appendOptional(dst, `,"to":`, m.To)
	dst = appendOptional(dst, `,"toService":`, m.ToService)
	if len(m.Mentions) > 0 {
		dst = append(dst, `,"mentions":[`...)
		for i, name := range m.Mentions {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, name)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"parts":[`...)
	for i, p := range m.Parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = p.AppendJSON(dst); err != nil {
			return dst[:orig], fmt.Errorf("part %d: %w", i, err)
		}
	}
	dst = append(dst, ']')
	dst = appendOptional(dst, `,"replyTo":`, m.ReplyTo)
	dst = appendOptional(dst, `,"contextId":`, m.ContextID)
	return append(dst, '}'), nil
}

// sizeHint is about the length of the message's encoding, so that encoding into a fresh
// buffer allocates once.
func (m *CotalMessage) sizeHint() int {
	n := 128 + len(m.ID) + len(m.Space) + len(m.From.ID) + len(m.From.Name) + len(m.From.Role) +
		len(m.Channel) + len(m.To) + len(m.ToService) + len(m.ReplyTo) + len(m.ContextID)
	for _, name := range m.Mentions {
		n += len(name) + 3
	}
	for _, p := range m.Parts {
		n += 32 + len(p.Kind) + len(p.Text) + len(p.Data)
		for k, v := range p.Extension {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// appendOptional appends key and the string v unless v is empty (omitempty).
func appendOptional(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendJSONString(append(dst, key...), v)
}

// AppendJSON appends the part's JSON encoding to dst: exactly the fields of its kind, the
// bytes json.Marshal writes for it. An error, which wraps ErrInvalidPart when a raw value is
// not JSON, returns dst as it was.
func (p Part) AppendJSON(dst []byte) ([]byte, error) {
	orig := len(dst)
	var err error
	switch p.Kind {
	case PartText:
		dst = append(dst, `{"kind":"text","text":`...)
		dst = appendJSONString(dst, p.Text)
	case PartData:
		dst = append(dst, `{"kind":"data","data":`...)
		if dst, err = appendRawJSON(dst, p.Data); err != nil {
			return dst[:orig], fmt.Errorf("%w: data is not valid JSON: %w", ErrInvalidPart, err)
		}
	default:
		if dst, err = p.appendExtension(dst); err != nil {
			return dst[:orig], err
		}
	}
	return append(dst, '}'), nil
}

// appendExtension appends an extension part's fields and its kind, keys sorted as
// json.Marshal sorts a map's, leaving the closing brace to the caller.
func (p Part) appendExtension(dst []byte) ([]byte, error) {
	keys := make([]string, 0, len(p.Extension)+1)
	for k := range p.Extension {
		if k != "kind" {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "kind")
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendJSONString(dst, k), ':')
		if k == "kind" {
			dst = appendJSONString(dst, p.Kind)
			continue
		}
		var err error
		if dst, err = appendRawJSON(dst, p.Extension[k]); err != nil {
			return dst, fmt.Errorf("%w: extension part %q field %q is not valid JSON: %w", ErrInvalidPart, p.Kind, k, err)
		}
	}
	return dst, nil
}

// appendRawJSON appends raw compacted and HTML-escaped as json.Marshal appends a
// json.RawMessage: nil as null, anything but one JSON value refused.
func appendRawJSON(dst, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	s := jsonScanner{data: raw}
	if err := s.skip(); err != nil {
		return dst, err
	}
	if err := s.end(); err != nil {
		return dst, err
	}
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '<' || c == '>' || c == '&':
			dst = append(append(dst, raw[start:i]...), '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			dst = append(append(dst, raw[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...), nil
}

const hexDigits = "0123456789abcdef"

// safeRun returns the length of the prefix of s that appendJSONString copies as it stands:
// ASCII with no byte htmlSafe refuses. It tests eight bytes at a time.
func safeRun(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		stop := w | (w-ones*0x20)&^w
		for _, c := range [...]uint64{'"', '\\', '<', '>', '&'} {
			x := w ^ (ones * c)
			stop |= (x - ones) &^ x
		}
		if stop&highs != 0 {
			break
		}
	}
	for i < len(s) && s[i] < utf8.RuneSelf && htmlSafe[s[i]] {
		i++
	}
	return i
}

// htmlSafe marks the ASCII bytes a JSON string carries unescaped: json.Marshal escapes the
// quote, the backslash, control bytes, and <, > and & against HTML sniffing.
var htmlSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// appendJSONString appends s quoted as json.Marshal quotes a string: invalid UTF-8 becomes
// U+FFFD, and U+2028 and U+2029 are escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := safeRun(s); i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}
