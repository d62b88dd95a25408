package endpoint

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/retry"
	"github.com/cotal-go/cotal/wire"
)

// run keeps a watch on the presence bucket until ctx ends, on a connected member's connection,
// rebuilding it when it dies or stalls (including after a reconnect that lost its consumer)
// and moving it when its carrier leaves.
func (d *directory) run(ctx context.Context) {
	defer close(d.done)
	defer d.releaseAll()
	backoff := retry.NewBackoff(250*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		c, wctx, finish := d.nextWatch(ctx)
		if c == nil {
			backoff.Wait(ctx)
			continue
		}
		w, err := c.presenceKV.WatchAll(wctx)
		if err != nil {
			finish()
			if wctx.Err() == nil {
				c.log.Warn("presence watch failed; retrying", "err", err)
				backoff.Wait(ctx)
			}
			continue
		}
		backoff.Reset()
		reason := d.follow(wctx, c, w)
		_ = w.Stop()
		handover := wctx.Err() != nil
		finish()
		if !handover {
			d.countRebuild()
			c.log.Info("rebuilding the presence watch", "reason", reason)
		}
	}
}

// nextWatch picks the carrier of the next watch: the current one while it is connected, else
// any connected member. finish must be called once the watch has stopped; it wakes a leave
// waiting for the carrier's watch.
func (d *directory) nextWatch(ctx context.Context) (*Endpoint, context.Context, func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.carrier
	if c == nil || !c.nc.IsConnected() {
		c = nil
		for m := range d.members {
			if m.nc.IsConnected() {
				c = m
				break
			}
		}
	}
	if c == nil {
		return nil, nil, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	d.carrier, d.endWatch, d.watchDone = c, cancel, done
	d.watchStart = time.Now()
	d.lastUpdate = d.watchStart // for initialLoadWait
	clear(d.unseen)
	return c, wctx, func() {
		cancel()
		d.mu.Lock()
		d.watching = false
		d.mu.Unlock()
		close(done)
	}
}

// countRebuild counts one rebuilt watch on every member (Stats.WatchRebuilds).
func (d *directory) countRebuild() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for m := range d.members {
		m.stats.rebuilds.Add(1)
	}
}

// follow applies watch updates and sweeps stale peers until the watch ends, stalls, or ctx
// ends, and says why it stopped. The watch has stalled when a member's heartbeat, written
// while the carrier is connected, is not seen within two heartbeats, or when it has delivered
// nothing for initialLoadWait before its initial values (stalledLocked).
func (d *directory) follow(ctx context.Context, c *Endpoint, w jetstream.KeyWatcher) string {
	tick := time.NewTicker(d.heartbeat / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "closing"
		case entry, ok := <-w.Updates():
			if !ok {
				return "watch closed"
			}
			if entry == nil {
				d.setWatching()
				continue
			}
			d.apply(c, entry)
		case now := <-tick.C:
			d.mu.Lock()
			d.sweepLocked(now)
			d.releaseLocked(now)
			stalled := d.stalledLocked(now)
			d.mu.Unlock()
			if stalled != "" && c.nc.IsConnected() {
				return stalled
			}
		}
	}
}

// initialLoadWait is how long a new watch may deliver nothing before its initial values are
// in. A watch whose consumer create was lost (as happens to JetStream requests crossing the
// storage import while the broker applies an account update) would otherwise never load, and
// a passive Endpoint writes no heartbeat whose absence would tell.
const initialLoadWait = 3 * time.Second

// stalledLocked says why the watch has stalled, or "": a member's own heartbeat unseen for two
// heartbeats, or no entry for initialLoadWait before the initial values are in.
func (d *directory) stalledLocked(now time.Time) string {
	if !d.watching && now.Sub(d.lastUpdate) > initialLoadWait {
		return "no initial values within " + initialLoadWait.String()
	}
	for _, at := range d.unseen {
		if now.Sub(at) > 2*d.heartbeat {
			return "own heartbeat not seen for two heartbeats"
		}
	}
	return ""
}

func (d *directory) setWatching() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.watching = true
	d.lastUpdate = time.Now()
	d.once.Do(func() { close(d.loaded) })
	d.releaseLocked(d.lastUpdate)
}

// apply folds one watch entry into the directory. A delete or purge marks the peer offline at
// once; a row that differs from the last one only in its ts is taken without decoding; any
// other row that is not a valid Presence under its own key is dropped and counted (SPEC §6;
// docs/hostile-agents.md "Reply subjects are the requester's").
func (d *directory) apply(c *Endpoint, entry jetstream.KeyValueEntry) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastUpdate = now
	if rev := entry.Revision(); rev > d.applied {
		d.applied = rev
		d.releaseLocked(now)
	}
	key := entry.Key()
	delete(d.unseen, key)
	prev, known := d.rows[key]
	if op := entry.Operation(); op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge {
		if known {
			wasOnline := prev.peer.Online
			prev.peer.Online, prev.peer.Removed = false, true
			if wasOnline {
				d.publishLocked(RosterEvent{Kind: PeerOffline, Peer: prev.peer})
			}
		}
		return
	}
	if known {
		if ts, ok := prev.heartbeat(entry.Value()); ok {
			d.beatLocked(prev, ts, now)
			return
		}
	}
	p, err := wire.DecodePresence(key, entry.Value())
	if err != nil {
		for m := range d.members {
			m.stats.presenceDropped.Add(1)
		}
		c.log.Debug("dropped an invalid presence row", "key", key, "err", err)
		return
	}
	next := newRow(*p, entry.Value(), now, d.liveness)
	d.rows[key] = next
	switch {
	case next.peer.Online && (!known || !prev.peer.Online):
		d.publishLocked(RosterEvent{Kind: PeerOnline, Peer: next.peer})
	case !next.peer.Online && known && prev.peer.Online:
		d.publishLocked(RosterEvent{Kind: PeerOffline, Peer: next.peer})
	case next.peer.Online && changed(prev.peer.Presence, next.peer.Presence):
		d.publishLocked(RosterEvent{Kind: PeerUpdated, Peer: next.peer})
	}
}

// beatLocked takes a heartbeat that changed nothing but the ts of r's row.
func (d *directory) beatLocked(r *row, ts int64, now time.Time) {
	wasOnline := r.peer.Online
	r.peer.Presence.TS = ts
	r.peer.LastSeen = time.UnixMilli(ts)
	r.peer.Online = r.peer.Presence.EffectiveStatus(now, d.liveness) != wire.StatusOffline
	switch {
	case r.peer.Online && !wasOnline:
		d.publishLocked(RosterEvent{Kind: PeerOnline, Peer: r.peer})
	case !r.peer.Online && wasOnline:
		d.publishLocked(RosterEvent{Kind: PeerOffline, Peer: r.peer})
	}
}
