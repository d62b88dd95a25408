package space

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A flood of DMs to made-up ids refills DM_<s> within a second or two of each reclaim, so
// the pass every ReconcileInterval alone would leave the stream full, and every other
// agent's DM refused, for most of the time. Between passes the mesh therefore reads the
// stream's fill every Limits.DMFloodCheck and, past dmFloodFill of its bytes, reclaims at
// once (dmreclaim.go). A reclaim that finds the stream past dmFloodFill also closes the
// connections of each sender of at least a quarter of the DMs to ids that are no agent it
// takes back (and at least dmFlooderMin of them), naming it in the log and in
// cotal_flooders_closed_total{kind="dm"}. A flooder that reconnects and floods again is closed again;
// an honest agent that mistypes an id does not fill half the store with it.

// DefaultDMFloodCheck is Limits.DMFloodCheck's default: a stream read costs the broker well
// under a millisecond, and against a flooder that reconnects at once a check every 50 ms kept
// 96 % of another agent's DMs stored (one every 250 ms: 74 %).
const DefaultDMFloodCheck = 50 * time.Millisecond

// dmFloodFill is the share of DM_<s>'s max_bytes past which the mesh reclaims at once.
const dmFloodFill = 0.5

// dmFlooderMin is the fewest DMs to ids that are no agent one reclaim must take back from a
// sender before the mesh closes that sender's connections.
const dmFlooderMin = 16

// watchDMFill reclaims DM_<s> whenever a check finds it past dmFloodFill, until ctx ends.
func (m *Mesh) watchDMFill(ctx context.Context, rt *spaceRuntime, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !rt.dmOverFill(ctx) {
			continue
		}
		if _, err := m.reclaimDMs(ctx, rt); err != nil && ctx.Err() == nil {
			m.log.Warn("reclaiming a filling DM store failed; the next check tries again", "space", rt.name, "err", err)
		}
	}
}

// dmOverFill reports whether DM_<s> holds more than dmFloodFill of its max_bytes.
func (rt *spaceRuntime) dmOverFill(ctx context.Context) bool {
	st, err := rt.stream(ctx, rt.names.DMStream())
	if err != nil {
		return false
	}
	info, err := st.Info(ctx)
	return err == nil && overFill(info)
}

// overFill reports whether a DM stream holds more than dmFloodFill of its max_bytes.
func overFill(info *jetstream.StreamInfo) bool {
	return info.Config.MaxBytes > 0 && float64(info.State.Bytes) > dmFloodFill*float64(info.Config.MaxBytes)
}

// closeDMFlooders closes the connections of each sender of at least a quarter of the DMs
// strangers counts, and at least dmFlooderMin.
func (m *Mesh) closeDMFlooders(rt *spaceRuntime, strangers *senderTally) {
	strangers.mu.Lock()
	var total int64
	for _, n := range strangers.n {
		total += n
	}
	strangers.mu.Unlock()
	m.closeFlooders(rt, "dm", strangers, func(_ string, n int64) bool { return n >= dmFlooderMin && 4*n >= total },
		"closed the connections of an agent that flooded DMs to ids no credential was minted for")
}
