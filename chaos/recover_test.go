package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"

	"github.com/cotal-go/cotal/internal/await"
)

// recovery is how long after a kill each part of an endpoint's state worked again.
type recovery struct {
	reconnect, presence, live, dm, anycast, backstop []time.Duration
}

// TestEndpointsRecoverFromMeshRestarts kills the mesh under two endpoints connected over TCP
// and restarts it on the same directory and port, tier.restarts times. After each restart
// every part of their state must come back (SPEC §6, §7, §8): the connection, presence in the
// other's roster, the live channel subscription (a probe surfaces live, not from the
// backstop), the bound DM and anycast consumers, and the durable backstop behind the live copy.
// The time to each is the figure.
func TestEndpointsRecoverFromMeshRestarts(t *testing.T) {
	t.Parallel()
	b := binaries(t)
	dir := t.TempDir()
	aliceCred := mintCLI(t, b, dir, "alice", "--subscribe", "ops", "--allow-publish", "ops")
	bobCred := mintCLI(t, b, dir, "bob", "--subscribe", "ops", "--role", "oncall")
	mesh := startMesh(t, b, dir)
	s := newSink()
	fast := func(o *endpoint.Options) {
		o.Channels, o.Heartbeat, o.LivenessWindow = []string{"ops"}, 250*time.Millisecond, 1500*time.Millisecond
	}
	alice := connectTCP(t, mesh.Link(), aliceCred, s.handler(aliceCred.ID, "alice"), fast)
	bob := connectTCP(t, mesh.Link(), bobCred, s.handler(bobCred.ID, "bob"), fast)
	joinedDurable(t, alice, "ops")
	joinedDurable(t, bob, "ops")

	var rec recovery
	for range tier.restarts {
		killed := time.Now()
		mesh.restart()
		rec.add(t, killed, alice, bob, s)
	}
	record(t, fmt.Sprintf("endpoints recover from mesh kill -9 ×%d", tier.restarts), joinNotes(
		"reconnected "+durations(rec.reconnect), "presence back in the peer's roster "+durations(rec.presence),
		"live subscription "+durations(rec.live), "DM consumer "+durations(rec.dm),
		"anycast consumer "+durations(rec.anycast), "durable backstop "+durations(rec.backstop),
		"all measured from the kill; the mesh was down "+durations(mesh.restarts)))
	for _, ep := range []*endpoint.Endpoint{alice, bob} {
		if err := ep.Err(); err != nil {
			t.Errorf("%s stopped: %v", ep.Name(), err)
		}
	}
}

// recoverWithin bounds each recovery; missing it means the part did not come back.
const recoverWithin = 90 * time.Second

// add measures one restart: each part, in turn, from the kill until it works.
func (r *recovery) add(t *testing.T, killed time.Time, alice, bob *endpoint.Endpoint, s *sink) {
	t.Helper()
	since := func() time.Duration { return time.Since(killed) }
	await.True(t, recoverWithin, "both endpoints reconnected", func() bool {
		return alice.Connected() && bob.Connected()
	})
	r.reconnect = append(r.reconnect, since())
	await.True(t, recoverWithin, "each endpoint online in the other's roster", func() bool {
		a, okA := bob.Roster().Peer(alice.ID())
		b, okB := alice.Roster().Peer(bob.ID())
		return okA && okB && a.Online && b.Online && a.LastSeen.After(killed) && b.LastSeen.After(killed)
	})
	r.presence = append(r.presence, since())
	before := bob.Stats().Duplicates
	probe(t, "a live channel copy", func(ctx context.Context, n int) (string, error) {
		rc, err := alice.Send(ctx, "ops", text(fmt.Sprintf("live probe %d", n)))
		return rc.ID, err
	}, func(id string) bool {
		for _, m := range s.metas(id) {
			if !m.Durable && !m.Historical {
				return true
			}
		}
		return false
	})
	r.live = append(r.live, since())
	await.True(t, recoverWithin, "the durable copy behind a live probe", func() bool { return bob.Stats().Duplicates > before })
	r.backstop = append(r.backstop, since())
	surfaced := func(id string) bool { return len(s.metas(id)) > 0 }
	probe(t, "a DM", func(ctx context.Context, n int) (string, error) {
		rc, err := alice.SendDM(ctx, bob.ID(), text(fmt.Sprintf("dm probe %d", n)))
		return rc.ID, err
	}, surfaced)
	r.dm = append(r.dm, since())
	probe(t, "an anycast", func(ctx context.Context, n int) (string, error) {
		rc, err := alice.SendAnycast(ctx, "oncall", text(fmt.Sprintf("anycast probe %d", n)))
		return rc.ID, err
	}, surfaced)
	r.anycast = append(r.anycast, since())
}

// probe sends a fresh probe every 100 ms until one of them is seen to arrive.
func probe(t *testing.T, what string, send func(context.Context, int) (string, error), arrived func(id string) bool) {
	t.Helper()
	var ids []string
	n := 0
	anyArrived := func() bool {
		for _, id := range ids {
			if arrived(id) {
				return true
			}
		}
		return false
	}
	// Each look sends one probe and gives every probe sent so far 100 ms to arrive, so the
	// looks follow each other without a pause of their own.
	await.Check(t, recoverWithin, 0, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n++
		id, err := send(ctx, n)
		cancel()
		if err == nil {
			ids = append(ids, id)
		}
		if await.Until(100*time.Millisecond, anyArrived) {
			return nil
		}
		return fmt.Errorf("no probe of %s arrived after the restart (%d sent)", what, len(ids))
	})
}
