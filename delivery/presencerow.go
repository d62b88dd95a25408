package delivery

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// presenceRow is what the fan-out keeps of one presence row: what resolveMention reads, and
// the bytes it was decoded from with where its ts digits sit, so the next heartbeat, which
// changes only them, is taken without decoding the card again.
type presenceRow struct {
	name   string // the card's name, lowercased
	status wire.PresenceStatus
	ts     int64 // the heartbeat time, epoch milliseconds
	raw    []byte
	// tsAt and tsEnd delimit the ts digits in raw; tsEnd is 0 when raw has no unambiguous ts,
	// and every later value is decoded in full.
	tsAt, tsEnd int
}

// decodePresenceRow decodes and validates a presence value (wire.DecodePresence) for the cache.
func decodePresenceRow(key string, data []byte) (presenceRow, error) {
	p, err := wire.DecodePresence(key, data)
	if err != nil {
		return presenceRow{}, err
	}
	r := presenceRow{name: strings.ToLower(p.Card.Name), status: p.Status, ts: p.TS}
	if at, end, ok := locateTS(data); ok {
		if ts, err := strconv.ParseInt(string(data[at:end]), 10, 64); err == nil && ts == p.TS {
			r.raw, r.tsAt, r.tsEnd = bytes.Clone(data), at, end
		}
	}
	return r, nil
}

// heartbeat returns r with value's ts when value equals r's bytes but for the ts digits: such
// a value decodes and validates like r's, with another ts, so it needs no decoding.
func (r presenceRow) heartbeat(value []byte) (presenceRow, bool) {
	if r.tsEnd == 0 {
		return r, false
	}
	suffix := r.raw[r.tsEnd:]
	if len(value) <= r.tsAt+len(suffix) || !bytes.Equal(value[:r.tsAt], r.raw[:r.tsAt]) ||
		!bytes.HasSuffix(value, suffix) {
		return r, false
	}
	digits := value[r.tsAt : len(value)-len(suffix)]
	if !plainDigits(digits) {
		return r, false
	}
	ts, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return r, false
	}
	r.ts = ts
	return r, true
}

// live reports whether the row counts as present at time at: not offline, and heartbeating
// within the liveness window (SPEC §6).
func (r presenceRow) live(at time.Time) bool {
	return r.status != wire.StatusOffline && r.ts >= at.UnixMilli()-wire.DefaultLivenessWindow.Milliseconds()
}

// locateTS finds the digits of the top-level ts in a value that decoded. The value has no
// escape, so a quoted "ts" cannot hide inside another string or be spelled with escapes, and
// the key must occur once in any letter case, so that no decoder's key matching can pick
// another. Anything else is left to the decoder.
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
