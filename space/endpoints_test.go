package space_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// An in-process agent's credential must outlive any expiry an embedding program could trip
// over, and must be useless to anyone who copies it out of the process.
func TestInProcessAgentsHoldNonExpiringInProcessOnlyCredentials(t *testing.T) {
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	ctx := context.Background()
	ep, err := m.Endpoint(ctx, space.AgentSpec{Name: "worker", Grants: provisioner.Grants{Subscribe: []string{"jobs"}}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := m.Credentials("main")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		if r.ID == ep.ID() {
			found = true
			if !r.ExpiresAt.IsZero() {
				t.Errorf("in-process credential expires at %v, want never", r.ExpiresAt)
			}
		}
	}
	if !found {
		t.Fatalf("no registry record for the in-process agent %s", ep.ID())
	}

	cred, err := m.Mint(ctx, provisioner.MintRequest{Space: "main", Name: "copy", Profile: provisioner.ProfileAgent,
		InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := wire.ParseLink(link)
	if nc, err := nats.Connect(l.ServerURL(), nats.UserJWTAndSeed(cred.JWT, string(cred.Seed)), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an in-process-only credential connected over TCP")
	}
	connect(t, m, cred) // and in process it works
}
