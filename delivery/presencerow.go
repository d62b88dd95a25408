package delivery

import (
	"strings"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// presenceRow is what the fan-out keeps of one presence row: what resolveMention reads, and
// the span of the bytes it was decoded from, so the next heartbeat, which changes only its ts,
// is taken without decoding the card again.
type presenceRow struct {
	name   string // the card's name, lowercased
	status wire.PresenceStatus
	ts     int64 // the heartbeat time, epoch milliseconds
	span   wire.HeartbeatSpan
}

// decodePresenceRow decodes and validates a presence value (wire.DecodePresence) for the cache.
func decodePresenceRow(key string, data []byte) (presenceRow, error) {
	p, err := wire.DecodePresence(key, data)
	if err != nil {
		return presenceRow{}, err
	}
	return presenceRow{name: strings.ToLower(p.Card.Name), status: p.Status, ts: p.TS,
		span: wire.NewHeartbeatSpan(data, p.TS)}, nil
}

// heartbeat returns r with value's ts when value equals r's bytes but for the ts digits: such
// a value decodes and validates like r's, with another ts, so it needs no decoding.
func (r presenceRow) heartbeat(value []byte) (presenceRow, bool) {
	ts, ok := r.span.Heartbeat(value)
	if ok {
		r.ts = ts
	}
	return r, ok
}

// live reports whether the row counts as present at time at: not offline, and heartbeating
// within the liveness window (SPEC §6).
func (r presenceRow) live(at time.Time) bool {
	return r.status != wire.StatusOffline && r.ts >= at.UnixMilli()-wire.DefaultLivenessWindow.Milliseconds()
}
