package endpoint_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// onlineIDs lists the ids r shows online.
func onlineIDs(r *endpoint.Roster) []string {
	var ids []string
	for _, p := range r.Snapshot() {
		if p.Online {
			ids = append(ids, p.Presence.Card.ID)
		}
	}
	return ids
}

func TestEndpointsOfOneMeshShareOneRosterWatch(t *testing.T) {
	m := spacetest.New(t)
	team := []string{"team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: team, AllowPublish: team})
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: team, AllowPublish: team})
	carol := meshAgent(t, m, admin.MintSpec{Name: "carol", AllowSubscribe: team, AllowPublish: team})
	all := []*peer{alice, bob, carol}
	await.True(t, settle, "every roster lists the three online", func() bool {
		for _, p := range all {
			if len(onlineIDs(p.Roster())) != 3 {
				return false
			}
		}
		return true
	})
	carriers := 0
	for _, p := range all {
		if endpoint.CarriesRoster(p.Endpoint) {
			carriers++
		}
	}
	if carriers != 1 {
		t.Fatalf("%d endpoints carry a presence watch, want one shared watch", carriers)
	}
	a, b := alice.Roster().Snapshot(), bob.Roster().Snapshot()
	if len(a) != len(b) {
		t.Fatalf("alice sees %d peers, bob %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Presence.Card.ID != b[i].Presence.Card.ID || a[i].Online != b[i].Online {
			t.Errorf("peer %d: alice sees %+v, bob %+v", i, a[i], b[i])
		}
	}
}

func TestClosingTheCarrierLeavesTheOtherRostersRunning(t *testing.T) {
	m := spacetest.New(t)
	team := []string{"team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: team, AllowPublish: team})
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: team, AllowPublish: team})
	await.True(t, settle, "bob sees alice", func() bool { p, ok := bob.Roster().Peer(alice.ID()); return ok && p.Online })
	carrier, other := alice, bob
	if endpoint.CarriesRoster(bob.Endpoint) {
		carrier, other = bob, alice
	}
	kept, cancelKept := other.Roster().Subscribe()
	defer cancelKept()
	lost, _ := carrier.Roster().Subscribe()
	rebuilds := other.Stats().WatchRebuilds
	if err := carrier.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for closed := false; !closed; { // the events sent before Close, then the end of the channel
		select {
		case _, open := <-lost:
			closed = !open
		case <-ctxT(t).Done():
			t.Fatal("the closed endpoint's subscription is still open")
		}
	}
	await.True(t, settle, "the carrier's final offline record", func() bool {
		p, ok := other.Roster().Peer(carrier.ID())
		return ok && !p.Online && p.Presence.Status == wire.StatusOffline
	})
	carol := meshAgent(t, m, admin.MintSpec{Name: "carol", AllowSubscribe: team, AllowPublish: team})
	if err := carol.SetStatus(ctxT(t), wire.StatusWorking, "after the handover"); err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the remaining roster sees carol's status", func() bool {
		p, ok := other.Roster().Peer(carol.ID())
		return ok && p.Online && p.Presence.Activity == "after the handover"
	})
	await.True(t, settle, "a fresh roster", other.Roster().Fresh)
	if !endpoint.CarriesRoster(other.Endpoint) && !endpoint.CarriesRoster(carol.Endpoint) {
		t.Error("no remaining endpoint carries the watch")
	}
	if got := other.Stats().WatchRebuilds; got != rebuilds {
		t.Errorf("a handover counted %d watch rebuilds", got-rebuilds)
	}
	for {
		select {
		case ev, open := <-kept:
			if !open {
				t.Fatal("the remaining endpoint's subscription was closed")
			}
			if ev.Kind == endpoint.PeerOnline && ev.Peer.Presence.Card.ID == carol.ID() {
				return
			}
		case <-ctxT(t).Done():
			t.Fatal("the remaining endpoint's subscription never told of carol")
		}
	}
}

// TestAJoiningMemberReadsARosterCaughtUpWithItsConnect: an Endpoint that joins a shared
// roster whose watch already runs reads, once its Loaded fires, every row the bucket held
// when it connected, not what the shared watch had applied by then. An observer writes no
// presence of its own, so nothing else holds its connect back until the watch caught up.
func TestAJoiningMemberReadsARosterCaughtUpWithItsConnect(t *testing.T) {
	m := spacetest.New(t)
	team := []string{"team"}
	meshAgent(t, m, admin.MintSpec{Name: "first", AllowSubscribe: team})
	var announced []string
	for round := range 5 {
		const agents = 10
		ids := make(chan string, agents)
		var wg sync.WaitGroup
		for i := range agents {
			wg.Go(func() {
				ids <- meshAgent(t, m, admin.MintSpec{Name: fmt.Sprintf("agent-%d-%d", round, i), AllowSubscribe: team}).ID()
			})
		}
		wg.Wait()
		close(ids)
		for id := range ids {
			announced = append(announced, id)
		}
		cred, err := admin.Mint(ctxT(t), m, admin.MintSpec{Space: "main", Name: fmt.Sprint("observer-", round), Profile: "observer", NoExpiry: true})
		if err != nil {
			t.Fatal(err)
		}
		late := meshConnect(t, m, cred)
		<-late.Roster().Loaded()
		seen := map[string]bool{}
		for _, p := range late.Roster().Snapshot() {
			seen[p.Presence.Card.ID] = true
		}
		for _, id := range announced {
			if !seen[id] {
				t.Fatalf("round %d: the late observer's loaded roster lacks %s of %d announced", round, id, len(announced))
			}
		}
	}
}
