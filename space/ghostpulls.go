package space

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/broker"
)

// Pull requests nobody holds (docs/durable.md "Pull requests nobody holds"). A pull of a
// bind-only durable crosses the agent account's service import, so the consumer sees it with
// a response subject of the storage account (_R_.…) and finds its requester through the
// import's response entry. A requester that unsubscribes before the consumer processes its
// pull (a pull followed at once by a drain) removes that entry first, and nats-server 2.15.2
// then tracks the request as interest in the response subject itself, which the storage
// account always has: the request waits to its expiry and each copy handed to it is lost
// until the ack wait. No API of the broker drops one waiting request. So the mesh:
//
//   - reads every pull of dm_, svc_ and dlv_ in the storage account (requests only: the
//     shared JetStream import names each one's connection) and remembers, per connection, the
//     response subjects of its pulls not yet expired;
//   - when a connection of the agent account ends, subscribes to each of those subjects until
//     the pull's expiry, so a copy the broker hands to such a request reaches the mesh, which
//     gives it back with a nak: at once while another connection pulls that durable, else
//     with a delay past the last such request's expiry, cut short by the next connection's
//     first pull of it;
//   - when no connection pulls a durable any more and the last one was ended by its client
//     (closed, drained, or its process gone; not a connection the server cut, whose client
//     may reconnect holding what it was handed), gives back what it still holds: svc_ (on
//     a work queue, where nothing acknowledged is kept) is deleted and made again, which also
//     drops every request waiting on it, so what it owes is pending again, unless another
//     holder bound meanwhile; dm_ and dlv_ (limits retention, whose acknowledgements only the
//     consumer knows) are naked sequence by sequence between the ack floor and the last
//     delivery, which the broker ignores for every sequence not delivered and unacknowledged,
//     even when one Endpoint of their owner bound meanwhile, whose dedup absorbs a copy it
//     gets twice.
//
// What is left: a copy handed to such a request in the moment between the requester's
// connection ending and the mesh's subscription, while another connection of the same
// durable (another holder of the role) stays, waits for the ack wait; copies sent right as a
// holder drains fall into it often (RELIABILITY.md "Known open").

const (
	// pullsPerConn bounds the pulls remembered per connection; the newest are kept, and a
	// drained pull is its connection's last.
	pullsPerConn = 256
	// unboundedPull is how long the mesh watches a pull that asked no expiry once its
	// requester is gone.
	unboundedPull = 10 * time.Minute
	// endedKept is how long an ended connection is remembered, for a pull of it read after
	// its end.
	endedKept = time.Minute
	// pruneEvery is how often the ledger forgets what it no longer needs.
	pruneEvery = 10 * time.Second
	// sweepMax bounds the sequences naked at once for one durable no connection pulls.
	sweepMax = 4096
	// nakLate is how far past the last watched request's expiry a held-back copy waits.
	nakLate = time.Second
)

// requestInfoHdr is nats-server's header naming the requester of a shared service import.
const requestInfoHdr = "Nats-Request-Info"

// connKey is one client connection: its server's name and its client id there.
type connKey struct {
	server string
	cid    uint64
}

// durableKey is one bind-only durable.
type durableKey struct{ stream, consumer string }

// endedConn is what the ledger keeps of a connection that ended.
type endedConn struct {
	at time.Time
	// byClient is whether its client ended it (closed, drained, or its process gone).
	byClient bool
}

// pullRec is one pull request of a connection.
type pullRec struct {
	reply   string
	durable durableKey
	expires time.Time
}

