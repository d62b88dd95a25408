package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// leafCreds mints the hub's leaf credential for space main and saves it, 0600, in a file.
func leafCreds(t *testing.T, hub *space.Mesh) (*provisioner.Credential, string) {
	t.Helper()
	cred := mintWith(t, hub, provisioner.MintRequest{Space: "main", Name: "laptop", Profile: provisioner.ProfileLeaf, NoExpiry: true})
	return cred, credsFile(t, cred)
}

// credsFile saves cred's .creds, 0600, in a file of its own and returns the path.
func credsFile(t *testing.T, cred *provisioner.Credential) string {
	t.Helper()
	data, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), cred.Name+".creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// linkUp reports whether m's link of space main is up.
func linkUp(ctx context.Context, m *space.Mesh) bool {
	st, err := m.Status(ctx)
	if err != nil || st.Leaf == nil {
		return false
	}
	for _, l := range st.Leaf.Links {
		if l.Space == "main" && l.Up {
			return true
		}
	}
	return false
}

// leafPair is a hub on a data directory of its own, with fixed client and leaf ports so a
// restart keeps both, and a laptop mesh linked to it with the leaf credential the hub minted.
type leafPair struct {
	hubDir, hubListen, leafAddr string
	hub, laptop                 *space.Mesh
	leafCred                    *provisioner.Credential
}

// startLeafPair starts the hub, mints the leaf credential and starts the laptop.
func startLeafPair(t *testing.T) *leafPair {
	t.Helper()
	p := &leafPair{hubDir: t.TempDir(), hubListen: spacetest.FreeAddr(t), leafAddr: spacetest.FreeAddr(t)}
	p.startHub(t)
	cred, creds := leafCreds(t, p.hub)
	p.leafCred = cred
	p.laptop = spacetest.New(t, func(o *space.Options) {
		o.Listen, o.HTTP = "127.0.0.1:0", "127.0.0.1:0"
		o.Leaf = space.LeafOptions{Hub: "nats-leaf://" + p.leafAddr, Creds: map[string]string{"main": creds}}
	})
	return p
}

// startHub starts (or restarts) the hub on its data directory and ports.
func (p *leafPair) startHub(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hub, err := space.Start(ctx, space.Options{Dir: p.hubDir, Listen: p.hubListen, HTTP: "127.0.0.1:0",
		Leaf: space.LeafOptions{Listen: p.leafAddr}})
	if err != nil {
		t.Fatalf("start the hub: %v", err)
	}
	t.Cleanup(func() { _ = hub.Close(context.Background()) })
	p.hub = hub
}

