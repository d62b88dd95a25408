package space_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/broker"
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestAnswersAimedAtOthersDataStoreNothing covers docs/accounts.md "Why answers never land
// where data is stored": an agent publishes on subjects it may publish on, with reply subjects
// naming what other agents have stored, so that JetStream's answers (PubAcks, API replies, the
// messages of its own pull) would be stored there and evict older data. In one account they
// were (1 000 publishes evicted a channel's whole history). With storage reached only through
// the agent account's imports, no answer is stored anywhere: every stream holds exactly what
// its owners wrote.
func TestAnswersAimedAtOthersDataStoreNothing(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, func(o *space.Options) { o.Memory = false })
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*answerWait)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}))
	eve := newPeer(t, m, mint(t, m, "eve", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	joinDurablyAndLeave(ctx, t, m, carol, "general")
	description := "what bob says"
	if _, err := m.SetChannel(ctx, "main", space.ChannelUpdate{Channel: "general", Description: &description, Create: true}); err != nil {
		t.Fatal(err)
	}
	if err := store(n.PresenceKVSubject(bob.cred.ID), "", nil)(ctx, t, bob); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := store(n.ChatSubject(bob.cred.ID, "general"), "general", nil)(ctx, t, bob); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{n.PresenceKVSubject(eve.cred.ID), n.InstSubject(eve.cred.ID, eve.cred.ID)} {
		if err := store(s, "", nil)(ctx, t, eve); err != nil {
			t.Fatal(err)
		}
	}
	bobsRow := presenceRevision(ctx, t, eve, n, bob.cred.ID)
	before := awaitDLV(t, m, n, 3)

	targets := []string{
		n.ChatSubject(bob.cred.ID, "general"),
		n.DLVSubject(carol.ID),
		"$KV." + n.ChannelsBucket() + ".general",
		n.PresenceKVSubject(bob.cred.ID),
		n.InstSubject(bob.cred.ID, eve.cred.ID),
	}
	for _, target := range targets {
		for range 20 {
			// A PubAck of eve's own presence write, and a JetStream API answer.
			publishWithReply(t, eve, n.PresenceKVSubject(eve.cred.ID), target, []byte(`{}`))
			publishWithReply(t, eve, "$JS.API.STREAM.INFO."+n.ChatStream(), target, nil)
		}
		// The DM eve sent herself, pulled from her own dm_ consumer onto the target.
		publishWithReply(t, eve, "$JS.API.CONSUMER.MSG.NEXT."+n.DMStream()+"."+n.DMConsumer(eve.cred.ID), target, []byte(`{"batch":1,"no_wait":true}`))
	}
	// Everything eve aimed is answered before this store's PubAck reaches bob: each stream
	// stores in order, so anything that reached CHAT would sit below it.
	if err := store(n.ChatSubject(bob.cred.ID, "general"), "general", nil)(ctx, t, bob); err != nil {
		t.Fatal(err)
	}
	after := awaitDLV(t, m, n, 4)
	for _, c := range []struct {
		stream string
		grew   uint64
	}{
		{n.ChatStream(), 1}, {n.DLVStream(), 1}, {wire.KVStream(n.ChannelsBucket()), 0},
		{wire.KVStream(n.PresenceBucket()), 0}, {n.DMStream(), 0},
	} {
		if got := after[c.stream].Msgs - before[c.stream].Msgs; got != c.grew {
			t.Errorf("%s grew by %d messages, want %d (its owners' writes only): %+v", c.stream, got, c.grew, after[c.stream])
		}
		if after[c.stream].FirstSeq != before[c.stream].FirstSeq {
			t.Errorf("%s lost its oldest messages: first sequence %d, was %d", c.stream, after[c.stream].FirstSeq, before[c.stream].FirstSeq)
		}
	}
	if reg := wire.KVStream(n.ChannelsBucket()); after[reg].LastSeq != before[reg].LastSeq {
		t.Errorf("the channel registry was written: last sequence %d, was %d", after[reg].LastSeq, before[reg].LastSeq)
	}
	if got := presenceRevision(ctx, t, eve, n, bob.cred.ID); got != bobsRow {
		t.Errorf("bob's presence row is revision %d, was %d: something else wrote his key", got, bobsRow)
	}
}

// presenceRevision returns the revision of key's presence row as p's watch shows it.
func presenceRevision(ctx context.Context, t *testing.T, p *peer, n wire.Names, key string) uint64 {
	t.Helper()
	kv, err := p.jetStream(t).KeyValue(ctx, n.PresenceBucket())
	if err != nil {
		t.Fatal(p.explain(err))
	}
	watch, err := kv.Watch(ctx, key)
	if err != nil {
		t.Fatal(p.explain(err))
	}
	defer watch.Stop()
	select {
	case e := <-watch.Updates():
		if e == nil {
			t.Fatalf("presence key %s has no row", key)
		}
		return e.Revision()
	case <-ctx.Done():
		t.Fatal(p.explain(ctx.Err()))
	}
	return 0
}

// publishWithReply publishes data on subject with reply as p and fails on a refusal.
func publishWithReply(t *testing.T, p *peer, subject, reply string, data []byte) {
	t.Helper()
	if err := p.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: data}); err != nil {
		t.Fatal(err)
	}
	if err := p.settle(); err != nil {
		t.Fatalf("publish on %s: %v", subject, err)
	}
}

