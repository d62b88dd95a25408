package mcpserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/mcpserver"
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
		{"a live channel copy that does not fit is dropped and counted", live, nil, 1, 0},
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
