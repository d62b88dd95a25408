package endpoint_test

import (
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// An @mention on a live channel writes a durable copy for an authorized target even while it
// is offline, and nothing for a target outside the channel's read ACL or an instance that only
// presents the name (SPEC §4): a mention resolves by the name a credential was minted with.
func TestMentionOnALiveChannelReachesAnOfflineAuthorizedPeerOnly(t *testing.T) {
	m := spacetest.New(t)
	live := wire.DeliveryLive
	if _, err := m.SetChannel(ctxT(t), "main", space.ChannelUpdate{Channel: "lobby", DeliveryClass: &live, Create: true}); err != nil {
		t.Fatal(err)
	}
	lobby := []string{"lobby"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: lobby, AllowPublish: lobby})
	carolCred := meshMint(t, m, admin.MintSpec{Name: "carol", AllowSubscribe: lobby})
	eveCred := meshMint(t, m, admin.MintSpec{Name: "eve", AllowSubscribe: []string{"elsewhere"}})
	dup1 := meshAgent(t, m, admin.MintSpec{Name: "dup", AllowSubscribe: lobby})
	// A name has one active credential (provisioner.ErrNameInUse); another instance can still
	// present the same display name, which does not make it the mention's target.
	dup2 := meshAgent(t, m, admin.MintSpec{Name: "dup-2", AllowSubscribe: lobby},
		func(o *endpoint.Options) { o.Name = "dup" })
	for _, c := range []*admin.MintedCredential{carolCred, eveCred} {
		p := meshConnect(t, m, c) // announce presence once, then go offline gracefully
		await.True(t, settle, c.Name+" in alice's roster", func() bool { _, ok := alice.Roster().Peer(c.ID); return ok })
		if err := p.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		// Under load the broker can keep the closed incarnation's pull request past its
		// close, until the request's 30 s expiry, and a copy handed over meanwhile goes to it
		// and waits out dlv_<id>'s 60 s ack wait (RELIABILITY.md, Known open). What this test
		// proves is the mention's copy, so it sends once the request is gone.
		await.True(t, 45*time.Second, c.Name+"'s closed pull requests dropped", func() bool { return dlvWaiting(t, m, c) == 0 })
	}
	await.True(t, settle, "both dups in alice's roster", func() bool {
		_, a := alice.Roster().Peer(dup1.ID())
		_, b := alice.Roster().Peer(dup2.ID())
		return a && b
	})
	sent, err := alice.Send(ctxT(t), "lobby", text("@carol @eve @dup please look"), endpoint.WithMentions("Carol", "eve", "dup"))
	if err != nil {
		t.Fatal(err)
	}
	carol := meshConnect(t, m, carolCred)
	await.True(t, settle, "carol's mention copy on reconnect", func() bool { return len(carol.rec.withID(sent.ID)) == 1 })
	if d := carol.rec.withID(sent.ID)[0]; !d.Meta.Durable || d.Meta.Channel != "lobby" {
		t.Fatalf("carol's copy meta %+v, want a durable copy on lobby", d.Meta)
	}
	svc := spacetest.DeliveryStats(t, m, "main")
	await.True(t, settle, "dup's mention copy", func() bool { return len(dup1.rec.withID(sent.ID)) == 1 })
	if st := svc(); st.FannedOutMention != 2 {
		t.Fatalf("mention entries written = %d, want 2 (carol and the dup minted so: eve is unauthorized)", st.FannedOutMention)
	}
	if err := endpoint.Conn(dup2.Endpoint).Flush(); err != nil {
		t.Fatal(err)
	}
	if got := dup2.rec.withID(sent.ID); len(got) != 0 {
		t.Fatalf("the instance only calling itself dup got %d copies (%+v), want none", len(got), got)
	}
	eve := meshConnect(t, m, eveCred)
	if err := endpoint.Conn(eve.Endpoint).Flush(); err != nil {
		t.Fatal(err)
	}
	if got := eve.rec.withID(sent.ID); len(got) != 0 {
		t.Fatalf("eve, outside lobby's read ACL, got %d copies", len(got))
	}
}

// dlvWaiting is the number of pull requests the broker holds on cred's dlv_<id> consumer, read
// with cred itself (an agent may read its own consumer's info).
func dlvWaiting(t *testing.T, m *space.Mesh, cred *admin.MintedCredential) int {
	t.Helper()
	token, err := jwt.ParseDecoratedJWT(cred.Creds)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.ParseDecoratedNKey(cred.Creds)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(m.InProcess()), nats.UserJWTAndSeed(token, string(seed)),
		nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	cons, err := js.Consumer(ctxT(t), n.DLVStream(), n.DLVConsumer(cred.ID))
	if err != nil {
		t.Fatal(err)
	}
	return cons.CachedInfo().NumWaiting
}
