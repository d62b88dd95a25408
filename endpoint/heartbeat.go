package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/wire"
)

// ErrOfflineStatus: SetStatus was asked to announce offline, which a live instance never
// heartbeats (SPEC §6); Close announces it once.
var ErrOfflineStatus = errors.New("a live instance never announces offline; Close does")

// presenceState is what the heartbeat announces. mu also orders presence writes, so a final
// offline record is never followed by a heartbeat.
type presenceState struct {
	mu           sync.Mutex
	status       wire.PresenceStatus
	activity     string
	attention    wire.AttentionMode
	channelModes map[string]wire.ChannelMode
	final        bool // the final offline record is written or being written
	// row is the record as last encoded with ts 0, for rowStatus, cut before the ts digits; a
	// heartbeat appends its ts and the closing brace instead of encoding the record again.
	// SetStatus and SetAttention clear it.
	row       []byte
	rowStatus wire.PresenceStatus
}

// tsTail is how json.Marshal ends a Presence with ts 0: ts is its last field.
const tsTail = `"ts":0}`

func (p *presenceState) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.final = true
}

// heartbeatLoop refreshes the instance's own presence key every Heartbeat on its own timer,
// independent of any Handler (SPEC §6).
func (e *Endpoint) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(e.opts.Heartbeat)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.heartbeat(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			e.log.Warn("presence heartbeat failed; peers will see this instance offline", "err", err)
			failing = true
		case err == nil && failing:
			e.log.Info("presence heartbeat recovered")
			failing = false
		}
	}
}

// heartbeat is one tick's write. While the connection is down it is skipped: the write could
// only wait out its timeout holding the presence lock, and so hold up a Close that arrives
// meanwhile by as long.
func (e *Endpoint) heartbeat(ctx context.Context) error {
	if !e.nc.IsConnected() {
		return nats.ErrDisconnected
	}
	wctx, cancel := context.WithTimeout(ctx, e.opts.Heartbeat)
	defer cancel()
	return e.writePresence(wctx)
}

// writePresence writes the current presence to the instance's own key, key = card.id, with ts
// now (SPEC §6). It never writes after the final offline record.
func (e *Endpoint) writePresence(ctx context.Context) error {
	e.pres.mu.Lock()
	defer e.pres.mu.Unlock()
	if e.pres.final {
		return ErrClosed
	}
	return e.putPresence(ctx, e.pres.status)
}

// writeFinalPresence stops the heartbeat and writes the one offline record a graceful
// disconnect may publish (SPEC §6).
// finalPresenceTimeout bounds the final offline write of Close.
const finalPresenceTimeout = 2 * time.Second

func (e *Endpoint) writeFinalPresence(ctx context.Context) error {
	e.pres.mu.Lock()
	defer e.pres.mu.Unlock()
	if e.pres.final {
		return nil
	}
	e.pres.final = true
	// SPEC §6: the final offline is optional, and peers derive offline from the stale ts
	// anyway; waiting on a connection that is not up would only make Close hang.
	if e.presenceKV == nil || !e.nc.IsConnected() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, finalPresenceTimeout)
	defer cancel()
	return e.putPresence(ctx, wire.StatusOffline)
}

// putPresence writes one record; e.pres.mu is held.
func (e *Endpoint) putPresence(ctx context.Context, status wire.PresenceStatus) error {
	data, err := e.encodePresence(status, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	if _, err := e.presenceKV.Put(ctx, e.id, data); err != nil {
		return err
	}
	if e.roster != nil {
		e.roster.ownWritten(time.Now())
	}
	return nil
}

// encodePresence encodes the record with status and ts, reusing the last encoding when only
// the ts changed; e.pres.mu is held.
func (e *Endpoint) encodePresence(status wire.PresenceStatus, ts int64) ([]byte, error) {
	if e.pres.row == nil || e.pres.rowStatus != status {
		p := wire.Presence{Card: e.card, Status: status, Activity: e.pres.activity,
			Attention: e.pres.attention, ChannelModes: e.pres.channelModes}
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode presence: %w", err)
		}
		if !bytes.HasSuffix(data, []byte(tsTail)) {
			p.TS = ts
			data, err = json.Marshal(p)
			if err != nil {
				return nil, fmt.Errorf("encode presence: %w", err)
			}
			return data, nil
		}
		e.pres.row, e.pres.rowStatus = data[:len(data)-len(tsTail)+len(`"ts":`)], status
	}
	data := make([]byte, 0, len(e.pres.row)+20)
	data = append(data, e.pres.row...)
	data = strconv.AppendInt(data, ts, 10)
	return append(data, '}'), nil
}

// SetStatus announces status and activity now and in every later heartbeat (SPEC §6).
// StatusOffline is refused with ErrOfflineStatus.
func (e *Endpoint) SetStatus(ctx context.Context, status wire.PresenceStatus, activity string) error {
	switch status {
	case wire.StatusIdle, wire.StatusWaiting, wire.StatusWorking:
	case wire.StatusOffline:
		return ErrOfflineStatus
	default:
		return fmt.Errorf("%w: status %q is not idle, waiting or working", wire.ErrInvalidPresence, status)
	}
	if e.passive {
		return ErrPassive
	}
	e.pres.mu.Lock()
	e.pres.status, e.pres.activity, e.pres.row = status, activity, nil
	e.pres.mu.Unlock()
	return e.writePresence(ctx)
}

// SetAttention announces the global attention mode and per-channel overrides now and in every
// later heartbeat (SPEC §6). They are advisory: delivery is unchanged. nil modes clears the
// overrides.
func (e *Endpoint) SetAttention(ctx context.Context, mode wire.AttentionMode, modes map[string]wire.ChannelMode) error {
	p := wire.Presence{Card: e.card, Status: wire.StatusIdle, Attention: mode, ChannelModes: modes}
	if err := p.Validate(); err != nil {
		return err
	}
	if e.passive {
		return ErrPassive
	}
	e.pres.mu.Lock()
	e.pres.attention, e.pres.channelModes, e.pres.row = mode, maps.Clone(modes), nil
	e.pres.mu.Unlock()
	return e.writePresence(ctx)
}