// pullLedger is what the mesh knows of the pulls of one space's agent account.
type pullLedger struct {
	mu      sync.Mutex
	byConn  map[connKey][]pullRec
	pullers map[durableKey]map[connKey]bool
	ended   map[connKey]endedConn
	// watched is, per durable, the latest expiry of a request it watches for a gone requester.
	watched map[durableKey]time.Time
	// pruned is when pruneLocked last ran.
	pruned time.Time
	// held are the ack subjects of copies given back with a delay, per durable, to give back
	// at once on its next puller's first pull.
	held map[durableKey][]string

	watchedN   atomic.Int64 // pulls of ended connections watched
	handedBack atomic.Int64 // copies a watched pull was handed, given back with a nak
	remade     atomic.Int64 // svc_ durables deleted and made again
	swept      atomic.Int64 // dm_ and dlv_ durables whose unacknowledged copies were naked
}

// outcomes are the ledger's counters by the outcome cotal_orphan_pulls_total names them.
func (l *pullLedger) outcomes() map[string]int64 {
	return map[string]int64{"watched": l.watchedN.Load(), "handed_back": l.handedBack.Load(),
		"remade": l.remade.Load(), "swept": l.swept.Load()}
}

func newPullLedger() *pullLedger {
	return &pullLedger{byConn: map[connKey][]pullRec{}, pullers: map[durableKey]map[connKey]bool{},
		ended: map[connKey]endedConn{}, watched: map[durableKey]time.Time{}, held: map[durableKey][]string{}}
}

// record notes pull r of connection c at now. It returns whether c had ended already (its
// disconnect read first) and, if so, whether r's durable is orphaned as end would have
// found it; else the held-back copies of r's durable to give back now that a connection
// pulls it again. The pull and the disconnect reach the mesh on different connections, so
// either may come first.
func (l *pullLedger) record(c connKey, r pullRec, now time.Time) (late, orphaned bool, release []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.ended[c]; ok {
		return true, e.byClient && len(l.pullers[r.durable]) == 0, nil
	}
	recs := l.byConn[c]
	live := recs[:0]
	for _, p := range recs {
		if p.expires.After(now) {
			live = append(live, p)
		}
	}
	if len(live) >= pullsPerConn {
		live = append(live[:0], live[len(live)-pullsPerConn+1:]...)
	}
	l.byConn[c] = append(live, r)
	set := l.pullers[r.durable]
	if set == nil {
		set = map[connKey]bool{}
		l.pullers[r.durable] = set
	}
	first := len(set) == 0
	set[c] = true
	if first {
		release = l.held[r.durable]
		delete(l.held, r.durable)
	}
	return false, false, release
}

// end notes that connection c ended at now, by its client or not, and returns its pulls not
// yet expired and, if its client ended it, the durables it pulled that no connection pulls
// any more. A connection the server cut is never orphaning: its client may come back on a
// new connection holding what it was handed, and giving that back would hand it to another
// holder too.
func (l *pullLedger) end(c connKey, now time.Time, byClient bool) (open []pullRec, orphaned []durableKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked(now)
	l.ended[c] = endedConn{at: now, byClient: byClient}
	seen := map[durableKey]bool{}
	for _, p := range l.byConn[c] {
		if p.expires.After(now) {
			open = append(open, p)
		}
		if seen[p.durable] {
			continue
		}
		seen[p.durable] = true
		set := l.pullers[p.durable]
		delete(set, c)
		if len(set) == 0 {
			delete(l.pullers, p.durable)
			if byClient {
				orphaned = append(orphaned, p.durable)
			}
		}
	}
	delete(l.byConn, c)
	return open, orphaned
}

// pruneLocked forgets, at most once per pruneEvery, the ended connections older than
// endedKept, and each connection whose pulls all expired more than endedKept ago: one whose
// end the mesh did not hear of, as a live agent pulls again well within every expiry. l.mu is
// held.
func (l *pullLedger) pruneLocked(now time.Time) {
	if now.Sub(l.pruned) < pruneEvery {
		return
	}
	l.pruned = now
	for k, e := range l.ended {
		if now.Sub(e.at) > endedKept {
			delete(l.ended, k)
		}
	}
	for c, recs := range l.byConn {
		newest := time.Time{}
		for _, p := range recs {
			if p.expires.After(newest) {
				newest = p.expires
			}
		}
		if now.Sub(newest) <= endedKept {
			continue
		}
		for _, p := range recs {
			if set := l.pullers[p.durable]; set != nil {
				delete(set, c)
				if len(set) == 0 {
					delete(l.pullers, p.durable)
				}
			}
		}
		delete(l.byConn, c)
	}
}

