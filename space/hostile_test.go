package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// The hostile-agent suite of docs/hostile-agents.md "Nothing outlives its grants": what a
// credential leaves behind (a consumer, a durable copy) must not outlive the grants it was made
// under, and no identity may redefine, drain or delete another identity's consumers. Raw
// nats.go connections with minted credentials are the attacker.

// noPeriodicPass leaves only the passes at start, mint and revoke, so a test sees what those
// passes do and not a lucky tick.
func noPeriodicPass(o *space.Options) { o.ReconcileInterval = -1 }

// reMint re-mints cred's identity with grants g and returns the new credential.
func reMint(t *testing.T, m *space.Mesh, cred *provisioner.Credential, g provisioner.Grants) *provisioner.Credential {
	t.Helper()
	identity, err := nkeys.FromSeed(cred.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return mintWith(t, m, provisioner.MintRequest{Space: "main", Name: cred.Name, Profile: cred.Profile,
		Grants: g, Identity: identity})
}

// consumerGone requires the consumer to be absent, asked as p (which holds CONSUMER.INFO on it).
func consumerGone(t *testing.T, p *peer, stream, name string) {
	t.Helper()
	// No responders says nothing of the consumer: the account's JetStream import is
	// being replaced by the re-mint's re-sign. Ask again until the API answers.
	var err error
	await.Until(answerWait, func() bool {
		_, err = p.request("$JS.API.CONSUMER.INFO."+stream+"."+name, "", nil, nil)
		return !errors.Is(err, nats.ErrNoResponders)
	})
	refusedBy(server.JSConsumerNotFoundErr).check(t, err)
}

func TestANarrowingReMintTakesAwayHistoryConsumersOutsideTheNewACL(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, noPeriodicPass)
	n := wire.NewNames("main")
	chat := n.ChatStream()
	wide := provisioner.Grants{Subscribe: []string{"general"}, AllowSubscribe: []string{"general", "team.>"}}
	narrow := provisioner.Grants{Subscribe: []string{"general"}}
	for _, tc := range []struct {
		name string
		cfg  func(c *provisioner.Credential) jetstream.ConsumerConfig
	}{
		{"a durable chathist with no inactive threshold", func(c *provisioner.Credential) jetstream.ConsumerConfig {
			return jetstream.ConsumerConfig{Durable: n.HistoryConsumer(c.ID), FilterSubject: n.ChatFilter("team.>"),
				AckPolicy: jetstream.AckNonePolicy}
		}},
		{"a chathist pushing into the agent's own inbox", func(c *provisioner.Credential) jetstream.ConsumerConfig {
			return jetstream.ConsumerConfig{Durable: n.HistoryConsumer(c.ID), FilterSubject: n.ChatFilter("team.>"),
				AckPolicy: jetstream.AckNonePolicy, DeliverSubject: wire.InboxPrefix(c.ID) + ".tap"}
		}},
		{"a chathist made exactly as the spec says", func(c *provisioner.Credential) jetstream.ConsumerConfig {
			return jetstream.ConsumerConfig{Name: n.HistoryConsumer(c.ID), FilterSubject: n.ChatFilter("team.>"),
				AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, InactiveThreshold: wire.HistoryInactiveThreshold}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old := mint(t, m, "carol-"+fmt.Sprint(time.Now().UnixNano()), provisioner.ProfileAgent, wide)
			cfg := tc.cfg(old)
			plant(t, newPeer(t, m, old), chat, cfg)
			renewed := reMint(t, m, old, narrow)
			consumerGone(t, newPeer(t, m, renewed), chat, n.HistoryConsumer(old.ID))
		})
	}
}