// TestALaptopLinksToAHubAsALeaf: chat and DMs cross a leaf link both ways, anycast stays on its
// side, the laptop keeps its own traffic while the hub is down, and crossing resumes by itself
// once the hub is back on the same data directory and ports.
func TestALaptopLinksToAHubAsALeaf(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	p := startLeafPair(t)
	await.True(t, 10*time.Second, "the laptop's link to the hub", func() bool { return linkUp(ctx, p.laptop) })
	healthz(t, p.laptop, `"leaf":{"main":"up"}`)
	if _, metrics := get(t, p.laptop.HTTPURL()+"/metrics"); !strings.Contains(metrics, `cotal_leaf_links{space="main"} 1`) {
		t.Errorf("/metrics lacks the link:\n%s", metrics)
	}

	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	atHub, atLaptop, atLaptop2 := make(chan endpoint.Delivery, 64), make(chan endpoint.Delivery, 64), make(chan endpoint.Delivery, 64)
	h := joinAt(ctx, t, p.hub, mint(t, p.hub, "hub-agent", provisioner.ProfileAgent, g), atHub, "general")
	l := joinAt(ctx, t, p.laptop, mint(t, p.laptop, "laptop-agent", provisioner.ProfileAgent, g), atLaptop, "general")
	l2 := joinAt(ctx, t, p.laptop, mint(t, p.laptop, "laptop-agent-2", provisioner.ProfileAgent, g), atLaptop2, "general")

	crosses := func(t *testing.T, round string) {
		t.Helper()
		sent := time.Now()
		send(ctx, t, l, "general", "laptop to hub "+round)
		receive(ctx, t, atHub, endpoint.MetaChannel, "laptop to hub "+round)
		there := time.Since(sent)
		send(ctx, t, h, "general", "hub to laptop "+round)
		receive(ctx, t, atLaptop, endpoint.MetaChannel, "hub to laptop "+round)
		t.Logf("%s: chat laptop→hub %v, round trip laptop→hub→laptop %v", round, there, time.Since(sent))
		sendDM(ctx, t, l, h.ID(), "DM laptop to hub "+round)
		receive(ctx, t, atHub, endpoint.MetaDM, "DM laptop to hub "+round)
		sendDM(ctx, t, h, l.ID(), "DM hub to laptop "+round)
		receive(ctx, t, atLaptop, endpoint.MetaDM, "DM hub to laptop "+round)
	}
	crosses(t, "before")
	rostersMeet(t, h, l)

	t.Run("the leaf credential connects as nothing but a leaf", func(t *testing.T) {
		refusedConnect(t, p.hub, p.leafCred)
	})

	t.Run("anycast stays on its side", func(t *testing.T) {
		if _, err := l.SendAnycast(ctx, "reviewer", text("a task for the laptop's reviewers")); err != nil {
			t.Fatal(err)
		}
		// Sent after the task on the same connection and link: once the hub stored it, the
		// task would have crossed too.
		send(ctx, t, l, "general", "after the task")
		receive(ctx, t, atHub, endpoint.MetaChannel, "after the task")
		await.True(t, 10*time.Second, "the hub's CHAT_main to store it", func() bool {
			return streamMessages(ctx, t, p.hub, "CHAT_main") == 3
		})
		if n := streamMessages(ctx, t, p.hub, "TASK_main"); n != 0 {
			t.Fatalf("the hub's TASK_main holds %d tasks from the laptop", n)
		}
	})

	if err := p.hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	await.True(t, 10*time.Second, "the laptop to see its link down", func() bool { return !linkUp(ctx, p.laptop) })
	healthz(t, p.laptop, `"leaf":{"main":"down"}`)
	down := time.Now()
	await.True(t, 2*wire.DefaultLivenessWindow+5*time.Second, "the laptop's roster to show the hub agent offline", func() bool {
		peer, ok := l.Roster().Peer(h.ID())
		return !ok || !peer.Online
	})
	t.Logf("the laptop's roster showed the hub agent offline %v after the link went down", time.Since(down))
	send(ctx, t, l, "general", "while the hub is down")
	receive(ctx, t, atLaptop2, endpoint.MetaChannel, "while the hub is down")
	sendDM(ctx, t, l, l2.ID(), "a DM while the hub is down")
	receive(ctx, t, atLaptop2, endpoint.MetaDM, "a DM while the hub is down")

	restarted := time.Now()
	p.startHub(t)
	await.True(t, 30*time.Second, "the laptop's link back", func() bool { return linkUp(ctx, p.laptop) })
	t.Logf("the link was back %v after the hub restarted", time.Since(restarted))
	// The hub agent's Endpoint reconnects by itself to the same client port; the first round
	// waits for it, the second is the link alone.
	crosses(t, "after")
	crosses(t, "again")
	rostersMeet(t, h, l)

	t.Run("revoking the link credential drops the link", func(t *testing.T) {
		if err := p.hub.Revoke(ctx, "main", p.leafCred.ID); err != nil {
			t.Fatal(err)
		}
		await.True(t, 10*time.Second, "the laptop to see its link down", func() bool { return !linkUp(ctx, p.laptop) })
		// The laptop retries every second; watch two retries fail. This watches for an
		// absence, so it has to last a while.
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if linkUp(ctx, p.laptop) {
				t.Fatal("the laptop linked again with its revoked credential")
			}
		}
	})
}

func text(s string) []wire.Part { return []wire.Part{wire.TextPart(s)} }

