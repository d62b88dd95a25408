package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth is encoding/json's nesting limit, kept so that a payload refused for depth
// before is refused still.
const maxJSONDepth = 10000

// errJSONSyntax marks input that is not JSON; a scanner error wraps it.
var errJSONSyntax = errors.New("invalid JSON")

// jsonScanner is a strict, single-pass reader of RFC 8259 JSON over a byte slice. It accepts
// exactly what encoding/json's scanner accepts and unescapes strings exactly as encoding/json
// does (an unpaired surrogate becomes U+FFFD), so a decoder built on it agrees with
// json.Unmarshal on every input. It allocates only to unescape a string; a string without
// escapes is returned as a slice of the input, which the caller copies.
type jsonScanner struct {
	data []byte
	pos  int
	// depth counts the open objects and arrays, bounded by maxJSONDepth.
	depth int
	// utf8Checked says data is known to be valid UTF-8; otherwise strings are coerced to
	// valid UTF-8 with U+FFFD per invalid byte, as encoding/json does.
	utf8Checked bool
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errJSONSyntax, s.pos, fmt.Sprintf(format, args...))
}

// ws skips insignificant whitespace and returns the next byte, or 0 at the end.
func (s *jsonScanner) ws() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// end checks that only whitespace follows the value just read.
func (s *jsonScanner) end() error {
	if s.ws(); s.pos != len(s.data) {
		return s.errorf("%q after the top-level value", s.data[s.pos])
	}
	return nil
}

// expect consumes c after optional whitespace.
func (s *jsonScanner) expect(c byte) error {
	if s.ws() != c {
		return s.errorf("want %q", c)
	}
	s.pos++
	return nil
}

// enter opens an object or array at the current position, which holds open.
func (s *jsonScanner) enter() error {
	if s.depth++; s.depth > maxJSONDepth {
		return s.errorf("nesting deeper than %d", maxJSONDepth)
	}
	s.pos++
	return nil
}

// more reports whether an object or array continues with another member, consuming the
// separating comma; first is true before the first member. It consumes the closing byte when
// the container ends.
func (s *jsonScanner) more(first bool, closing byte) (bool, error) {
	c := s.ws()
	switch {
	case c == closing:
		s.pos++
		s.depth--
		return false, nil
	case first:
		return true, nil
	case c == ',':
		s.pos++
		if s.ws() == closing {
			return false, s.errorf("%q after a comma", closing)
		}
		return true, nil
	}
	return false, s.errorf("want ',' or %q", closing)
}

// key reads an object key and its colon; the caller has seen more return true.
func (s *jsonScanner) key() ([]byte, error) {
	if s.ws() != '"' {
		return nil, s.errorf("want a string key")
	}
	k, err := s.string()
	if err != nil {
		return nil, err
	}
	return k, s.expect(':')
}

// skip reads and checks one value of any type.
func (s *jsonScanner) skip() error {
	switch c := s.ws(); {
	case c == '{':
		if err := s.enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := s.more(first, '}')
			if err != nil || !more {
				return err
			}
			if s.ws() != '"' {
				return s.errorf("want a string key")
			}
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := s.more(first, ']')
			if err != nil || !more {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '"':
		return s.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.errorf("want a value")
}

// span reads one value and returns its bytes as they stand in the input.
func (s *jsonScanner) span() ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// isNull consumes a null literal if one is next.
func (s *jsonScanner) isNull() bool {
	if s.ws() == 'n' && s.literal("null") == nil {
		return true
	}
	return false
}

func (s *jsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.errorf("want %s", word)
	}
	s.pos += len(word)
	return nil
}

// number reads a number of the RFC 8259 grammar.
func (s *jsonScanner) number() error {
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return s.errorf("want a digit")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.errorf("want a digit after the decimal point")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.errorf("want a digit in the exponent")
		}
	}
	return nil
}

func (s *jsonScanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

// stringRun returns the length of the prefix of b free of '"', '\\' and control bytes, the
// bytes that end a plain run of a JSON string. It tests eight bytes at a time.
func stringRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		quote, bslash := w^(ones*'"'), w^(ones*'\\')
		stop := (quote - ones) &^ quote
		stop |= (bslash - ones) &^ bslash
		stop |= (w - ones*0x20) &^ w
		if stop&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	return i
}

