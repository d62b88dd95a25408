package endpoint

import (
	"time"

	"github.com/cotal-go/cotal/wire"
)

// row is one presence key's state in a directory: the peer, and the span of the bytes it was
// decoded from, so the next heartbeat, which changes only its ts, is taken without decoding.
type row struct {
	peer Peer
	span wire.HeartbeatSpan
}

func newRow(p wire.Presence, value []byte, now time.Time, liveness time.Duration) *row {
	return &row{peer: Peer{Presence: p, LastSeen: time.UnixMilli(p.TS),
		Online: p.EffectiveStatus(now, liveness) != wire.StatusOffline}, span: wire.NewHeartbeatSpan(value, p.TS)}
}

// heartbeat reports whether value equals r's row but for the ts digits, and the new ts. Such a
// row decodes to the same presence with another ts, so it needs no decoding; a removed peer
// is decoded again, which clears Removed.
func (r *row) heartbeat(value []byte) (int64, bool) {
	if r.peer.Removed {
		return 0, false
	}
	return r.span.Heartbeat(value)
}