func TestANarrowingReMintDeletesHandedOverCopiesOfLostChannels(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, noPeriodicPass)
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*answerWait)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general", "team.backend"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general", "team.backend"}}))
	// carol joins both channels durably and goes offline, so the copies wait in her handoff.
	creds, err := carol.Creds()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds,
		Name: "carol", Channels: []string{"general", "team.backend"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"general", "team.backend"} {
		if res, ok := ep.JoinStatus(ch); !ok || res.State != endpoint.JoinedDurable {
			t.Fatalf("carol's join of %s: %+v", ch, res)
		}
	}
	if err := ep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"general", "team.backend"} {
		if err := store(n.ChatSubject(bob.cred.ID, ch), ch, nil)(ctx, t, bob); err != nil {
			t.Fatal(err)
		}
	}
	before := newPeer(t, m, carol)
	await.True(t, 2*answerWait, "both copies in carol's handoff", func() bool {
		return handoffPending(t, before, n, carol.ID) == 2
	})

	renewed := reMint(t, m, carol, provisioner.Grants{Subscribe: []string{"general"}})
	after := newPeer(t, m, renewed)
	var channels []string
	for _, cm := range handoffCopies(ctx, t, after, n, 10) {
		channels = append(channels, cm.Channel)
	}
	if len(channels) != 1 || channels[0] != "general" {
		t.Fatalf("after the re-mint carol's handoff holds copies of %v; want general only", channels)
	}
}

// handoffPending is how many copies wait in id's dlv_, asked as p.
func handoffPending(t *testing.T, p *peer, n wire.Names, id string) uint64 {
	t.Helper()
	msg, err := p.request("$JS.API.CONSUMER.INFO."+n.DLVStream()+"."+n.DLVConsumer(id), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info jetstream.ConsumerInfo
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	return info.NumPending + uint64(info.NumAckPending)
}

func TestAnAdminCannotRedefineDrainOrDeleteAnAgentsConsumers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r, n, dm := w.root, w.n, w.n.DMStream()
	dmBob := n.DMConsumer(w.bob.ID)
	allDMs := "cotal.main.inst.>"
	widened := jetstream.ConsumerConfig{Durable: dmBob, FilterSubject: allDMs, AckPolicy: jetstream.AckExplicitPolicy}
	push := jetstream.ConsumerConfig{Name: "spy", FilterSubject: allDMs, AckPolicy: jetstream.AckNonePolicy,
		DeliverSubject: wire.InboxPrefix(w.bob.ID) + ".spy"}
	own := n.DMHistoryConsumer(r.ID)
	history := jetstream.ConsumerConfig{Name: own, FilterSubject: allDMs, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: wire.HistoryInactiveThreshold}
	next := map[string]any{"batch": 1, "no_wait": true}
	run(t, w.m, []confinementCase{
		{"an admin reads DM history through its own dmhist", r, readBack(dm, history), permitted},
		refuseAPI("an admin cannot widen an agent's dm_ to every DM", r,
			"$JS.API.CONSUMER.CREATE."+dm+"."+dmBob+"."+allDMs, createBody(dm, widened)),
		refuseAPI("an admin cannot redefine an agent's dm_ by the bare subject", r,
			"$JS.API.CONSUMER.CREATE."+dm, createBody(dm, widened)),
		refuseAPI("an admin cannot create a push consumer into an agent's inbox", r,
			"$JS.API.CONSUMER.CREATE."+dm+".spy."+allDMs, createBody(dm, push)),
		refuseAPI("an admin cannot create a dmhist under another identity's name", r,
			"$JS.API.CONSUMER.CREATE."+dm+"."+n.DMHistoryConsumer(w.bob.ID)+"."+allDMs, createBody(dm, history)),
		refuseAPI("an admin cannot delete an agent's dm_", r, "$JS.API.CONSUMER.DELETE."+dm+"."+dmBob, nil),
		refuseAPI("an admin cannot pull from an agent's dm_", r, "$JS.API.CONSUMER.MSG.NEXT."+dm+"."+dmBob, next),
		refusePublish("an admin cannot ack for an agent's dm_", r, "$JS.ACK."+dm+"."+dmBob+".1.1.1.1.0"),
	})
}