// watch notes that the mesh watches a request on d until expires.
func (l *pullLedger) watch(d durableKey, expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if expires.After(l.watched[d]) {
		l.watched[d] = expires
	}
}

// handBack gives back, on nc, the copy whose ack subject is ack: at once while a connection
// pulls d, else delayed past the last watched request of d and held for d's next puller.
// The nak is published under the lock, so that it cannot overtake the release of a first
// pull that came before it.
func (l *pullLedger) handBack(nc *nats.Conn, d durableKey, ack string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pullers[d]) > 0 {
		_ = nc.Publish(ack, []byte("-NAK"))
		return
	}
	until := l.watched[d]
	if !until.After(now) {
		_ = nc.Publish(ack, []byte("-NAK"))
		return
	}
	_ = nc.Publish(ack, nakDelay(until.Add(nakLate).Sub(now)))
	if len(l.held[d]) < sweepMax {
		l.held[d] = append(l.held[d], ack)
	}
}

// pullerCount is how many connections pull d.
func (l *pullLedger) pullerCount(d durableKey) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pullers[d])
}

// forget drops what the ledger holds back for d, which was made again.
func (l *pullLedger) forget(d durableKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, d)
	delete(l.watched, d)
}

// nakDelay is the body of a nak delayed by d.
func nakDelay(d time.Duration) []byte {
	return []byte(`-NAK {"delay":` + strconv.FormatInt(int64(d), 10) + `}`)
}

// requester is what the mesh reads of a Nats-Request-Info header.
type requester struct {
	Server string `json:"server"`
	ID     uint64 `json:"id"`
}

// pullRequest is what the mesh reads of a pull request's body.
type pullRequest struct {
	Expires int64 `json:"expires"`
}

// parsePull reads the requester and the pull of msg, a pull request of a bind-only durable
// as the storage account sees it.
func parsePull(msg *nats.Msg, now time.Time) (connKey, pullRec, bool) {
	stream, consumer, ok := pullTarget(msg.Subject)
	if !ok || !strings.HasPrefix(msg.Reply, "_R_.") || msg.Header == nil {
		return connKey{}, pullRec{}, false
	}
	var who requester
	if json.Unmarshal([]byte(msg.Header.Get(requestInfoHdr)), &who) != nil || who.ID == 0 {
		return connKey{}, pullRec{}, false
	}
	life := unboundedPull
	var req pullRequest
	if len(msg.Data) > 0 && msg.Data[0] == '{' && json.Unmarshal(msg.Data, &req) == nil && req.Expires > 0 {
		life = time.Duration(req.Expires)
	}
	return connKey{who.Server, who.ID}, pullRec{reply: msg.Reply, durable: durableKey{stream, consumer},
		expires: now.Add(life)}, true
}

// pullTarget splits $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>.
func pullTarget(subject string) (stream, consumer string, ok bool) {
	rest, ok := strings.CutPrefix(subject, "$JS.API.CONSUMER.MSG.NEXT.")
	if !ok {
		return "", "", false
	}
	stream, consumer, ok = strings.Cut(rest, ".")
	return stream, consumer, ok && consumer != "" && !strings.Contains(consumer, ".")
}

// bindOnlyStreams are the streams of the durables an agent binds and never creates.
func (rt *spaceRuntime) bindOnlyStreams() []string {
	return []string{rt.names.DMStream(), rt.names.TaskStream(), rt.names.DLVStream()}
}

