package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// meshAgent mints an agent credential in the authenticated test mesh (with its bind-only
// consumers) and connects an Endpoint with it in process, closed at cleanup.
func meshAgent(t *testing.T, m *space.Mesh, spec admin.MintSpec, configure ...func(*endpoint.Options)) *peer {
	t.Helper()
	return meshConnect(t, m, meshMint(t, m, spec), configure...)
}

func meshMint(t *testing.T, m *space.Mesh, spec admin.MintSpec) *admin.MintedCredential {
	t.Helper()
	spec.Space, spec.Profile, spec.NoExpiry = "main", "agent", true
	cred, err := admin.Mint(ctxT(t), m, spec)
	if err != nil {
		t.Fatalf("mint %s: %v", spec.Name, err)
	}
	return cred
}

func meshConnect(t *testing.T, m *space.Mesh, cred *admin.MintedCredential, configure ...func(*endpoint.Options)) *peer {
	t.Helper()
	rec := &recorder{}
	opts := endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: cred.Creds, Handler: rec.handle,
		Heartbeat: 500 * time.Millisecond}
	for _, c := range configure {
		c(&opts)
	}
	e, err := endpoint.Connect(ctxT(t), opts)
	if err != nil {
		t.Fatalf("connect %s: %v", cred.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close %s: %v", cred.Name, err)
		}
	})
	if e.ID() != cred.ID {
		t.Fatalf("%s connected as %s, the credential is %s", cred.Name, e.ID(), cred.ID)
	}
	return &peer{Endpoint: e, rec: rec}
}

// TestClientInteropScenarioOnAnAuthenticatedMesh runs SPEC §12's interop scenario with minted
// credentials and the broker enforcing Appendix B.
func TestClientInteropScenarioOnAnAuthenticatedMesh(t *testing.T) {
	m := spacetest.New(t)
	team := []string{"team.backend"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", Role: "planner", AllowSubscribe: team, AllowPublish: team})
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: team, AllowPublish: team})
	r1 := meshAgent(t, m, admin.MintSpec{Name: "reviewer-1", Role: "reviewer"})
	r2 := meshAgent(t, m, admin.MintSpec{Name: "reviewer-2", Role: "reviewer"})

	for _, p := range []*peer{alice, bob} {
		res, err := p.Join(ctxT(t), "team.backend")
		if err != nil {
			t.Fatalf("%s join: %v", p.Name(), err)
		}
		if res.Class != wire.DeliveryDurable {
			t.Errorf("%s: class %s, want the authenticated mesh's default durable", p.Name(), res.Class)
		}
	}
	await.True(t, settle, "bob sees alice in presence", func() bool { p, ok := bob.Roster().Peer(alice.ID()); return ok && p.Online })

	multi, err := alice.Send(ctxT(t), "team.backend", text("can you review this?"), endpoint.WithMentions("bob"))
	if err != nil {
		t.Fatal(err)
	}
	dm, err := alice.SendDM(ctxT(t), bob.ID(), text("direct note"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "bob's channel message and DM", func() bool {
		return len(bob.rec.withID(multi.ID)) == 1 && len(bob.rec.withID(dm.ID)) == 1
	})
	if k := bob.rec.withID(multi.ID)[0].Meta.Kind; k != endpoint.MetaChannel {
		t.Errorf("multicast arrived as %s", k)
	}
	if k := bob.rec.withID(dm.ID)[0].Meta.Kind; k != endpoint.MetaDM {
		t.Errorf("unicast arrived as %s", k)
	}

	task, err := alice.SendAnycast(ctxT(t), "reviewer", text("review PR 7"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "one reviewer gets the task", func() bool { return len(r1.rec.withID(task.ID))+len(r2.rec.withID(task.ID)) == 1 })

	late := meshAgent(t, m, admin.MintSpec{Name: "late", AllowSubscribe: team})
	res, err := late.Join(ctxT(t), "team.backend")
	if err != nil {
		t.Fatal(err)
	}
	if res.Backfilled != 1 || res.BackfillErr != nil {
		t.Fatalf("late join %+v, want the one earlier message backfilled through chathist", res)
	}
	if got := late.rec.withID(multi.ID); len(got) != 1 || !got[0].Meta.Historical {
		t.Fatalf("late joiner got %+v, want one historical copy", got)
	}
}

func TestJoinOutsideTheReadACLIsRefusedByTheBroker(t *testing.T) {
	m := spacetest.New(t)
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: []string{"team"}})
	_, err := bob.Join(ctxT(t), "secret")
	if !errors.Is(err, endpoint.ErrJoinRefused) {
		t.Fatalf("join outside the ACL: %v, want ErrJoinRefused", err)
	}
	if got := bob.Joined(); len(got) != 0 {
		t.Fatalf("joined %v after a refused join, want none", got)
	}
	if _, err := bob.Join(ctxT(t), "team"); err != nil {
		t.Fatalf("join inside the ACL after a refusal: %v", err)
	}
}

