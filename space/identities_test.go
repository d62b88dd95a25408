package space_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestANameResolvesToTheCredentialMintedWithIt: mallory connects calling herself bob while bob
// is offline. Over TCP with nothing but its own credential, alice's Endpoint resolves "bob" to
// bob's credential, its DM waits for bob, and mallory is shown as herself; a re-mint that
// renames bob and a revocation change what the name stands for.
func TestANameResolvesToTheCredentialMintedWithIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	bob := mint(t, m, "bob", provisioner.ProfileAgent, g)
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, g)
	alice := joinAt(ctx, t, m, mint(t, m, "alice", provisioner.ProfileAgent, g), make(chan endpoint.Delivery, 8))
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := mallory.Creds()
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := endpoint.Connect(ctx, endpoint.Options{Link: link, Creds: creds, Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close(context.Background())
	await.True(t, 10*time.Second, "the impostor in alice's roster as bob", func() bool {
		for _, p := range alice.Roster().Snapshot() {
			if p.Online && p.Presence.Card.ID == mallory.ID && p.Presence.Card.Name == "bob" {
				return true
			}
		}
		return false
	})

	// mallory's own connection tries to write herself in as bob and to watch the bucket.
	raw := newPeer(t, m, mallory)
	n := wire.NewNames("main")
	bucket := n.IdentitiesBucket()
	forged := []byte(`{"ids":["` + mallory.ID + `"]}`)
	if _, err := raw.request("$KV."+bucket+"."+wire.NameKey("bob"), "", nil, forged); err == nil {
		t.Errorf("mallory's write of bob's name record was answered")
	}
	create := []byte(`{"stream_name":"KV_` + bucket + `","config":{"ack_policy":"none","deliver_policy":"all"}}`)
	if _, err := raw.request("$JS.API.CONSUMER.CREATE.KV_"+bucket, "", nil, create); err == nil {
		t.Errorf("mallory created a consumer on %s", bucket)
	}

	if id, err := alice.ResolveName(ctx, "Bob"); err != nil || id != bob.ID {
		t.Fatalf("ResolveName(Bob) = %s, %v; want bob's credential %s, not the impostor %s", id, err, bob.ID, mallory.ID)
	}
	to, err := alice.ResolveName(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendDM(ctx, to, text("the password is hunter2")); err != nil {
		t.Fatal(err)
	}
	subject := n.InstSubject(bob.ID, alice.ID())
	if got := streamState(ctx, t, newPeer(t, m, bob), n.DMStream(), subject).State.Subjects[subject]; got != 1 {
		t.Errorf("the DM stream holds %d DMs from alice to bob, want the one sent by name", got)
	}
	if got, want := alice.SenderName(ctx, wire.EndpointRef{ID: mallory.ID, Name: "bob"}), `mallory (calls itself "bob")`; got != want {
		t.Errorf("SenderName of the impostor = %q, want %q", got, want)
	}
	if got := alice.SenderName(ctx, wire.EndpointRef{ID: bob.ID, Name: "BOB"}); got != "BOB" {
		t.Errorf("SenderName of bob as BOB = %q, want the name as claimed", got)
	}
	if _, err := alice.ResolveName(ctx, "nobody"); !errors.Is(err, endpoint.ErrUnknownName) {
		t.Errorf("ResolveName(nobody) = %v, want %v", err, endpoint.ErrUnknownName)
	}

	if err := m.Revoke(ctx, "main", bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ResolveName(ctx, "bob"); !errors.Is(err, endpoint.ErrUnknownName) {
		t.Errorf("after bob's revocation ResolveName(bob) = %v, want %v (never the impostor)", err, endpoint.ErrUnknownName)
	}
	robert := mint(t, m, "bob", provisioner.ProfileAgent, g)
	if id, err := alice.ResolveName(ctx, "bob"); err != nil || id != robert.ID {
		t.Errorf("after a new bob was minted ResolveName(bob) = %s, %v; want %s", id, err, robert.ID)
	}
}
