package endpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/admin"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
)

// crashingHandler reports every delivery it is handed and never returns, as a receiver that
// dies inside its handler: nothing is acked.
func crashingHandler(t *testing.T) (endpoint.Handler, <-chan endpoint.Delivery) {
	got := make(chan endpoint.Delivery, 16)
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	return func(ctx context.Context, d endpoint.Delivery) error {
		got <- d
		select {
		case <-stuck:
		case <-ctx.Done():
		}
		return context.Canceled
	}, got
}

// A receiver that crashes between surfacing a copy and acking it loses nothing: the copy
// is redelivered to the next binding of the same consumer (SPEC §4, §8), for DMs from dm_<id>
// and for durable-channel copies from dlv_<id>.
func TestACrashBeforeAckRedeliversToTheNextBinding(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.AckWait = time.Second })
	team := []string{"team"}
	alice := meshAgent(t, m, admin.MintSpec{Name: "alice", AllowSubscribe: team, AllowPublish: team})
	bobCred := meshMint(t, m, admin.MintSpec{Name: "bob", AllowSubscribe: team})
	bob := meshConnect(t, m, bobCred)
	if res, err := bob.Join(ctxT(t), "team"); err != nil || res.State != endpoint.JoinedDurable {
		t.Fatalf("join %+v, %v; want joined durable", res, err)
	}
	if err := bob.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	dm, err := alice.SendDM(ctxT(t), bobCred.ID, text("direct"))
	if err != nil {
		t.Fatal(err)
	}
	durable, err := alice.Send(ctxT(t), "team", text("durable while bob is away"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]endpoint.MetaKind{dm.ID: endpoint.MetaDM, durable.ID: endpoint.MetaChannel}

	handler, got := crashingHandler(t)
	crashing := meshConnect(t, m, bobCred, func(o *endpoint.Options) { o.Handler = handler })
	for seen := map[string]bool{}; len(seen) < len(want); {
		select {
		case d := <-got:
			if kind, ok := want[d.Message.ID]; !ok || d.Meta.Kind != kind {
				t.Fatalf("unexpected delivery %s as %s", d.Message.ID, d.Meta.Kind)
			}
			seen[d.Message.ID] = true
		case <-ctxT(t).Done():
			t.Fatal("the DM and the durable copy never both reached the crashing handler")
		}
	}
	endpoint.Conn(crashing.Endpoint).Close() // the process dies: no ack, no nak, no final presence

	next := meshConnect(t, m, bobCred)
	for id, kind := range want {
		await.True(t, settle, string(kind)+" copy redelivered to the next binding", func() bool { return len(next.rec.withID(id)) == 1 })
		if d := next.rec.withID(id)[0]; !d.Meta.Redelivered || d.Meta.Kind != kind {
			t.Errorf("redelivered %s meta %+v: want Redelivered %s", id, d.Meta, kind)
		}
	}
}
