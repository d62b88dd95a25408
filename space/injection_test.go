package space_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestAnswersAimedAtOthersDataStoreNothing covers issue 12 item 2: an agent publishes on
// subjects it may publish on, with reply subjects naming what other agents have stored, so
// that JetStream's answers (PubAcks, API replies, the messages of its own pull) would be
// stored there and evict older data. In one account they were (1 000 publishes evicted a
// channel's whole history). With storage reached only through the agent account's imports,
// no answer is stored anywhere: every stream holds exactly what its owners wrote.
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
