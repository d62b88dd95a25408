package space

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// The per-identity watch cap (docs/hostile-agents.md "Bounded shares"). The presence and
// channel-registry buckets cap their consumers (Limits.WatchConsumers) because agents create
// their own watches there, and without a share per identity one agent holding busy pull
// consumers would take the whole cap. JetStream does not record who created a consumer, but the
// agent account imports the JetStream API with the requester's identity shared
// (wire.SharedServiceSubject), so the API audit of each create names the user. The ledger
// remembers it, and each identity keeps at most Limits.WatchesPerIdentity consumers per bucket:
// past it those nobody reads go first, then the oldest.
//
// What it does not know: consumers created before this run of the mesh (a restart forgets the
// ledger) count against the bucket's cap but no identity's, until they go idle for
// wire.WatchInactiveLimit.

// watchLedger remembers which identity created each consumer of the watched buckets, in the
// order of creation.
type watchLedger struct {
	mu     sync.Mutex
	next   uint64
	owners map[string]map[string]watchEntry // stream -> consumer -> its creator
	logged map[string]bool                  // identities whose excess was logged
}

type watchEntry struct {
	creator string
	order   uint64
}

// record notes that creator created (or updated) consumer name on stream. An update keeps
// the consumer's place in the order.
func (l *watchLedger) record(stream, name, creator string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owners == nil {
		l.owners, l.logged = map[string]map[string]watchEntry{}, map[string]bool{}
	}
	byName := l.owners[stream]
	if byName == nil {
		byName = map[string]watchEntry{}
		l.owners[stream] = byName
	}
	if e, ok := byName[name]; ok && e.creator == creator {
		return
	}
	l.next++
	byName[name] = watchEntry{creator: creator, order: l.next}
}

// held returns the consumers creator holds on stream, oldest first.
func (l *watchLedger) held(stream, creator string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for name, e := range l.owners[stream] {
		if e.creator == creator {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return int(l.owners[stream][a].order) - int(l.owners[stream][b].order)
	})
	return names
}

// creators returns every identity the ledger knows on stream.
func (l *watchLedger) creators(stream string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, e := range l.owners[stream] {
		if !seen[e.creator] {
			seen[e.creator] = true
			out = append(out, e.creator)
		}
	}
	return out
}

// mark returns the ledger's position, for keepLive.
func (l *watchLedger) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// keepLive forgets every consumer of stream recorded up to mark that is not in live, a listing
// begun after mark: deleted by its owner, idle past its inactive threshold, or taken by the
// reconciler. One recorded after mark may be missing from the listing only because it is new.
func (l *watchLedger) keepLive(stream string, live map[string]bool, mark uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, e := range l.owners[stream] {
		if e.order <= mark && !live[name] {
			delete(l.owners[stream], name)
		}
	}
}

// forget drops name from the ledger of stream.
func (l *watchLedger) forget(stream, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.owners[stream], name)
}

// firstExcess reports whether creator's excess has not been logged yet, and marks it logged.
func (l *watchLedger) firstExcess(creator string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logged[creator] {
		return false
	}
	l.logged[creator] = true
	return true
}

// watchedStreams are the buckets whose consumers are capped per identity: presence and the
// channel registry, where agents create their own watches (wire.StreamLimits.WatchConsumers).
func (rt *spaceRuntime) watchedStreams() []string {
	return []string{wire.KVStream(rt.names.PresenceBucket()), wire.KVStream(rt.names.ChannelsBucket())}
}

// capWatches deletes the consumers creator holds on stream past the per-identity cap (see
// pastCap for which), and logs the first time an identity goes past it. Only identities of the registry
// are capped; the mesh's own connections are not in it. The caller holds rt.mintMu.
func (m *Mesh) capWatches(ctx context.Context, rt *spaceRuntime, stream, creator string, recs []provisioner.Record) error {
	limit := m.opts.Limits.WatchesPerIdentity
	held := rt.watches.held(stream, creator)
	if len(held) <= limit {
		return nil
	}
	i := slices.IndexFunc(recs, func(r provisioner.Record) bool { return r.ID == creator })
	if i < 0 {
		return nil
	}
	// Some may be gone already; count only the consumers that still exist.
	s, ok := rt.streams[stream]
	if !ok {
		return nil
	}
	mark := rt.watches.mark()
	live, inUse := map[string]bool{}, map[string]bool{}
	list := s.ListConsumers(ctx)
	for info := range list.Info() {
		live[info.Name] = true
		inUse[info.Name] = info.PushBound || info.NumWaiting > 0
	}
	if err := list.Err(); err != nil {
		return fmt.Errorf("list the consumers of %s: %w", stream, err)
	}
	rt.watches.keepLive(stream, live, mark)
	if held = rt.watches.held(stream, creator); len(held) <= limit {
		return nil
	}
	excess := pastCap(held, inUse, limit)
	if rt.watches.firstExcess(creator) {
		m.log.Warn("an agent holds more watches than limits.watches_per_identity; deleting each one past it",
			"space", rt.name, "agent", recs[i].Name, "id", creator, "stream", stream,
			"limit", limit, "held", len(held))
	}
	for _, name := range excess {
		if err := rt.js.DeleteConsumer(ctx, stream, name); err != nil {
			return fmt.Errorf("delete consumer %s on %s past %s's watch cap: %w", name, stream, recs[i].Name, err)
		}
		rt.watches.forget(stream, name)
		rt.reconciled.deleted.Add(1)
	}
	return nil
}

// pastCap picks, from held (oldest first), the consumers to delete so that limit remain: first
// those nobody reads (no subscriber bound to a push consumer, no pull waiting on a pull
// one), oldest first, then the oldest of the rest. A client that restarts leaves its old
// watches behind unread, so its new one, read, is the last to go.
func pastCap(held []string, inUse map[string]bool, limit int) []string {
	n := len(held) - limit
	if n <= 0 {
		return nil
	}
	victims := make([]string, 0, n)
	for _, read := range []bool{false, true} {
		for _, name := range held {
			if len(victims) < n && inUse[name] == read {
				victims = append(victims, name)
			}
		}
	}
	return victims
}

// capAllWatches applies capWatches to every identity the ledger knows, as the periodic pass
// does for creates the on-create check did not reach. The caller holds rt.mintMu.
func (m *Mesh) capAllWatches(ctx context.Context, rt *spaceRuntime, recs []provisioner.Record) error {
	for _, stream := range rt.watchedStreams() {
		for _, creator := range rt.watches.creators(stream) {
			if err := m.capWatches(ctx, rt, stream, creator, recs); err != nil {
				return err
			}
		}
	}
	return nil
}
