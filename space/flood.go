package space

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A flood refills DM_<s> or TASK_<s> within a second or two of each reclaim, so the pass
// every ReconcileInterval alone would leave the store full, and every other agent's DM or
// anycast refused, for most of the time. Between passes the mesh therefore reads both stores'
// fill every Limits.FloodCheck and, past floodFill of a store's bytes, takes space back at
// once:
//
//   - DM_<s>: the reclaim of dmreclaim.go. A reclaim that finds the store past floodFill also
//     closes the connections of each sender of at least a quarter of the DMs to ids that are
//     no agent it takes back (and at least dmFlooderMin of them), naming it in the log and in
//     cotal_flooders_closed_total{kind="dm"}. An honest agent that mistypes an id does not
//     fill half the store with it.
//   - TASK_<s>: the tasks for roles no agent holds (taskreclaim.go), then each sender's tasks
//     past its share of the store (taskshare.go), kind "tasks".
//
// A flooder that reconnects and floods again is closed again.

// DefaultFloodCheck is Limits.FloodCheck's default: a stream read costs the broker well under
// a millisecond, and against a DM flooder that reconnects at once a check every 50 ms kept
// 96 % of another agent's DMs stored (one every 250 ms: 74 %).
const DefaultFloodCheck = 50 * time.Millisecond

// floodFill is the share of a store's max_bytes past which the mesh takes space back at once.
const floodFill = 0.5

// dmFlooderMin is the fewest DMs to ids that are no agent one reclaim must take back from a
// sender before the mesh closes that sender's connections.
const dmFlooderMin = 16

// watchFill takes space back in DM_<s> and TASK_<s> whenever a check finds one past
// floodFill, until ctx ends.
func (m *Mesh) watchFill(ctx context.Context, rt *spaceRuntime, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if rt.overFill(ctx, rt.names.DMStream()) {
			if _, err := m.reclaimDMs(ctx, rt); err != nil && ctx.Err() == nil {
				m.log.Warn("reclaiming a filling DM store failed; the next check tries again", "space", rt.name, "err", err)
			}
		}
		if rt.overFill(ctx, rt.names.TaskStream()) {
			if _, err := m.shareTasks(ctx, rt); err != nil && ctx.Err() == nil {
				m.log.Warn("taking back a filling task store failed; the next check tries again", "space", rt.name, "err", err)
			}
		}
	}
}

// overFill reports whether the stream named holds more than floodFill of its max_bytes.
func (rt *spaceRuntime) overFill(ctx context.Context, name string) bool {
	st, err := rt.stream(ctx, name)
	if err != nil {
		return false
	}
	info, err := st.Info(ctx)
	return err == nil && pastFill(info)
}

// pastFill reports whether a stream holds more than floodFill of its max_bytes.
func pastFill(info *jetstream.StreamInfo) bool {
	return info.Config.MaxBytes > 0 && float64(info.State.Bytes) > floodFill*float64(info.Config.MaxBytes)
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

// closeFlooders closes the connections of each sender tally counts and flooded reports, and
// counts it under kind; msg is logged, naming the sender, at most once per loggate.Interval.
func (m *Mesh) closeFlooders(rt *spaceRuntime, kind string, tally *senderTally, flooded func(id string, n int64) bool, msg string) {
	account, ok := m.agentAccount[rt.name]
	if !ok {
		return
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for id, n := range tally.n {
		if !flooded(id, n) {
			continue
		}
		closed := m.broker.DisconnectUser(account, id)
		c := rt.flooders(kind)
		c.Add(1)
		if rt.floodLog.Admit(time.Now()) {
			m.log.Warn(msg, "space", rt.name, "agent", m.credentialName(rt.name, id), "id", id, "deleted", n, "closed", closed, "times", c.Load())
		}
	}
}
