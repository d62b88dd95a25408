package main

import (
	"context"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestShouterAnswersAnycastRequests gives the test its own mesh with spacetest.New: a
// temporary directory, in-memory streams, authentication on, closed by t.Cleanup.
func TestShouterAnswersAnycastRequests(t *testing.T) {
	m := spacetest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	shouter, err := m.Endpoint(ctx, space.AgentSpec{Name: "shouter", Grants: provisioner.Grants{Role: Role}})
	if err != nil {
		t.Fatal(err)
	}
	shouter.Handle(Shout(shouter))

	replies := make(chan *wire.CotalMessage, 8)
	client, err := m.Endpoint(ctx, space.AgentSpec{Name: "client",
		Endpoint: endpoint.Options{Handler: func(ctx context.Context, d endpoint.Delivery) error {
			select {
			case replies <- d.Message:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, request, want string }{
		{"a request in lower case is shouted back", "hello", "HELLO"},
		{"a request with accents keeps them, upper-cased", "ça va?", "ÇA VA?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent, err := client.SendAnycast(ctx, Role, []wire.Part{wire.TextPart(tc.request)})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-replies:
				if r.ReplyTo != sent.ID || r.From.ID != shouter.ID() {
					t.Fatalf("reply %s from %s to %s, want a reply from %s to %s",
						r.ID, r.From.ID, r.ReplyTo, shouter.ID(), sent.ID)
				}
				if got := r.Parts[0].Text; got != tc.want {
					t.Fatalf("reply %q, want %q", got, tc.want)
				}
			case <-ctx.Done():
				t.Fatalf("no reply to %q: %v", tc.request, ctx.Err())
			}
		})
	}
}