func send(ctx context.Context, t *testing.T, e *endpoint.Endpoint, channel, s string) {
	t.Helper()
	if _, err := e.Send(ctx, channel, text(s)); err != nil {
		t.Fatalf("send %q: %v", s, err)
	}
}

func sendDM(ctx context.Context, t *testing.T, e *endpoint.Endpoint, to, s string) {
	t.Helper()
	if _, err := e.SendDM(ctx, to, text(s)); err != nil {
		t.Fatalf("send DM %q: %v", s, err)
	}
}

// streamMessages is how many messages stream of space main holds on m.
func streamMessages(ctx context.Context, t *testing.T, m *space.Mesh, stream string) uint64 {
	t.Helper()
	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Spaces[0].Streams {
		if s.Name == stream {
			return s.Messages
		}
	}
	t.Fatalf("no stream %s", stream)
	return 0
}

// TestLeafOptionsRefuseWhatCannotWork covers the leaf settings Start refuses before it
// touches anything, each with the setting to change.
func TestLeafOptionsRefuseWhatCannotWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open.creds")
	if err := os.WriteFile(open, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(dir, "leaf.creds")
	if err := os.WriteFile(private, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	acct, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	old := userCreds(t, acct, func(uc *jwt.UserClaims) {
		uc.Pub.Allow.Add("cotal.main.chat.>", "cotal.main.inst.>", "cotal.main.leaf.presence.*")
		uc.Sub.Allow.Add("cotal.main.chat.>", "cotal.main.inst.>", "cotal.main.leaf.presence.*")
	})
	relayed := userCreds(t, acct, func(uc *jwt.UserClaims) {
		shared := []string{"cotal.main.leaf.chat.>", "cotal.main.leaf.inst.>", "cotal.main.leaf.presence.*"}
		uc.Pub.Allow.Add(shared...)
		uc.Sub.Allow.Add(shared...)
	})
	hub := "nats-leaf://127.0.0.1:7422"
	cases := []struct {
		name string
		opts space.Options
		want string
	}{
		{"a hub and a leaf at once", space.Options{Leaf: space.LeafOptions{Listen: "127.0.0.1:0", Hub: hub, Creds: map[string]string{"main": private}}}, "not both"},
		{"a hub URL without credentials", space.Options{Leaf: space.LeafOptions{Hub: hub}}, "leaf.creds"},
		{"credentials without a hub", space.Options{Leaf: space.LeafOptions{Creds: map[string]string{"main": private}}}, "leaf.hub"},
		{"credentials for a space the mesh does not run", space.Options{Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"other": private}}}, `space "other"`},
		{"a credential file others can read", space.Options{Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"main": open}}}, "chmod 600"},
		{"a credential minted for an older link", space.Options{Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"main": old}}}, "mint a new one on the hub"},
		{"a credential of a link every leaf heard", space.Options{Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"main": relayed}}}, "mint a new one on the hub"},
		{"a missing credential file", space.Options{Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"main": filepath.Join(dir, "none")}}}, "no such file"},
		{"a leaf in open mode", space.Options{Open: true, Leaf: space.LeafOptions{Hub: hub, Creds: map[string]string{"main": private}}}, "operator mode"},
		{"a cluster node", space.Options{Listen: "127.0.0.1:0", Cluster: space.ClusterOptions{Name: "c", Listen: "127.0.0.1:0", Peers: []string{"127.0.0.1:6222"}},
			Leaf: space.LeafOptions{Listen: "127.0.0.1:0"}}, "cluster node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Memory = true
			m, err := space.Start(context.Background(), c.opts)
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// healthz requires m's /healthz to answer 200, healthy, with want in its body: a leaf link
// down leaves the mesh healthy.
func healthz(t *testing.T, m *space.Mesh, want string) {
	t.Helper()
	code, body := get(t, m.HTTPURL()+"/healthz")
	if code != http.StatusOK || !strings.Contains(body, want) {
		t.Fatalf("/healthz = %d %s; want 200 with %s", code, body, want)
	}
}

// rostersMeet waits until each Endpoint's roster lists the other: presence relayed across.
func rostersMeet(t *testing.T, h, l *endpoint.Endpoint) {
	t.Helper()
	await.True(t, 10*time.Second, "the rosters to list each other's agent online", func() bool {
		a, okA := h.Roster().Peer(l.ID())
		b, okB := l.Roster().Peer(h.ID())
		return okA && okB && a.Online && b.Online
	})
}

// TestALeafCannotForgeAHubAgentsPresence links a plain nats-server to a hub as a leaf with the
// hub's leaf credential, as a hostile laptop could, and relays a forged presence record for a
// hub agent and one for a stranger: the hub's roster takes the stranger's and keeps its own
// agent's record.
func TestALeafCannotForgeAHubAgentsPresence(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &leafPair{hubDir: t.TempDir(), hubListen: spacetest.FreeAddr(t), leafAddr: spacetest.FreeAddr(t)}
	p.startHub(t)
	cred, creds := leafCreds(t, p.hub)
	g := provisioner.Grants{Subscribe: []string{"general"}}
	h := joinAt(ctx, t, p.hub, mint(t, p.hub, "hub-agent", provisioner.ProfileAgent, g), make(chan endpoint.Delivery, 64), "general")

	leaf := plainLeaf(t, "nats-leaf://"+p.leafAddr, creds)
	nc, err := nats.Connect(leaf.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stranger, _ := nkeys.CreateUser()
	strangerID, _ := stranger.PublicKey()
	names := wire.NewNames("main")
	for _, forged := range []struct{ id, name string }{{h.ID(), "forged"}, {strangerID, "stranger"}} {
		row, err := json.Marshal(wire.Presence{Card: wire.AgentCard{ID: forged.id, Name: forged.name, Kind: wire.CardKindAgent},
			Status: wire.StatusWorking, TS: time.Now().UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		up := names.LeafSubject(wire.LeafRoute{Dir: wire.LeafUp, Leaf: cred.ID}, names.PresenceKVSubject(forged.id))
		if err := nc.Publish(up, row); err != nil {
			t.Fatal(err)
		}
	}
	// Sent in order on one connection and relayed in order: once the stranger's record is in
	// the hub's roster, the forged one was judged.
	await.True(t, 10*time.Second, "the stranger in the hub's roster", func() bool {
		_, ok := h.Roster().Peer(strangerID)
		return ok
	})
	if own, _ := h.Roster().Peer(h.ID()); own.Presence.Card.Name != "hub-agent" {
		t.Fatalf("the hub agent's presence reads %q", own.Presence.Card.Name)
	}
}

// plainLeaf runs a plain nats-server, without JetStream or auth, linked to hub as a leaf with
// the credential in creds.
func plainLeaf(t *testing.T, hub, creds string) *server.Server {
	t.Helper()
	u, err := url.Parse(hub)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
		LeafNode: server.LeafNodeOpts{ReconnectInterval: 100 * time.Millisecond,
			Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{u}, Credentials: creds}}}})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("the plain leaf server did not start")
	}
	await.True(t, 10*time.Second, "the plain server's leaf link", func() bool { return ns.NumLeafNodes() == 1 })
	return ns
}

