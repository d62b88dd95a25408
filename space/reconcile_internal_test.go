package space

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// These tests plant what no credential can create any more (a redefined dm_, a push consumer
// on DM, consumers of a revoked admin) with the provisioner's own connection, as an older
// mesh or an older grant set would have left them, and require the reconciler to undo it.

const testWait = 30 * time.Second

func startTestMesh(t *testing.T, opts Options) *Mesh {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	m, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m
}

func testMint(t *testing.T, m *Mesh, name string, p provisioner.Profile, g provisioner.Grants) *provisioner.Credential {
	t.Helper()
	cred, err := m.Mint(context.Background(), provisioner.MintRequest{Space: "main", Name: name, Profile: p, Grants: g}, true)
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// agentJS is a JetStream client on a connection with cred, as an agent holds it.
func agentJS(t *testing.T, m *Mesh, cred *provisioner.Credential) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(m.InProcess()), nats.UserJWTAndSeed(cred.JWT, string(cred.Seed)),
		nats.CustomInboxPrefix(wire.InboxPrefix(cred.ID)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func consumerConfig(t *testing.T, rt *spaceRuntime, stream, name string) (jetstream.ConsumerConfig, bool) {
	t.Helper()
	c, err := rt.js.Consumer(context.Background(), stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return jetstream.ConsumerConfig{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo().Config, true
}

func TestTheReconcilerRestoresAndRemovesWhatAnAdminLeftBehind(t *testing.T) {
	t.Parallel()
	opts := Options{Dir: t.TempDir(), ReconcileInterval: -1}
	m := startTestMesh(t, opts)
	ctx := context.Background()
	bob := testMint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	root := testMint(t, m, "root", provisioner.ProfileAdmin, provisioner.Grants{})
	rt, err := m.space("main")
	if err != nil {
		t.Fatal(err)
	}
	n := rt.names
	allDMs := n.Prefix() + ".inst.>"
	plant := func(stream string, cfg jetstream.ConsumerConfig) {
		t.Helper()
		if _, err := rt.js.CreateOrUpdateConsumer(ctx, stream, cfg); err != nil {
			t.Fatalf("plant %s: %v", cfg.Durable, err)
		}
	}
	plant(n.DMStream(), jetstream.ConsumerConfig{Durable: n.DMConsumer(bob.ID), FilterSubject: allDMs,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: m.opts.AckWait})
	plant(n.DMStream(), jetstream.ConsumerConfig{Durable: n.DMHistoryConsumer(root.ID), FilterSubject: allDMs,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: wire.HistoryInactiveThreshold})
	if err := rt.js.DeleteConsumer(ctx, n.DLVStream(), n.DLVConsumer(bob.ID)); err != nil {
		t.Fatal(err)
	}
	rep, err := m.Reconcile(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != 2 || rep.Deleted != 0 {
		t.Errorf("report %+v; want 2 restored (dm_ and dlv_ of bob), none deleted", rep)
	}
	if cfg, ok := consumerConfig(t, rt, n.DMStream(), n.DMConsumer(bob.ID)); !ok || cfg.FilterSubject != n.DMConsumerSpec(bob.ID, 0).Filter {
		t.Errorf("bob's widened dm_ was not restored: present %v, filter %q", ok, cfg.FilterSubject)
	}
	if _, ok := consumerConfig(t, rt, n.DLVStream(), n.DLVConsumer(bob.ID)); !ok {
		t.Error("bob's deleted dlv_ was not recreated")
	}
	if _, ok := consumerConfig(t, rt, n.DMStream(), n.DMHistoryConsumer(root.ID)); !ok {
		t.Error("the dmhist of an active admin was deleted")
	}

	// A push consumer delivering every DM into bob's inbox, then the admin is revoked and the
	// mesh restarted: neither the push consumer nor the revoked admin's dmhist survives.
	plant(n.DMStream(), jetstream.ConsumerConfig{Durable: "spy", FilterSubject: allDMs, AckPolicy: jetstream.AckNonePolicy,
		DeliverSubject: wire.InboxPrefix(bob.ID) + ".spy"})
	if err := m.Revoke(ctx, "main", root.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m = startTestMesh(t, opts)
	if rt, err = m.space("main"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spy", n.DMHistoryConsumer(root.ID)} {
		if _, ok := consumerConfig(t, rt, n.DMStream(), name); ok {
			t.Errorf("%s survived", name)
		}
	}
}

// TestReconcileTimeOfAFullSpace reports how long one pass takes over a space holding 500
// consumers the rule keeps and 100 it deletes; it asserts only the counts.
func TestReconcileTimeOfAFullSpace(t *testing.T) {
	t.Parallel()
	m := startTestMesh(t, Options{Memory: true, ReconcileInterval: -1})
	ctx := context.Background()
	rt, err := m.space("main")
	if err != nil {
		t.Fatal(err)
	}
	n := rt.names
	// An agent creates them, on the presence bucket where its grants let it create any:
	// transient pull watches the rule keeps, and watches pushing into no identity's inbox,
	// which it deletes.
	js := agentJS(t, m, testMint(t, m, "busy", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	stream := wire.KVStream(n.PresenceBucket())
	const kept, junk = 500, 100
	for i := range kept + junk {
		cfg := jetstream.ConsumerConfig{Name: fmt.Sprintf("c%d", i), AckPolicy: jetstream.AckNonePolicy,
			InactiveThreshold: time.Minute}
		if i >= kept {
			cfg = jetstream.ConsumerConfig{Durable: fmt.Sprintf("d%d", i), AckPolicy: jetstream.AckNonePolicy,
				DeliverSubject: fmt.Sprintf("squat.%d", i)}
		}
		if _, err := js.CreateOrUpdateConsumer(ctx, stream, cfg); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	rep, err := m.Reconcile(ctx, "main")
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one pass over %d consumers (%d deleted) took %v", rep.Checked, rep.Deleted, took)
	if rep.Deleted != junk || rep.Checked < kept+junk {
		t.Fatalf("report %+v; want %d deleted of at least %d", rep, junk, kept+junk)
	}
}