// watchPulls records every pull of rt's bind-only durables in rt.pulls.
func (m *Mesh) watchPulls(rt *spaceRuntime) error {
	for _, s := range rt.bindOnlyStreams() {
		_, err := rt.prov.Subscribe("$JS.API.CONSUMER.MSG.NEXT."+s+".>", func(msg *nats.Msg) {
			now := time.Now()
			c, r, ok := parsePull(msg, now)
			if !ok {
				return
			}
			late, orphaned, release := rt.pulls.record(c, r, now)
			for _, ack := range release {
				_ = rt.prov.Publish(ack, []byte("-NAK"))
			}
			if late {
				// Its connection has ended already: a request nobody holds, watched and given
				// back as those the connection's end found.
				var gone []durableKey
				if orphaned {
					gone = []durableKey{r.durable}
				}
				m.ghostWork(rt, []pullRec{r}, gone)
			}
		})
		if err != nil {
			return fmt.Errorf("watch the pulls of %s: %w", s, err)
		}
	}
	return rt.prov.Flush()
}

// watchGhostPulls starts, for every space, the watch of its pulls and of the ends of its
// agents' connections, on every node of a cluster: only the node with the key store runs
// it, since only it has the spaces' accounts and provisioner connections. Without the key
// store an open mesh has no agent account, no import, and no such request.
func (m *Mesh) watchGhostPulls() error {
	if m.store == nil {
		return nil
	}
	bySpace := map[string]*spaceRuntime{}
	m.mu.Lock()
	for name, rt := range m.spaces {
		if acct, ok := m.agentAccount[name]; ok {
			bySpace[acct] = rt
		}
	}
	m.mu.Unlock()
	for _, rt := range bySpace {
		if err := m.watchPulls(rt); err != nil {
			return err
		}
	}
	err := m.broker.WatchDisconnects(func(d broker.Disconnect) {
		rt, ok := bySpace[d.Account]
		if !ok {
			return
		}
		open, orphaned := rt.pulls.end(connKey{d.Server, d.CID}, time.Now(), d.ClientClosed)
		if len(open) > 0 || len(orphaned) > 0 {
			m.ghostWork(rt, open, orphaned)
		}
	})
	if errors.Is(err, broker.ErrNoSystemUser) {
		m.log.Warn("the broker has no system user; a pull whose requester is gone may hold a copy until the ack wait")
		return nil
	}
	return err
}

// ghostWork watches open, the pulls of an ended connection, and gives back what each of
// orphaned, the durables no connection pulls any more, holds; on its own goroutine, so that
// the event that caused it holds up no other.
func (m *Mesh) ghostWork(rt *spaceRuntime, open []pullRec, orphaned []durableKey) {
	m.ghostMu.Lock()
	defer m.ghostMu.Unlock()
	if m.ghostsDone {
		return
	}
	m.ghosts.Add(1)
	go func() {
		defer m.ghosts.Done()
		watching := map[durableKey]bool{}
		for _, r := range open {
			if err := m.watchGhost(rt, r); err != nil {
				m.log.Warn("watching a pull whose requester is gone failed; a copy handed to it waits for the ack wait",
					"space", rt.name, "consumer", r.durable.consumer, "err", err)
				continue
			}
			watching[r.durable] = true
		}
		if err := rt.prov.Flush(); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(m.life, opTimeout)
		defer cancel()
		for _, d := range orphaned {
			task := d.stream == rt.names.TaskStream()
			if n := rt.pulls.pullerCount(d); (task && n > 0) || n > 1 {
				// Holders bound meanwhile: what they were handed is not to be given back, or
				// two of them could surface one message (another holder of a role, or two
				// Endpoints of one owner); what the watch above catches goes to them at once.
				// A single Endpoint of dm_'s or dlv_'s owner is swept past: what it gets twice,
				// its dedup absorbs.
				continue
			}
			var err error
			if task && watching[d] {
				err = m.remake(ctx, rt, d)
			} else {
				err = m.sweep(ctx, rt, d)
			}
			if err != nil && ctx.Err() == nil {
				m.log.Warn("giving back what a durable nobody pulls holds failed; it waits for the ack wait",
					"space", rt.name, "consumer", d.consumer, "err", err)
			}
		}
	}()
}