func TestNoReaderCanRedefineDrainOrDeleteAnAgentsHistoryConsumer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	n, chat := w.n, w.n.ChatStream()
	hist := n.HistoryConsumer(w.alice.ID)
	all := "cotal.main.chat.>"
	// alice's history consumer exists, as in the middle of one of her history reads.
	plant(t, newPeer(t, w.m, w.alice), chat, jetstream.ConsumerConfig{Name: hist, FilterSubject: n.ChatFilter("general"),
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: wire.HistoryInactiveThreshold})
	widened := jetstream.ConsumerConfig{Name: hist, FilterSubject: all, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: wire.HistoryInactiveThreshold}
	next := map[string]any{"batch": 1, "no_wait": true}
	var cases []confinementCase
	for _, who := range []struct {
		name string
		cred *provisioner.Credential
	}{{"an observer", w.watcher}, {"an admin", w.root}} {
		as := who.cred
		cases = append(cases,
			confinementCase{who.name + " reads all chat history through its own chathist", as,
				readBack(chat, jetstream.ConsumerConfig{Name: n.HistoryConsumer(as.ID), FilterSubject: all,
					AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: wire.HistoryInactiveThreshold}), permitted},
			refuseAPI(who.name+" cannot widen an agent's chathist to all chat", as,
				"$JS.API.CONSUMER.CREATE."+chat+"."+hist+"."+all, createBody(chat, widened)),
			refuseAPI(who.name+" cannot create a CHAT consumer under a name of its choosing", as,
				"$JS.API.CONSUMER.CREATE."+chat+".spy."+all, createBody(chat, jetstream.ConsumerConfig{Name: "spy", FilterSubject: all})),
			refuseAPI(who.name+" cannot pull from an agent's chathist", as, "$JS.API.CONSUMER.MSG.NEXT."+chat+"."+hist, next),
			refuseAPI(who.name+" cannot delete an agent's chathist", as, "$JS.API.CONSUMER.DELETE."+chat+"."+hist, nil),
		)
	}
	run(t, w.m, cases)
}

// plant creates cfg on stream as p through the pinned create subject, which the attack needs
// to be permitted. A consumer named by Durable is durable; one named by Name only is
// ephemeral, and the server gives it an inactive threshold of its own.
func plant(t *testing.T, p *peer, stream string, cfg jetstream.ConsumerConfig) {
	t.Helper()
	subject := "$JS.API.CONSUMER.CREATE." + stream + "." + cfg.Name + cfg.Durable + "." + cfg.FilterSubject
	if err := api(subject, createBody(stream, cfg))(context.Background(), t, p); err != nil {
		t.Fatalf("plant %s on %s: %v", cfg.Name, stream, err)
	}
}

// planted is one consumer an attacker creates, which the mesh must delete.
type planted struct {
	name   string
	as     *peer
	stream string
	cfg    jetstream.ConsumerConfig
}

// deletedSoon plants each consumer and requires it gone within a few seconds.
func deletedSoon(t *testing.T, cases []planted) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plant(t, tc.as, tc.stream, tc.cfg)
			name := tc.cfg.Name + tc.cfg.Durable
			await.True(t, 2*answerWait, name+" deleted", func() bool {
				_, err := tc.as.request("$JS.API.CONSUMER.INFO."+tc.stream+"."+name, "", nil, nil)
				var apiErr *jetstream.APIError
				return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.ErrorCode(server.JSConsumerNotFoundErr)
			})
		})
	}
}