// string reads a string value and returns it unescaped: a string without escapes as a slice
// of the input, any other in a new buffer.
func (s *jsonScanner) string() ([]byte, error) {
	s.pos++
	start := s.pos
	s.pos += stringRun(s.data[s.pos:])
	if s.pos < len(s.data) && s.data[s.pos] == '"' {
		plain := s.data[start:s.pos:s.pos]
		if s.utf8Checked || utf8.Valid(plain) {
			s.pos++
			return plain, nil
		}
	}
	return s.unescape(start)
}

// skipString reads and checks a string value without building it.
func (s *jsonScanner) skipString() error {
	s.pos++
	for {
		s.pos += stringRun(s.data[s.pos:])
		switch {
		case s.pos == len(s.data):
			return s.errorf("unterminated string")
		case s.data[s.pos] == '"':
			s.pos++
			return nil
		case s.data[s.pos] == '\\':
			if err := s.skipEscape(); err != nil {
				return err
			}
		default:
			return s.errorf("control character in a string")
		}
	}
}

// skipEscape checks the escape sequence at the current position and consumes it.
func (s *jsonScanner) skipEscape() error {
	if s.pos+1 >= len(s.data) {
		return s.errorf("unterminated escape")
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return nil
	case 'u':
		if hex4(s.data[s.pos+2:]) < 0 {
			return s.errorf("want four hex digits after \\u")
		}
		s.pos += 6
		return nil
	}
	return s.errorf("invalid escape \\%c", s.data[s.pos+1])
}

// unescape builds the string that starts at start (after its quote) the way encoding/json's
// unquote does, and leaves the position after its closing quote.
func (s *jsonScanner) unescape(start int) ([]byte, error) {
	// The plain run before the first escape is already scanned; size the buffer by it, not by
	// the rest of the input, so that many short escaped strings cost linear memory.
	b := make([]byte, 0, s.pos-start+16)
	s.pos = start
	for {
		run := stringRun(s.data[s.pos:])
		b = s.appendValid(b, s.data[s.pos:s.pos+run])
		s.pos += run
		switch {
		case s.pos == len(s.data):
			return nil, s.errorf("unterminated string")
		case s.data[s.pos] == '"':
			s.pos++
			return b, nil
		case s.data[s.pos] != '\\':
			return nil, s.errorf("control character in a string")
		}
		at := s.pos
		if err := s.skipEscape(); err != nil {
			return nil, err
		}
		if s.data[at+1] == 'u' {
			b = s.appendRune(b, s.data[at:s.pos])
		} else {
			b = append(b, unescapeByte[s.data[at+1]])
		}
	}
}

// unescapeByte maps the letter of a one-letter escape to the byte it stands for.
var unescapeByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// appendRune appends the rune of the \uXXXX escape esc, joining it with a following low
// surrogate escape as encoding/json does; an unpaired surrogate becomes U+FFFD.
func (s *jsonScanner) appendRune(b, esc []byte) []byte {
	r := hex4(esc[2:])
	if utf16.IsSurrogate(r) {
		next := s.data[s.pos:]
		if len(next) >= 6 && next[0] == '\\' && next[1] == 'u' {
			if dec := utf16.DecodeRune(r, hex4(next[2:])); dec != utf8.RuneError {
				s.pos += 6
				return utf8.AppendRune(b, dec)
			}
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(b, r)
}

// appendValid appends run, replacing each byte of an invalid UTF-8 sequence with U+FFFD as
// encoding/json does, unless the input is known to be valid.
func (s *jsonScanner) appendValid(b, run []byte) []byte {
	if s.utf8Checked || utf8.Valid(run) {
		return append(b, run...)
	}
	for len(run) > 0 {
		r, size := utf8.DecodeRune(run)
		b = utf8.AppendRune(b, r)
		run = run[size:]
	}
	return b
}

// hex4 returns the value of the four hex digits b starts with, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
