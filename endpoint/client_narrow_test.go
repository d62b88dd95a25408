package endpoint_test

import (
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space/spacetest"
)

// A re-mint that narrows the read ACL also closes the backstop: a durable copy the trusted
// reader handed over under the old ACL, still waiting in dlv_<id>, never surfaces, while copies
// of channels the new ACL still covers arrive (SPEC §9 item 6, §12 item 14). The mesh deletes
// it from DLV at the re-mint (docs/durable.md "Narrowing a read ACL"), so it never even reaches
// the client's own check against the new ACL.
func TestDurableCopiesOfAChannelDroppedByARemintAreNeverSurfaced(t *testing.T) {
	m := spacetest.New(t)
	both := []string{"team", "ops"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: both, AllowPublish: both})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: both})
	bob := meshConnect(t, m, bobCred)
	for _, ch := range both {
		if res, err := bob.Join(ctxT(t), ch); err != nil || res.State != endpoint.JoinedDurable {
			t.Fatalf("join %s: %+v, %v", ch, res, err)
		}
	}
	if err := bob.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	dropped, err := alice.Send(ctxT(t), "ops", text("for the old ACL only"))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := alice.Send(ctxT(t), "team", text("still readable"))
	if err != nil {
		t.Fatal(err)
	}
	svc := spacetest.DeliveryStats(t, m, "main")
	await.True(t, settle, "both copies handed over to bob's dlv_", func() bool { return svc().ReaderDelivered >= 2 })

	seed, err := endpoint.CredentialSeed(bobCred.Creds)
	if err != nil {
		t.Fatal(err)
	}
	narrowed := meshMint(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: []string{"team"}, IdentitySeed: seed})
	back := meshConnect(t, m, narrowed)
	await.True(t, settle, "the still-readable copy", func() bool { return len(back.rec.withID(kept.ID)) == 1 })
	// The dropped copy was handed over before the kept one, so by now it would have arrived.
	if n := back.Stats().OutsideACL; n != 0 {
		t.Fatalf("%d copies outside the new ACL reached the client; the re-mint should have deleted them", n)
	}
	if got := back.rec.withID(dropped.ID); len(got) != 0 {
		t.Fatalf("a durable copy of ops surfaced after the re-mint dropped ops: %+v", got[0].Meta)
	}
}