// awaitDLV waits until DLV_main holds at least want copies and returns the state of every stream of
// the mesh, by name, as the broker reports it.
func awaitDLV(t *testing.T, m *space.Mesh, n wire.Names, want uint64) map[string]server.StreamState {
	t.Helper()
	var states map[string]server.StreamState
	await.True(t, 2*answerWait, "the durable copies handed over", func() bool {
		states = streamStates(t, m)
		return states[n.DLVStream()].Msgs >= want
	})
	return states
}

// streamStates reads every stream's state from the broker, by stream name.
func streamStates(t *testing.T, m *space.Mesh) map[string]server.StreamState {
	t.Helper()
	jsz, err := m.Broker().Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]server.StreamState{}
	for _, acc := range jsz.AccountDetails {
		for _, st := range acc.Streams {
			states[st.Name] = st.State
		}
	}
	return states
}

// TestControlAnswersReachOnlyTheRequester: eve sends delivery control requests whose reply
// subjects name bob's inbox, bob's own control reply lane and a chat subject carrying
// carol's sender token, all subscribed to by bob. The service answers none of them, counts
// each, and still answers eve's own request on her lane; bob receives nothing.
func TestControlAnswersReachOnlyTheRequester(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t)
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*answerWait)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	eve := newPeer(t, m, mint(t, m, "eve", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	bobsLane := n.CtlSubject(wire.DeliveryService, bob.cred.ID) + ".reply."
	targets := []string{wire.InboxPrefix(bob.cred.ID) + ".x", bobsLane + "x", n.ChatSubject(carol.ID, "general")}
	subs := make([]*nats.Subscription, 0, len(targets))
	for _, s := range []string{wire.InboxPrefix(bob.cred.ID) + ".>", bobsLane + ">", n.ChatSubject("*", "general")} {
		sub, err := bob.nc.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	if err := bob.settle(); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(wire.ControlRequest{Op: wire.OpListMemberships, Args: json.RawMessage(`{}`),
		From: wire.EndpointRef{ID: eve.cred.ID, Name: eve.cred.Name}})
	if err != nil {
		t.Fatal(err)
	}
	const each = 20
	for _, target := range targets {
		for range each {
			publishWithReply(t, eve, n.CtlSubject(wire.DeliveryService, eve.cred.ID), target, body)
		}
	}
	if err := controlCall(n)(ctx, t, eve); err != nil {
		t.Fatalf("eve's own request: %v", err)
	}
	svc, err := m.Delivery("main")
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, answerWait, "every aimed request counted as refused", func() bool {
		return svc.Stats().ControlRefusedReplySubject >= int64(each*len(targets))
	})
	if err := bob.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		if n, _, _ := sub.Pending(); n != 0 {
			msg, _ := sub.NextMsg(0)
			t.Errorf("bob received %d answers on %s, want none; the first on %s: %s", n, targets[i], msg.Subject, msg.Data)
		}
	}
}

// TestAPullAimedAtAnotherChannelIsNeverSurfaced: eve, who reads #general, pulls her own
// history consumer with the reply subject of a team.secret post, which dave subscribes to.
// The broker sends dave copies of #general under their stored subjects; dave's Endpoint
// counts each as an anomaly and surfaces none. One pull request brings at most
// broker.MaxPullBatch copies.
func TestAPullAimedAtAnotherChannelIsNeverSurfaced(t *testing.T) {
	t.Parallel()
	m := spacetest.New(t, func(o *space.Options) { o.Listen = "127.0.0.1:0" })
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*answerWait)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"team.secret"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}))
	eve := newPeer(t, m, mint(t, m, "eve", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	got := make(chan endpoint.Delivery, 64)
	dave := joinAt(ctx, t, m, mint(t, m, "dave", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"team.secret"}}), got, "team.secret")
	const posts = 5
	for range posts {
		if err := store(n.ChatSubject(bob.cred.ID, "general"), "general", nil)(ctx, t, bob); err != nil {
			t.Fatal(err)
		}
	}
	spec := n.HistoryConsumerSpec(eve.cred.ID, "general", time.Time{})
	if _, err := eve.jetStream(t).CreateOrUpdateConsumer(ctx, spec.Stream, jsconfig.Consumer(spec)); err != nil {
		t.Fatal(eve.explain(err))
	}
	next := "$JS.API.CONSUMER.MSG.NEXT." + spec.Stream + "." + spec.Name
	publishWithReply(t, eve, next, n.ChatSubject(carol.ID, "team.secret"), []byte(`{"batch":5,"no_wait":true}`))
	await.True(t, answerWait, "dave's Endpoint to count the aimed copies", func() bool {
		return dave.Stats().Terminated.Of(wire.ReasonMalformedSubject) >= posts
	})
	select {
	case d := <-got:
		t.Errorf("dave surfaced %s on %s", d.Meta.Kind, d.Meta.Subject)
	default:
	}
	too := fmt.Sprintf(`{"batch":%d,"no_wait":true}`, broker.MaxPullBatch+1)
	msg, err := eve.request(next, "", nil, []byte(too))
	if err != nil || msg.Header.Get("Status") != "409" {
		t.Errorf("a pull of %d copies: %v %v, want 409 Exceeded MaxRequestBatch", broker.MaxPullBatch+1, msg, err)
	}
}
