package space

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

func startTestMesh(t testing.TB, opts Options) *Mesh {
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

func testMint(t testing.TB, m *Mesh, name string, p provisioner.Profile, g provisioner.Grants) *provisioner.Credential {
	t.Helper()
	cred, err := m.Mint(context.Background(), provisioner.MintRequest{Space: "main", Name: name, Profile: p, Grants: g})
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// agentJS is a JetStream client on a connection with cred, as an agent holds it.
func agentJS(t testing.TB, m *Mesh, cred *provisioner.Credential) jetstream.JetStream {
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
	rt, err := m.runtime("main")
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
	if rt, err = m.runtime("main"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spy", n.DMHistoryConsumer(root.ID)} {
		if _, ok := consumerConfig(t, rt, n.DMStream(), name); ok {
			t.Errorf("%s survived", name)
		}
	}
}

// fullPresence fills the presence bucket of m's space "main" as an agent can: kept transient
// pull watches the rule keeps (named c0, c1, …) and junk durables pushing into no identity's
// inbox (named d<kept>, …), which the rule deletes. Creating a name that exists again is a
// no-op, so a benchmark refills only what a pass deleted.
func fullPresence(tb testing.TB, m *Mesh, js jetstream.JetStream, kept, junk int) {
	tb.Helper()
	ctx := context.Background()
	stream := wire.KVStream(wire.NewNames("main").PresenceBucket())
	for i := range kept + junk {
		cfg := jetstream.ConsumerConfig{Name: fmt.Sprintf("c%d", i), AckPolicy: jetstream.AckNonePolicy,
			InactiveThreshold: time.Minute}
		if i >= kept {
			cfg = jetstream.ConsumerConfig{Durable: fmt.Sprintf("d%d", i), AckPolicy: jetstream.AckNonePolicy,
				DeliverSubject: fmt.Sprintf("squat.%d", i)}
		}
		if _, err := js.CreateOrUpdateConsumer(ctx, stream, cfg); err != nil {
			tb.Fatal(err)
		}
	}
}

// A pass over a space holding 500 consumers the rule keeps and 100 it does not deletes exactly
// the 100. BenchmarkReconcile measures how long it takes.
func TestAPassOverAFullSpaceDeletesOnlyWhatNoRuleKeeps(t *testing.T) {
	t.Parallel()
	// The periodic pass and the check of each create are both off, so the pass below finds
	// every consumer the agent made.
	m := startTestMesh(t, Options{Memory: true, ReconcileInterval: -1})
	js := agentJS(t, m, testMint(t, m, "busy", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	const kept, junk = 500, 100
	fullPresence(t, m, js, kept, junk)
	rep, err := m.Reconcile(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != junk || rep.Checked < kept+junk {
		t.Fatalf("report %+v; want %d deleted of at least %d", rep, junk, kept+junk)
	}
}

// BenchmarkReconcile measures the two ways the reconciler acts (docs/hostile-agents.md "Nothing
// outlives its grants"): one periodic pass over a full space, and the check of one create, from
// the create's answer to the consumer's deletion.
func BenchmarkReconcile(b *testing.B) {
	b.Run("a pass over 600 agent consumers, 100 of them deleted", func(b *testing.B) {
		m := startTestMesh(b, Options{Memory: true, ReconcileInterval: -1})
		js := agentJS(b, m, testMint(b, m, "busy", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
		const kept, junk = 500, 100
		var checked, deleted int
		for b.Loop() {
			b.StopTimer()
			fullPresence(b, m, js, kept, junk)
			b.StartTimer()
			rep, err := m.Reconcile(context.Background(), "main")
			if err != nil {
				b.Fatal(err)
			}
			checked, deleted = rep.Checked, rep.Deleted
		}
		b.ReportMetric(float64(checked), "consumers/pass")
		b.ReportMetric(float64(deleted), "deleted/pass")
	})
	b.Run("a push consumer deleted after its create", func(b *testing.B) {
		// The periodic pass is an hour away: only the check of each create acts.
		m := startTestMesh(b, Options{Memory: true, ReconcileInterval: time.Hour})
		js := agentJS(b, m, testMint(b, m, "busy", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
		rt, err := m.runtime("main")
		if err != nil {
			b.Fatal(err)
		}
		stream := wire.KVStream(rt.names.PresenceBucket())
		// gone polls the consumer as its creator sees it; a poll's round trip is the resolution.
		gone := func(name string) bool {
			_, err := js.Consumer(context.Background(), stream, name)
			return errors.Is(err, jetstream.ErrConsumerNotFound)
		}
		var total time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			cfg := jetstream.ConsumerConfig{Durable: fmt.Sprintf("spy%d", i), AckPolicy: jetstream.AckNonePolicy,
				DeliverSubject: fmt.Sprintf("squat.%d", i)}
			i++
			b.StartTimer()
			if _, err := js.CreateOrUpdateConsumer(context.Background(), stream, cfg); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			for !gone(cfg.Durable) {
				if time.Since(t0) > testWait {
					b.Fatalf("%s was not deleted within %v", cfg.Durable, testWait)
				}
			}
			total += time.Since(t0)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(i), "ms-to-delete")
	})
}

// hangingStream is a stream whose consumer listing is never answered, as on a cluster that
// has lost its quorum, until the caller's context ends.
type hangingStream struct {
	jetstream.Stream
	entered chan struct{}
	once    sync.Once
}

func (s *hangingStream) ListConsumers(ctx context.Context) jetstream.ConsumerInfoLister {
	s.once.Do(func() { close(s.entered) })
	return hangingLister{ctx}
}

type hangingLister struct{ ctx context.Context }

func (l hangingLister) Info() <-chan *jetstream.ConsumerInfo {
	ch := make(chan *jetstream.ConsumerInfo)
	context.AfterFunc(l.ctx, func() { close(ch) })
	return ch
}

func (l hangingLister) Err() error { return l.ctx.Err() }

// TestEndingTheMeshsLifeCancelsAPassInFlight: a reconciliation pass whose requests go
// unanswered ends as soon as the mesh's life does, not after its own timeout, so Close
// does not wait for it (a cluster test's Close waited minutes for passes of a node whose
// peers were gone).
func TestEndingTheMeshsLifeCancelsAPassInFlight(t *testing.T) {
	t.Parallel()
	m := startTestMesh(t, Options{Memory: true, ReconcileInterval: -1})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	chat := rt.names.ChatStream()
	hang := &hangingStream{Stream: rt.streams[chat], entered: make(chan struct{})}
	rt.streams[chat] = hang
	life, end := context.WithCancel(context.Background())
	defer end()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		m.reconcileLoop(life, rt, 10*time.Millisecond, nil)
	}()
	select {
	case <-hang.entered:
	case <-time.After(testWait):
		t.Fatal("no pass listed the consumers of " + chat)
	}
	end()
	select {
	case <-stopped:
	case <-time.After(reconcileTimeout / 2):
		t.Fatalf("the loop still ran %v after its life ended", reconcileTimeout/2)
	}
}
