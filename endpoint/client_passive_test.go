package endpoint_test

import (
	"errors"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// An observer or admin credential holds no presence key and no consumer (SPEC Appendix B), so
// its Endpoint is passive: it reads the roster, channel history and live chat, never appears
// in the roster itself, and connects and closes without a refusal.
func TestObserverAndAdminEndpointsArePassiveReaders(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: general, AllowPublish: general})
	before, err := alice.Send(ctxT(t), "general", text("before the observer joined"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []provisioner.Profile{provisioner.ProfileObserver, provisioner.ProfileAdmin} {
		t.Run(string(p), func(t *testing.T) {
			rec := &recorder{}
			watcher, err := m.Endpoint(ctxT(t), space.AgentSpec{Name: "watch-" + string(p), Profile: p,
				Endpoint: endpoint.Options{Kind: wire.CardKindEndpoint, Handler: rec.handle}})
			if err != nil {
				t.Fatalf("connect a passive %s endpoint: %v", p, err)
			}
			res, err := watcher.Join(ctxT(t), "general")
			if err != nil || res.State != endpoint.JoinedLive || res.Backfilled < 1 {
				t.Fatalf("join: %+v, %v; want joined live with the history backfilled", res, err)
			}
			if got := rec.withID(before.ID); len(got) != 1 || !got[0].Meta.Historical {
				t.Fatalf("the earlier message: %+v, want one historical copy", got)
			}
			live, err := alice.Send(ctxT(t), "general", text("while the "+string(p)+" watches"))
			if err != nil {
				t.Fatal(err)
			}
			await.True(t, settle, "the live copy", func() bool { return len(rec.withID(live.ID)) == 1 })
			select {
			case <-watcher.Roster().Loaded():
			case <-ctxT(t).Done():
				t.Fatal("the passive roster never loaded")
			}
			if _, ok := watcher.Roster().Peer(alice.ID()); !ok {
				t.Fatal("alice, present before the watcher connected, is missing from its loaded roster")
			}
			if _, ok := alice.Roster().Peer(watcher.ID()); ok {
				t.Fatalf("the passive %s appears in alice's roster", p)
			}
			if err := watcher.SetStatus(ctxT(t), wire.StatusWorking, "x"); !errors.Is(err, endpoint.ErrPassive) {
				t.Fatalf("SetStatus on a passive endpoint: %v, want ErrPassive", err)
			}
			if err := watcher.Close(ctxT(t)); err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}