func TestThePeriodicPassDeletesConsumersNoRuleKeeps(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, func(o *space.Options) { o.ReconcileInterval = 100 * time.Millisecond })
	n := wire.NewNames("main")
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	watcher := newPeer(t, m, mint(t, m, "watcher", provisioner.ProfileObserver, provisioner.Grants{}))
	agent := newPeer(t, m, bob)
	chat, presence := n.ChatStream(), wire.KVStream(n.PresenceBucket())
	deletedSoon(t, []planted{
		{"an observer's own chathist pushing all chat into an agent's inbox", watcher, chat,
			jetstream.ConsumerConfig{Durable: n.HistoryConsumer(watcher.cred.ID), FilterSubject: "cotal.main.chat.>",
				AckPolicy: jetstream.AckNonePolicy, DeliverSubject: wire.InboxPrefix(bob.ID) + ".spy"}},
		{"an observer's own chathist made durable", watcher, chat,
			jetstream.ConsumerConfig{Durable: n.HistoryConsumer(watcher.cred.ID), FilterSubject: "cotal.main.chat.>",
				AckPolicy: jetstream.AckNonePolicy}},
		{"an agent's chathist with an inactive threshold of a day", agent, chat,
			jetstream.ConsumerConfig{Name: n.HistoryConsumer(bob.ID), FilterSubject: n.ChatFilter("general"),
				AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 24 * time.Hour}},
		{"an agent's presence watch pushing into a subject that is no identity's inbox", agent, presence,
			jetstream.ConsumerConfig{Durable: "squat", FilterSubject: "$KV." + n.PresenceBucket() + ".>",
				AckPolicy: jetstream.AckNonePolicy, DeliverSubject: "squat.feed"}},
	})
	t.Run("an agent's durable on the presence bucket is transient, so it cannot squat for long", func(t *testing.T) {
		// The bucket's stream gives every consumer an inactive threshold no longer than
		// wire.MaxTransientInactiveThreshold (the layout's consumer limits), so a durable the
		// rule would otherwise delete is one the server deletes once its reader goes.
		plant(t, agent, presence, jetstream.ConsumerConfig{Durable: "squat2",
			FilterSubject: "$KV." + n.PresenceBucket() + ".>", AckPolicy: jetstream.AckNonePolicy})
		msg, err := agent.request("$JS.API.CONSUMER.INFO."+presence+".squat2", "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var info jetstream.ConsumerInfo
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			t.Fatal(err)
		}
		if th := info.Config.InactiveThreshold; th <= 0 || th > wire.MaxTransientInactiveThreshold {
			t.Fatalf("inactive threshold %v, want in (0, %v]", th, wire.MaxTransientInactiveThreshold)
		}
	})
	t.Run("an agent's presence watch survives", func(t *testing.T) {
		if err := watchSees(n, bob.ID, nil)(context.Background(), t, agent); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAConsumerNoRuleKeepsIsDeletedAsItIsCreated leaves the periodic pass an hour away, so
// only the check of each create can act: a push consumer under one's own name, which no grant
// refuses, delivers for milliseconds, not for a reconcile interval.
func TestAConsumerNoRuleKeepsIsDeletedAsItIsCreated(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, func(o *space.Options) { o.ReconcileInterval = time.Hour })
	n := wire.NewNames("main")
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	watcher := newPeer(t, m, mint(t, m, "watcher", provisioner.ProfileObserver, provisioner.Grants{}))
	root := newPeer(t, m, mint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{}))
	deletedSoon(t, []planted{
		{"an admin's own dmhist pushing every DM into an agent's inbox", root, n.DMStream(),
			jetstream.ConsumerConfig{Name: n.DMHistoryConsumer(root.cred.ID), FilterSubject: "cotal.main.inst.>",
				AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: wire.HistoryInactiveThreshold,
				DeliverSubject: wire.InboxPrefix(bob.ID) + ".spy"}},
		{"an observer's own chathist pushing all chat into an agent's inbox", watcher, n.ChatStream(),
			jetstream.ConsumerConfig{Name: n.HistoryConsumer(watcher.cred.ID), FilterSubject: "cotal.main.chat.>",
				AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: wire.HistoryInactiveThreshold,
				DeliverSubject: wire.InboxPrefix(bob.ID) + ".spy"}},
	})
}

func TestConsumersNoRuleKeepsDoNotSurviveARestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*answerWait)
	defer cancel()
	opts := space.Options{Dir: t.TempDir(), ReconcileInterval: -1}
	m, err := space.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	n := wire.NewNames("main")
	root := newPeer(t, m, mint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{}))
	parked := n.HistoryConsumer(root.cred.ID)
	plant(t, root, n.ChatStream(), jetstream.ConsumerConfig{Durable: parked, FilterSubject: "cotal.main.chat.>",
		AckPolicy: jetstream.AckNonePolicy})
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m, err = space.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	consumerGone(t, newPeer(t, m, root.cred), n.ChatStream(), parked)
}
