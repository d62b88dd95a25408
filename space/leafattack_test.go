package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestAMaliciousLeafSpeaksOnlyForItsOwnAgents: a hub with two leaves, an honest cotal laptop
// and a hostile one (a plain nats-server holding a second leaf credential the hub minted, as
// a laptop's owner could run). The hostile leaf posts chat and presence naming the honest
// laptop's agent and the hub's agent, up and down, under its own id and under the honest
// leaf's. None of it may surface or reach a roster: the hub's broker refuses the subjects that
// are not the hostile leaf's, and the hub's relay refuses ids the hub or another leaf speaks
// for.
func TestAMaliciousLeafSpeaksOnlyForItsOwnAgents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := startLeafPair(t)
	await.True(t, 10*time.Second, "the laptop's link to the hub", func() bool { return linkUp(ctx, p.laptop) })
	n := wire.NewNames("main")
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	atHub, atLaptop := make(chan endpoint.Delivery, 256), make(chan endpoint.Delivery, 256)
	hubCred := mint(t, p.hub, "hub-agent", provisioner.ProfileAgent, g)
	lapCred := mint(t, p.laptop, "laptop-agent", provisioner.ProfileAgent, g)
	h := joinAt(ctx, t, p.hub, hubCred, atHub, "general")
	l := joinAt(ctx, t, p.laptop, lapCred, atLaptop, "general")
	rostersMeet(t, h, l)

	rogueCred := mintWith(t, p.hub, provisioner.MintRequest{Space: "main", Name: "rogue-laptop", Profile: provisioner.ProfileLeaf, NoExpiry: true})
	rogue := plainLeaf(t, "nats-leaf://"+p.leafAddr, credsFile(t, rogueCred))
	nc, err := nats.Connect(rogue.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	routes := []wire.LeafRoute{{Dir: wire.LeafUp, Leaf: rogueCred.ID}, {Dir: wire.LeafUp, Leaf: p.leafCred.ID},
		{Dir: wire.LeafDown, Leaf: p.leafCred.ID}, {Dir: wire.LeafDown, Leaf: rogueCred.ID}}

	// forged reports whether got surfaces text from as, posting a fresh forged envelope on
	// every route for 3 s.
	forged := func(got <-chan endpoint.Delivery, as *provisioner.Credential, text string) bool {
		t.Helper()
		end := time.Now().Add(3 * time.Second)
		for time.Now().Before(end) {
			for _, r := range routes {
				if err := nc.Publish(n.LeafSubject(r, n.ChatSubject(as.ID, "general")), envelope(t, as, "general", text)); err != nil {
					t.Fatal(err)
				}
			}
			timeout := time.After(300 * time.Millisecond)
		drain:
			for {
				select {
				case d := <-got:
					if d.Message.From.ID == as.ID && len(d.Message.Parts) > 0 && d.Message.Parts[0].Text == text {
						return true
					}
				case <-timeout:
					break drain
				}
			}
		}
		return false
	}
	// The hostile leaf's path works: an id nobody speaks for yet is its to speak for.
	stranger, _ := nkeys.CreateUser()
	strangerID, _ := stranger.PublicKey()
	strangerCred := &provisioner.Credential{ID: strangerID, Name: "stranger", Space: "main"}
	await.Check(t, 30*time.Second, 0, func() error {
		if forged(atHub, strangerCred, "a stranger's post") {
			return nil
		}
		return errors.New("the hostile leaf's own post never reached the hub agent")
	})
	if forged(atHub, lapCred, "forged as the laptop agent") {
		t.Errorf("the hostile leaf posted as the honest laptop's agent %s and the hub agent surfaced it", lapCred.ID)
	}
	if forged(atLaptop, hubCred, "forged as the hub agent") {
		t.Errorf("the hostile leaf posted as the hub agent %s and the laptop agent surfaced it", hubCred.ID)
	}
	for _, c := range []struct {
		side string
		at   *endpoint.Endpoint
		as   *provisioner.Credential
	}{{"laptop", l, hubCred}, {"hub", h, lapCred}} {
		row, err := json.Marshal(wire.Presence{Card: wire.AgentCard{ID: c.as.ID, Name: "forged-by-rogue", Kind: wire.CardKindAgent},
			Status: wire.StatusWorking, TS: time.Now().UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		if await.Until(3*time.Second, func() bool {
			for _, r := range routes {
				_ = nc.Publish(n.LeafSubject(r, n.PresenceKVSubject(c.as.ID)), row)
			}
			peer, ok := c.at.Roster().Peer(c.as.ID)
			return ok && peer.Presence.Card.Name == "forged-by-rogue"
		}) {
			t.Errorf("the hostile leaf rewrote %s's presence in the %s's roster", c.as.Name, c.side)
		}
	}
	_, hub := get(t, p.hub.HTTPURL()+"/metrics")
	if v := metricValue(t, hub, `cotal_leaf_relay_dropped_total{direction="in",space="main"}`); v == 0 {
		t.Error("the hub's relay counted no refusal of the hostile leaf's copies")
	}
}

// TestTwoLaptopsOnOneHubReachEachOther: a hub takes one leaf per laptop (docs/leaf.md, status
// lists "the leaves linked"). A second cotal laptop links to the same hub: a post of the first
// laptop's agent reaches the hub agent and the second laptop's, the two laptops' agents see
// each other in their rosters, and a DM crosses from one laptop to the other, all through the
// hub's relay.
func TestTwoLaptopsOnOneHubReachEachOther(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := startLeafPair(t)
	cred2 := mintWith(t, p.hub, provisioner.MintRequest{Space: "main", Name: "laptop-2", Profile: provisioner.ProfileLeaf, NoExpiry: true})
	creds2 := credsFile(t, cred2)
	laptop2 := spacetest.New(t, func(o *space.Options) {
		o.Listen, o.HTTP = "127.0.0.1:0", "127.0.0.1:0"
		o.Leaf = space.LeafOptions{Hub: "nats-leaf://" + p.leafAddr, Creds: map[string]string{"main": creds2}}
	})
	await.True(t, 10*time.Second, "both laptops' links", func() bool { return linkUp(ctx, p.laptop) && linkUp(ctx, laptop2) })
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	atHub, atA, atB := make(chan endpoint.Delivery, 64), make(chan endpoint.Delivery, 64), make(chan endpoint.Delivery, 64)
	h := joinAt(ctx, t, p.hub, mint(t, p.hub, "hub-agent", provisioner.ProfileAgent, g), atHub, "general")
	a := joinAt(ctx, t, p.laptop, mint(t, p.laptop, "agent-a", provisioner.ProfileAgent, g), atA, "general")
	b := joinAt(ctx, t, laptop2, mint(t, laptop2, "agent-b", provisioner.ProfileAgent, g), atB, "general")
	rostersMeet(t, h, a)
	send(ctx, t, a, "general", "from laptop A")
	receive(ctx, t, atHub, endpoint.MetaChannel, "from laptop A")
	got := false
	for end := time.After(5 * time.Second); !got; {
		select {
		case d := <-atB:
			got = d.Message.Parts[0].Text == "from laptop A"
		case <-end:
			t.Fatalf("laptop B's agent never saw laptop A's post (hub's CHAT holds it); B's roster lists A: %t",
				func() bool { _, ok := b.Roster().Peer(a.ID()); return ok }())
		}
	}
	rostersMeet(t, a, b)
	sendDM(ctx, t, b, a.ID(), "a DM from laptop B")
	receive(ctx, t, atA, endpoint.MetaDM, "a DM from laptop B")
}