// TestARogueLeafIsRefused: the hub's leaf listener takes only the leaf credential. A process
// dialling it with no credential, or with an ordinary agent's, is refused, so an agent cannot
// bring a server of its own into the space; the leaf credential in turn is refused as a
// client.
func TestARogueLeafIsRefused(t *testing.T) {
	p := startLeafPair(t)
	await.True(t, 30*time.Second, "the laptop's link", func() bool { return linkUp(context.Background(), p.laptop) })
	agent := mint(t, p.hub, "mallory", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}})
	path := credsFile(t, agent)
	hubLeaf, _ := url.Parse("nats-leaf://" + p.leafAddr)
	for name, creds := range map[string]string{"no credential": "", "an agent's credential": path} {
		t.Run(name, func(t *testing.T) {
			rogue, log := spacetest.Rogue(t, server.Options{LeafNode: server.LeafNodeOpts{ReconnectInterval: 100 * time.Millisecond,
				Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{hubLeaf}, Credentials: creds}}}})
			await.True(t, 30*time.Second, "the hub to refuse the rogue leaf", func() bool { return log.Has("authorization violation") })
			if rogue.NumLeafNodes() != 0 || p.hub.Broker().Server().NumLeafNodes() != 1 {
				t.Errorf("the rogue has %d leaf links and the hub %d, want none and the laptop's alone:\n%s",
					rogue.NumLeafNodes(), p.hub.Broker().Server().NumLeafNodes(), log)
			}
		})
	}
	t.Run("the leaf credential as a client", func(t *testing.T) {
		creds, err := p.leafCred.Creds()
		if err != nil {
			t.Fatal(err)
		}
		link, err := p.hub.Link("main")
		if err != nil {
			t.Fatal(err)
		}
		_, err = endpoint.Connect(context.Background(), endpoint.Options{Link: link, Creds: creds, Name: "laptop"})
		if err == nil {
			t.Fatal("the leaf credential connected as a client")
		}
	})
}