// stopGhostWork waits for every ghostWork begun and lets no other begin.
func (m *Mesh) stopGhostWork() {
	m.ghostMu.Lock()
	m.ghostsDone = true
	m.ghostMu.Unlock()
	m.ghosts.Wait()
}

// watchGhost subscribes to r's response subject until r expires (or the broker ends it), and
// gives back every copy the broker hands to it.
func (m *Mesh) watchGhost(rt *spaceRuntime, r pullRec) error {
	sub, err := rt.prov.Subscribe(r.reply, func(msg *nats.Msg) {
		if strings.HasPrefix(msg.Reply, "$JS.ACK.") {
			rt.pulls.handedBack.Add(1)
			rt.pulls.handBack(rt.prov, r.durable, msg.Reply, time.Now())
			return
		}
		// A status: 408 (expired) and 409 (consumer deleted, ...) end the request.
		if s := msg.Header.Get("Status"); s == "408" || s == "409" {
			_ = msg.Sub.Unsubscribe()
		}
	})
	if err != nil {
		return err
	}
	rt.pulls.watch(r.durable, r.expires)
	rt.pulls.watchedN.Add(1)
	time.AfterFunc(time.Until(r.expires)+nakLate, func() { _ = sub.Unsubscribe() })
	return nil
}

// remake deletes svc_ durable d and makes it again with the same config, once no connection
// pulls it: TASK is a work queue, so what was acknowledged is gone from the stream and
// what was not is pending again, and every request waiting on d, held or not, is dropped.
func (m *Mesh) remake(ctx context.Context, rt *spaceRuntime, d durableKey) error {
	cons, err := rt.js.Consumer(ctx, d.stream, d.consumer)
	if err != nil {
		return err
	}
	cfg := cons.CachedInfo().Config
	if err := rt.js.DeleteConsumer(ctx, d.stream, d.consumer); err != nil {
		return fmt.Errorf("delete %s: %w", d.consumer, err)
	}
	rt.pulls.forget(d)
	if _, err := rt.js.CreateOrUpdateConsumer(ctx, d.stream, cfg); err != nil {
		return fmt.Errorf("make %s again: %w", d.consumer, err)
	}
	rt.pulls.remade.Add(1)
	return nil
}

// sweep gives back every copy durable d delivered and nobody acknowledged, once the last
// connection pulling it ended: a nak for each stream sequence between its ack floor and its
// last delivery (at most sweepMax), which the broker ignores for a sequence not delivered and
// unacknowledged. One Endpoint of d's owner may have bound meanwhile and hold some of them;
// they come to it again, and its dedup acks what it handled without surfacing it twice
// (SPEC §4), while the rest does not wait out the ack wait.
func (m *Mesh) sweep(ctx context.Context, rt *spaceRuntime, d durableKey) error {
	cons, err := rt.js.Consumer(ctx, d.stream, d.consumer)
	if err != nil {
		return err
	}
	info := cons.CachedInfo()
	if info.NumAckPending == 0 {
		return nil
	}
	from, to := info.AckFloor.Stream+1, info.Delivered.Stream
	if to-from >= sweepMax {
		m.log.Warn("a durable nobody pulls holds copies too far apart to give back at once; the oldest wait for the ack wait",
			"space", rt.name, "consumer", d.consumer, "from", from, "to", to)
		from = to - sweepMax + 1
	}
	now := time.Now()
	for seq := from; seq <= to; seq++ {
		ack := fmt.Sprintf("$JS.ACK.%s.%s.1.%d.%d.0.0", d.stream, d.consumer, seq, info.Delivered.Consumer)
		rt.pulls.handBack(rt.prov, d, ack, now)
	}
	rt.pulls.swept.Add(1)
	return rt.prov.Flush()
}
