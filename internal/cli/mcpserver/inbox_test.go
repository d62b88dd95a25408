package mcpserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/cli/mcpserver"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

func delivery(id string, meta endpoint.Meta) endpoint.Delivery {
	m := wire.NewDirectMessage("main", wire.EndpointRef{ID: "UALICE", Name: "alice"}, "UBOB", wire.TextPart("text of "+id))
	m.ID, m.TS = id, time.Now().UnixMilli()
	return endpoint.Delivery{Message: m, Meta: meta}
}

func TestMCPInboxIsBoundedAndSaysWhatItDidNotKeep(t *testing.T) {
	live := endpoint.Meta{Kind: endpoint.MetaChannel, Channel: "general"}
	for _, tc := range []struct {
		name         string
		meta         endpoint.Meta
		wantErr      error
		wantDropped  int
		wantDeferred int
	}{
		{"a live channel copy that does not fit is dropped, counted and not handled", live, mcpserver.ErrInboxFull, 1, 0},
		{"a DM that does not fit is refused so the mesh redelivers it", endpoint.Meta{Kind: endpoint.MetaDM}, mcpserver.ErrInboxFull, 0, 1},
		{"an anycast that does not fit is refused so the mesh redelivers it", endpoint.Meta{Kind: endpoint.MetaAnycast}, mcpserver.ErrInboxFull, 0, 1},
		{"a durable channel copy that does not fit is refused so the mesh redelivers it",
			endpoint.Meta{Kind: endpoint.MetaChannel, Durable: true}, mcpserver.ErrInboxFull, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := mcpserver.NewInbox(2)
			for _, id := range []string{"m1", "m2"} {
				if err := in.Handle(context.Background(), delivery(id, live)); err != nil {
					t.Fatalf("handle %s: %v", id, err)
				}
			}
			if err := in.Handle(context.Background(), delivery("m3", tc.meta)); !errors.Is(err, tc.wantErr) {
				t.Fatalf("the copy beyond the bound returned %v, want %v", err, tc.wantErr)
			}
			peek := in.Read(true)
			got := in.Read(false)
			if len(peek.Messages) != 2 || len(got.Messages) != 2 || got.Messages[0].ID != "m1" || got.Messages[1].ID != "m2" {
				t.Fatalf("read %+v after a peek of %+v, want m1 then m2 both times", got.Messages, peek.Messages)
			}
			if got.Dropped != tc.wantDropped || got.Deferred != tc.wantDeferred {
				t.Errorf("dropped %d, deferred %d; want %d and %d", got.Dropped, got.Deferred, tc.wantDropped, tc.wantDeferred)
			}
			if after := in.Read(false); len(after.Messages) != 0 || after.Dropped != 0 || after.Deferred != 0 {
				t.Errorf("a read after a clearing read gave %+v, want nothing", after)
			}
		})
	}
}

func TestMCPInboxWaitReturnsWhenAMessageArrives(t *testing.T) {
	in := mcpserver.NewInbox(0)
	ctx, cancel := context.WithTimeout(context.Background(), callWait)
	defer cancel()
	done := make(chan struct{})
	go func() {
		in.Wait(ctx)
		close(done)
	}()
	if err := in.Handle(ctx, delivery("m1", endpoint.Meta{Kind: endpoint.MetaDM})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Wait did not return after a message arrived")
	}
	if ctx.Err() != nil {
		t.Fatal("Wait returned only at the deadline")
	}
}

// A live copy the full inbox drops is not handled: the endpoint must not remember its id, or
// the @mention twin that arrives later is acknowledged as a duplicate and lost (SPEC §4).
func TestMCPAMentionWhoseLiveCopyAFullInboxDroppedStillArrives(t *testing.T) {
	m := spacetest.New(t)
	general := []string{"general"}
	alice := newAgent(t, m, "alice", provisioner.Grants{Subscribe: general, AllowPublish: general})
	bob := newAgentWith(t, m, space.AgentSpec{Name: "bob", Grants: provisioner.Grants{Subscribe: general}}, 1)

	alice.ok(t, "cotal_dm", map[string]any{"to": "bob", "text": "fills the inbox"}, nil)
	await.True(t, callWait, "the DM fills bob's inbox of one", func() bool {
		var in inbox
		bob.ok(t, "cotal_inbox", map[string]any{"peek": true}, &in)
		return len(in.Messages) == 1
	})
	before := bob.e.Stats()
	alice.ok(t, "cotal_send", map[string]any{"text": "for bob", "mentions": []string{"bob"}}, nil)
	await.True(t, callWait, "the live copy is dropped and the @mention copy is refused or acknowledged", func() bool {
		var in inbox
		bob.ok(t, "cotal_inbox", map[string]any{"peek": true}, &in)
		st := bob.e.Stats()
		return in.Dropped == 1 && (in.Deferred > 0 || st.Duplicates > before.Duplicates)
	})
	bob.ok(t, "cotal_inbox", map[string]any{}, nil) // makes room
	got, _ := bob.waitMessage(t, func(m mcpserver.InboxMessage) bool { return m.Text == "for bob" })
	if got.Kind != "channel" || got.Channel != "general" {
		t.Errorf("bob got %+v, want the post on general", got)
	}
}