func TestSendOutsideThePublishACLIsRefused(t *testing.T) {
	m := spacetest.New(t)
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: []string{"team"}})
	if _, err := bob.Send(ctxT(t), "team", text("read-only here")); !errors.Is(err, endpoint.ErrPublishRefused) {
		t.Fatalf("publish outside allowPublish: %v, want ErrPublishRefused", err)
	}
	p, err := bob.SendAsync("team", text("read-only here too"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctxT(t)); !errors.Is(err, endpoint.ErrPublishRefused) {
		t.Fatalf("asynchronous publish outside allowPublish: %v, want ErrPublishRefused", err)
	}
	if _, err := bob.Request(ctxT(t), "admin", "ping", nil); !errors.Is(err, endpoint.ErrPublishRefused) &&
		!errors.Is(err, endpoint.ErrReplyRefused) {
		t.Fatalf("control request to a service outside the grants: %v, want a refusal", err)
	}
}

func TestAsyncSendsPastMaxPendingAsyncFailWithErrTooManyPending(t *testing.T) {
	m := spacetest.New(t)
	// A refused publish is never acknowledged, so it holds its place until the ack wait ends.
	bob := meshAgent(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: []string{"team"}},
		func(o *endpoint.Options) { o.MaxPendingAsync = 1 })
	p, err := bob.SendAsync("team", text("refused"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if _, err := bob.SendAsync("team", text("no room")); !errors.Is(err, endpoint.ErrTooManyPending) {
		t.Fatalf("an asynchronous send past MaxPendingAsync: %v, want ErrTooManyPending", err)
	}
}

func TestRosterOnAnAuthenticatedMeshDropsNothingValid(t *testing.T) {
	m := spacetest.New(t)
	var peers []*peer
	for i := range 3 {
		peers = append(peers, meshAgent(t, m, admin.MintSpec{Name: fmt.Sprintf("agent-%d", i)}))
	}
	await.True(t, settle, "every agent in every roster", func() bool {
		for _, p := range peers {
			if n := len(p.Roster().Snapshot()); n != len(peers) {
				return false
			}
		}
		return true
	})
	for _, p := range peers {
		if st := p.Stats(); st.PresenceDropped != 0 {
			t.Errorf("%s dropped %d valid presence rows", p.Name(), st.PresenceDropped)
		}
	}
}

func TestJoinDurableOnAnAuthenticatedMeshDeliversWhatAnOfflineMemberMissed(t *testing.T) {
	m := spacetest.New(t)
	team := []string{"team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: team, AllowPublish: team})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: team})
	bob := meshConnect(t, m, bobCred)
	res, err := bob.Join(ctxT(t), "team")
	if err != nil {
		t.Fatal(err)
	}
	if res.State != endpoint.JoinedDurable {
		t.Fatalf("join %+v, want joined durable with the mesh's delivery service", res)
	}

	both, err := alice.Send(ctxT(t), "team", text("live and durable"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the durable copy of a live message dropped as a duplicate", func() bool {
		return bob.Stats().Duplicates >= 1
	})
	if n := len(bob.rec.withID(both.ID)); n != 1 {
		t.Fatalf("a message surfaced %d times across live and durable copies, want once", n)
	}

	if err := bob.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	missed, err := alice.Send(ctxT(t), "team", text("while bob was away"))
	if err != nil {
		t.Fatal(err)
	}
	back := meshConnect(t, m, bobCred)
	await.True(t, settle, "the missed message from the durable backstop", func() bool { return len(back.rec.withID(missed.ID)) == 1 })
	if d := back.rec.withID(missed.ID)[0]; !d.Meta.Durable || d.Meta.Kind != endpoint.MetaChannel || d.Meta.Channel != "team" {
		t.Fatalf("meta %+v, want a durable channel delivery on team", d.Meta)
	}
	if res, err := back.Join(ctxT(t), "team"); err != nil || res.State != endpoint.JoinedDurable {
		t.Fatalf("rejoin %+v, %v; want joined durable", res, err)
	}
	if err := back.Leave(ctxT(t), "team"); err != nil {
		t.Fatalf("leave a durable channel: %v", err)
	}
}