// TestAnswersAimedAtAPresenceKeyDoNotCross: eve, a hub agent, writes her presence with reply
// subjects naming bob's presence key, so JetStream's answers land on bob's key in the hub's
// agent account, where the presence relay listens. The relay sends only valid records across:
// the leaf sees eve's own records and nothing under bob's id.
func TestAnswersAimedAtAPresenceKeyDoNotCross(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &leafPair{hubDir: t.TempDir(), hubListen: spacetest.FreeAddr(t), leafAddr: spacetest.FreeAddr(t)}
	p.startHub(t)
	cred, creds := leafCreds(t, p.hub)
	n := wire.NewNames("main")
	bob := mint(t, p.hub, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	eve := newPeer(t, p.hub, mint(t, p.hub, "eve", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	leaf := plainLeaf(t, "nats-leaf://"+p.leafAddr, creds)
	nc, err := nats.Connect(leaf.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	crossed, err := nc.SubscribeSync(n.LeafFilter(wire.LeafDown, cred.ID))
	if err != nil {
		t.Fatal(err)
	}
	row := func(activity string) []byte {
		data, err := json.Marshal(wire.Presence{Card: wire.AgentCard{ID: eve.cred.ID, Name: "eve", Kind: wire.CardKindAgent},
			Status: wire.StatusWorking, Activity: activity, TS: time.Now().UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	kv, err := eve.jetStream(t).KeyValue(ctx, n.PresenceBucket())
	if err != nil {
		t.Fatal(eve.explain(err))
	}
	// A record that crosses first: the leaf's interest has reached the hub's relay.
	await.Check(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, err := kv.Put(ctx, eve.cred.ID, row("linked")); err != nil {
			return eve.explain(err)
		}
		_, err := crossed.NextMsg(100 * time.Millisecond)
		return err
	})
	for range 20 {
		publishWithReply(t, eve, n.PresenceKVSubject(eve.cred.ID), n.PresenceKVSubject(bob.ID), row("aiming"))
	}
	// The answers to the aimed writes reach the relay before eve's first sentinel is stored,
	// so the second sentinel crosses after every one of them was judged.
	for _, s := range []string{"sentinel-1", "sentinel-2"} {
		if _, err := kv.Put(ctx, eve.cred.ID, row(s)); err != nil {
			t.Fatal(eve.explain(err))
		}
	}
	for {
		msg, err := crossed.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("the second sentinel never crossed: %v", err)
		}
		if strings.HasSuffix(msg.Subject, bob.ID) {
			t.Fatalf("an answer crossed as bob's presence: %s", msg.Data)
		}
		if strings.Contains(string(msg.Data), "sentinel-2") {
			return
		}
	}
}

// TestAnswersAimedAcrossALeafStoreNothing: a laptop agent aims the broker's answers at a hub
// agent's chat subject, both as it is and as the link's relayed subject, and replays its own
// stored posts onto both with a pull. The hub stores none of it and its agent sees none of
// it, both relays count what they refused, and the laptop agent's own posts still cross.
func TestAnswersAimedAcrossALeafStoreNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := startLeafPair(t)
	await.True(t, 10*time.Second, "the laptop's link to the hub", func() bool { return linkUp(ctx, p.laptop) })
	n := wire.NewNames("main")
	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	atHub := make(chan endpoint.Delivery, 1024)
	h := joinAt(ctx, t, p.hub, mint(t, p.hub, "hub-agent", provisioner.ProfileAgent, g), atHub, "general")
	mallory := newPeer(t, p.laptop, mint(t, p.laptop, "mallory", provisioner.ProfileAgent, g))
	own, target := n.ChatSubject(mallory.cred.ID, "general"), n.ChatSubject(h.ID(), "general")
	up := func(local string) string {
		return n.LeafSubject(wire.LeafRoute{Dir: wire.LeafUp, Leaf: p.leafCred.ID}, local)
	}
	posted := map[string]bool{}
	post := func(reply, text string) {
		t.Helper()
		posted[text] = true
		publishWithReply(t, mallory, own, reply, envelope(t, mallory.cred, "general", text))
	}
	// A post that crosses first: both relays and the link carry mallory's posts.
	await.Check(t, 30*time.Second, 0, func() error {
		post("", fmt.Sprintf("linked %d", len(posted)))
		select {
		case <-atHub:
			return nil
		case <-time.After(200 * time.Millisecond):
			return errors.New("no post of mallory's reached the hub")
		}
	})
	const aimed = 30
	for i := range aimed {
		post(target, fmt.Sprintf("aimed at the hub agent %d", i))
		post(up(target), fmt.Sprintf("aimed at the link %d", i))
	}
	spec := n.HistoryConsumerSpec(mallory.cred.ID, "general", time.Time{})
	if _, err := mallory.jetStream(t).CreateOrUpdateConsumer(ctx, spec.Stream, jsconfig.Consumer(spec)); err != nil {
		t.Fatal(mallory.explain(err))
	}
	next := "$JS.API.CONSUMER.MSG.NEXT." + spec.Stream + "." + spec.Name
	for _, reply := range []string{target, up(target), up(own)} {
		publishWithReply(t, mallory, next, reply, []byte(`{"batch":20,"no_wait":true}`))
	}
	post("", "sentinel")
	for seen := map[string]bool{}; !seen["sentinel"]; {
		select {
		case d := <-atHub:
			text := d.Message.Parts[0].Text
			if d.Message.From.ID != mallory.cred.ID || !posted[text] || seen[text] {
				t.Fatalf("the hub agent surfaced %q from %s (seen before: %t)", text, d.Message.From.ID, seen[text])
			}
			seen[text] = true
		case <-ctx.Done():
			t.Fatalf("the sentinel never crossed; the hub agent saw %d posts", len(seen))
		}
	}
	if got := h.Stats().Terminated; got.Total() > 0 {
		t.Errorf("the hub agent terminated %+v: the broker's answers crossed", got)
	}
	var stored uint64
	await.True(t, 10*time.Second, "the hub's CHAT to store mallory's posts", func() bool {
		stored = streamMessages(ctx, t, p.hub, n.ChatStream())
		return stored >= uint64(len(posted))
	})
	if stored != uint64(len(posted)) {
		t.Errorf("the hub's CHAT holds %d messages, want mallory's %d posts", stored, len(posted))
	}
	_, laptop := get(t, p.laptop.HTTPURL()+"/metrics")
	_, hub := get(t, p.hub.HTTPURL()+"/metrics")
	for _, c := range []struct{ side, metrics, direction string }{{"laptop", laptop, "out"}, {"hub", hub, "in"}} {
		if v := metricValue(t, c.metrics, `cotal_leaf_relay_dropped_total{direction="`+c.direction+`",space="main"}`); v < aimed {
			t.Errorf("the %s's relay counted %v refusals %s, want at least %d", c.side, v, c.direction, aimed)
		}
	}
}

// metricValue reads the value of the sample named series (name and labels as /metrics
// prints them) from a Prometheus text page; 0 when the page has no such sample.
func metricValue(t *testing.T, page, series string) float64 {
	t.Helper()
	for line := range strings.Lines(page) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}
