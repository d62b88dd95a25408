package endpoint

import (
	"bytes"
	"strconv"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// row is one presence key's state in a directory: the peer and the bytes it was decoded from,
// with where its ts digits sit, so the next heartbeat, which changes only them, is taken
// without decoding.
type row struct {
	peer Peer
	raw  []byte
	// tsAt and tsEnd delimit the ts digits in raw; tsEnd is 0 when raw has no unambiguous
	// ts, and every later row is decoded in full.
	tsAt, tsEnd int
}

func newRow(p wire.Presence, value []byte, now time.Time, liveness time.Duration) *row {
	r := &row{peer: Peer{Presence: p, LastSeen: time.UnixMilli(p.TS),
		Online: p.EffectiveStatus(now, liveness) != wire.StatusOffline}}
	at, end, ok := locateTS(value)
	if ok {
		if ts, err := strconv.ParseInt(string(value[at:end]), 10, 64); err == nil && ts == p.TS {
			r.raw, r.tsAt, r.tsEnd = bytes.Clone(value), at, end
		}
	}
	return r
}

// heartbeat reports whether value equals r's row but for the ts digits, and the new ts. Such a
// row decodes to the same presence with another ts, so it needs no decoding; a removed peer
// is decoded again, which clears Removed.
func (r *row) heartbeat(value []byte) (int64, bool) {
	if r.tsEnd == 0 || r.peer.Removed {
		return 0, false
	}
	suffix := r.raw[r.tsEnd:]
	if len(value) <= r.tsAt+len(suffix) || !bytes.Equal(value[:r.tsAt], r.raw[:r.tsAt]) ||
		!bytes.HasSuffix(value, suffix) {
		return 0, false
	}
	digits := value[r.tsAt : len(value)-len(suffix)]
	if !plainDigits(digits) {
		return 0, false
	}
	ts, err := strconv.ParseInt(string(digits), 10, 64)
	return ts, err == nil
}

// locateTS finds the digits of the top-level ts in a row that decoded. The row has no escape,
// so a quoted "ts" cannot hide inside another string or be spelled with escapes, and the key
// must occur once in any letter case (encoding/json matches keys by case folding, where the
// long s folds to s, and lets the last duplicate win). Anything else is left to the decoder.
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
	i := skipSpace(value, key+4)
	if i >= len(value) || value[i] != ':' {
		return 0, 0, false
	}
	at := skipSpace(value, i+1)
	end := at
	for end < len(value) && value[end] >= '0' && value[end] <= '9' {
		end++
	}
	if !plainDigits(value[at:end]) {
		return 0, 0, false
	}
	return at, end, true
}

// plainDigits reports whether b is a JSON integer of at most 18 digits without sign, fraction
// or leading zero, which int64 holds.
func plainDigits(b []byte) bool {
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

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
