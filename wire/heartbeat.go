package wire

import (
	"bytes"
	"strconv"
)

// HeartbeatSpan remembers a presence row's bytes and where its top-level ts digits sit, so that
// the next heartbeat of the same presence, which changes only those digits, is read without
// decoding: one presence decode per change, not per heartbeat. The zero value matches nothing.
type HeartbeatSpan struct {
	raw     []byte
	at, end int // the ts digits in raw; end is 0 when raw has no unambiguous ts
}

// NewHeartbeatSpan returns the span of value, a presence row that decoded with ts, or the
// zero span when value has no unambiguous ts equal to it.
func NewHeartbeatSpan(value []byte, ts int64) HeartbeatSpan {
	at, end, ok := locateTS(value)
	if !ok {
		return HeartbeatSpan{}
	}
	if got, err := strconv.ParseInt(string(value[at:end]), 10, 64); err != nil || got != ts {
		return HeartbeatSpan{}
	}
	return HeartbeatSpan{raw: bytes.Clone(value), at: at, end: end}
}

// Heartbeat reports whether value equals the span's row but for the ts digits, and the new
// ts. Such a value decodes and validates like the row, with another ts.
func (s HeartbeatSpan) Heartbeat(value []byte) (int64, bool) {
	if s.end == 0 {
		return 0, false
	}
	suffix := s.raw[s.end:]
	if len(value) <= s.at+len(suffix) || !bytes.Equal(value[:s.at], s.raw[:s.at]) ||
		!bytes.HasSuffix(value, suffix) {
		return 0, false
	}
	digits := value[s.at : len(value)-len(suffix)]
	if !PlainDigits(digits) {
		return 0, false
	}
	ts, err := strconv.ParseInt(string(digits), 10, 64)
	return ts, err == nil
}

// locateTS finds the digits of the top-level ts in a value that decoded. The value has no
// escape, so a quoted "ts" cannot hide inside another string or be spelled with escapes, and
// the key must occur once in any letter case (a decoder matching keys by case folding, where
// the long s folds to s, must not be able to pick another). Anything else is left to the
// decoder.
func locateTS(value []byte) (int, int, bool) {
	if bytes.IndexByte(value, '\\') >= 0 || bytes.Contains(value, []byte("\u017f")) {
		return 0, 0, false
	}
	key := -1
	for i := 0; i+4 <= len(value); i++ {
		if value[i] == '"' && value[i+3] == '"' && value[i+1]|0x20 == 't' && value[i+2]|0x20 == 's' {
			if key >= 0 {
				return 0, 0, false
			}
			key = i
		}
	}
	if key < 0 {
		return 0, 0, false
	}
	i := skipJSONSpace(value, key+4)
	if i >= len(value) || value[i] != ':' {
		return 0, 0, false
	}
	at := skipJSONSpace(value, i+1)
	end := at
	for end < len(value) && value[end] >= '0' && value[end] <= '9' {
		end++
	}
	if !PlainDigits(value[at:end]) {
		return 0, 0, false
	}
	return at, end, true
}

// PlainDigits reports whether b is a JSON integer of at most 18 digits without sign, fraction
// or leading zero, which int64 holds.
func PlainDigits(b []byte) bool {
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
