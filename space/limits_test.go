package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/delivery"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// The resource-bound suite (issue 12 item 4): one agent credential, used through raw nats.go
// as an attacker would, against a mesh with small limits. Each test repeats an abuse that
// worked before the limits and requires the broker to bound it.

// limitedMesh starts a mesh with the limits change sets and mints an attacker and a victim.
func limitedMesh(t *testing.T, change func(*space.Limits)) (m *space.Mesh, attacker, victim *provisioner.Credential) {
	t.Helper()
	m = spacetest.New(t, func(o *space.Options) { change(&o.Limits) })
	grants := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}, Role: "builder"}
	return m, mint(t, m, "mallory", provisioner.ProfileAgent, grants), mint(t, m, "victim", provisioner.ProfileAgent, grants)
}

// streamState reads stream's state as p sees it, with the per-subject counts of filter.
func streamState(ctx context.Context, t *testing.T, p *peer, stream, filter string) *jetstream.StreamInfo {
	t.Helper()
	s, err := p.jetStream(t).Stream(ctx, stream)
	if err != nil {
		t.Fatalf("bind %s: %v", stream, p.explain(err))
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatalf("info %s: %v", stream, p.explain(err))
	}
	return info
}

// An agent that floods DMs to made-up ids, or one recipient, or tasks to made-up roles, fills
// at most the stream's byte and per-subject limits; past TASK's bytes the publish is refused.
func TestOneAgentCannotFillTheStore(t *testing.T) {
	t.Parallel()
	const streamBytes = 1 << 20
	m, mallory, victim := limitedMesh(t, func(l *space.Limits) {
		l.DMBytes, l.TaskBytes, l.PerSubject = streamBytes, streamBytes, 5
	})
	n := wire.NewNames("main")
	p := newPeer(t, m, mallory)
	js := p.jetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body := make([]byte, 8<<10)

	t.Run("DMs to made-up ids stay within the DM stream's bytes", func(t *testing.T) {
		for i := range 4 * streamBytes / len(body) {
			if _, err := js.Publish(ctx, n.InstSubject(fmt.Sprintf("madeup%d", i), mallory.ID), body); err != nil {
				t.Fatalf("DM %d: %v", i, p.explain(err))
			}
		}
		if got := streamState(ctx, t, p, n.DMStream(), "").State.Bytes; got > streamBytes {
			t.Fatalf("DM stream holds %d bytes after 4 MiB of DMs; limit %d", got, streamBytes)
		}
	})
	t.Run("DMs to one recipient past the task bound are all kept: DM evicts only by bytes", func(t *testing.T) {
		subject := n.InstSubject(victim.ID, mallory.ID)
		for i := range 20 {
			if _, err := js.Publish(ctx, subject, []byte("dm")); err != nil {
				t.Fatalf("DM %d: %v", i, p.explain(err))
			}
		}
		if got := streamState(ctx, t, p, n.DMStream(), subject).State.Subjects[subject]; got != 20 {
			t.Fatalf("the DM stream keeps %d messages on %s, want all 20", got, subject)
		}
	})
	t.Run("a task past the per-subject limit is refused", func(t *testing.T) {
		subject := n.SvcSubject("nobody", mallory.ID)
		var err error
		for i := 0; i < 6 && err == nil; i++ {
			_, err = js.Publish(ctx, subject, []byte("task"))
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.ErrorCode(server.JSStreamStoreFailedF) {
			t.Fatalf("sixth task on one subject: %v; want JetStream's store failure", err)
		}
	})
	t.Run("a presence record larger than the bucket allows is refused", func(t *testing.T) {
		kv, err := js.KeyValue(ctx, n.PresenceBucket())
		if err != nil {
			t.Fatal(p.explain(err))
		}
		_, err = kv.Put(ctx, mallory.ID, make([]byte, wire.PresenceMaxMsgSize+1))
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.ErrorCode(server.JSStreamMessageExceedsMaximumErr) {
			t.Fatalf("a %d-byte presence record: %v; want JetStream's message size refusal", wire.PresenceMaxMsgSize+1, err)
		}
	})
	t.Run("tasks to made-up roles are refused past the task stream's bytes", func(t *testing.T) {
		var err error
		sent := 0
		for ; sent < 4*streamBytes/len(body) && err == nil; sent++ {
			_, err = js.Publish(ctx, n.SvcSubject(fmt.Sprintf("madeup%d", sent), mallory.ID), body)
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Description, "maximum bytes") {
			t.Fatalf("after %d tasks of %d bytes: %v; want JetStream's maximum bytes refusal", sent, len(body), err)
		}
		if got := streamState(ctx, t, p, n.TaskStream(), "").State.Bytes; got > streamBytes {
			t.Fatalf("task stream holds %d bytes, limit %d", got, streamBytes)
		}
	})
}

// One connection of an agent holds at most Limits.Subscriptions subscriptions.
func TestSubscriptionsPastTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	m, mallory, _ := limitedMesh(t, func(l *space.Limits) { l.Subscriptions = 50 })
	p := newPeer(t, m, mallory)
	inbox := wire.InboxPrefix(mallory.ID)
	for i := range 40 {
		if _, err := p.nc.SubscribeSync(fmt.Sprintf("%s.ok%d", inbox, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.settle(); err != nil {
		t.Fatalf("40 subscriptions under a limit of 50 were refused: %v", err)
	}
	for i := range 1000 {
		if _, err := p.nc.SubscribeSync(fmt.Sprintf("%s.over%d", inbox, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.settle(); !errors.Is(err, nats.ErrMaxSubscriptionsExceeded) {
		t.Fatalf("1040 subscriptions under a limit of 50: %v; want %v", err, nats.ErrMaxSubscriptionsExceeded)
	}
}

// A space accepts at most Limits.Connections connections, the mesh's own included.
func TestConnectionsPastTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	const limit = 20
	m, mallory, _ := limitedMesh(t, func(l *space.Limits) { l.Connections = limit })
	opened := 0
	for ; opened <= limit; opened++ {
		nc, err := dial(m, mallory, nats.NoReconnect())
		if err != nil {
			if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
				t.Fatalf("connection %d failed with %v; want %v", opened+1, err, nats.ErrMaxAccountConnectionsExceeded)
			}
			return
		}
		t.Cleanup(nc.Close)
	}
	t.Fatalf("the space accepted %d connections of one agent; its limit is %d", opened, limit)
}

// A message larger than Limits.Payload is refused and its connection closed.
func TestPayloadPastTheLimitIsRefused(t *testing.T) {
	t.Parallel()
	m, mallory, victim := limitedMesh(t, func(l *space.Limits) { l.Payload = 4096 })
	n := wire.NewNames("main")
	small := newPeer(t, m, mallory)
	if err := store(n.InstSubject(victim.ID, mallory.ID), "", nil)(context.Background(), t, small); err != nil {
		t.Fatalf("a DM under the payload limit: %v", err)
	}
	w := watchConn(t, m, mallory)
	if err := w.nc.Publish(n.InstSubject(victim.ID, mallory.ID), make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.closed:
	case <-time.After(lifecycleWait):
		t.Fatalf("an 8 KiB message under a 4 KiB payload limit left the connection open (last error %v)", w.nc.LastError())
	}
	if err := w.nc.LastError(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "maximum payload") {
		t.Fatalf("closed with %v; want the broker's maximum payload violation", err)
	}
}

// fillWatchCap creates durable pull consumers on stream as p until the broker refuses, and
// returns how many it created; the refusal must be the maximum consumers one, within limit.
func fillWatchCap(t *testing.T, p *peer, stream string, limit int) int {
	t.Helper()
	created, refusal := 0, error(nil)
	for ; created < 10*limit && refusal == nil; created++ {
		refusal = createHog(t, p, stream, fmt.Sprintf("hog%d", created))
	}
	var apiErr *jetstream.APIError
	if !errors.As(refusal, &apiErr) || apiErr.ErrorCode != jetstream.ErrorCode(server.JSMaximumConsumersLimitErr) {
		t.Fatalf("after %d consumers: %v; want the maximum consumers refusal", created, refusal)
	}
	if created-1 > limit {
		t.Fatalf("the attacker created %d consumers on %s; the limit is %d", created-1, stream, limit)
	}
	return created - 1
}

// createHog creates one durable pull consumer named name on stream as p, through the raw API.
func createHog(t *testing.T, p *peer, stream, name string) error {
	t.Helper()
	body, err := json.Marshal(createBody(stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckNonePolicy}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.request("$JS.API.CONSUMER.CREATE."+stream+"."+name, "", nil, body)
	return err
}

// sendAndAwaitCopy publishes one message on general as sender and waits until member, offline
// and a durable member of general, has want durable copies waiting.
func sendAndAwaitCopy(ctx context.Context, t *testing.T, m *space.Mesh, sender *peer, member string, want int) {
	t.Helper()
	n := wire.NewNames("main")
	if _, err := sender.request(n.ChatSubject(sender.cred.ID, "general"), "", nil, envelope(t, sender.cred, "general", "still routed")); err != nil {
		t.Fatal(err)
	}
	await.True(t, 10*time.Second, fmt.Sprintf("%d durable copies waiting for %s", want, member), func() bool {
		b, err := m.Pending(ctx, "main", member)
		return err == nil && b.Durable.Pending == uint64(want)
	})
}

// An agent that creates consumers on the presence bucket until the broker refuses stops at
// Limits.WatchConsumers; each of them dies WatchInactiveLimit after it goes idle, a restart
// included; a watch a victim already holds keeps working, and the mesh still creates a new
// agent's own consumers, which live on streams agents cannot create consumers on. The
// delivery service follows presence without a consumer, so a restart of its presence loop
// under the full cap comes back and durable copies keep being fanned out. While the attacker
// holds the rest, a new agent's own watch is refused.
func TestPresenceConsumersAreBounded(t *testing.T) {
	t.Parallel()
	const limit = 20
	// The per-identity cap is lifted to the bucket's: mallory stands for as many colluding
	// identities as it takes to hold the whole cap (TestAnIdentityKeepsOnlyItsShareOfThePresenceWatches).
	m, mallory, victim := limitedMesh(t, func(l *space.Limits) { l.WatchConsumers, l.WatchesPerIdentity = limit, limit })
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	joinDurablyAndLeave(ctx, t, m, carol, "general")
	v := newPeer(t, m, victim)
	kv, err := v.jetStream(t).KeyValue(ctx, n.PresenceBucket())
	if err != nil {
		t.Fatal(v.explain(err))
	}
	watch, err := kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(v.explain(err))
	}
	defer watch.Stop()

	p := newPeer(t, m, mallory)
	stream := wire.KVStream(n.PresenceBucket())
	fillWatchCap(t, p, stream, limit)
	info, err := p.jetStream(t).Consumer(ctx, stream, "hog0")
	if err != nil {
		t.Fatal(p.explain(err))
	}
	if got := info.CachedInfo().Config.InactiveThreshold; got != wire.WatchInactiveLimit {
		t.Fatalf("an attacker's durable lives %v after going idle; want %v", got, wire.WatchInactiveLimit)
	}

	t.Run("the victim's watch still sees presence", func(t *testing.T) {
		if _, err := kv.Put(ctx, victim.ID, []byte(`{}`)); err != nil {
			t.Fatal(v.explain(err))
		}
		select {
		case e := <-watch.Updates():
			if e == nil || e.Key() != victim.ID {
				t.Fatalf("watch gave %v; want the victim's own presence", e)
			}
		case <-ctx.Done():
			t.Fatal("the victim's watch went silent after the attacker hit the consumer limit")
		}
	})
	// What does not hold (RELIABILITY.md, "A hostile agent"): max_consumers counts every
	// consumer of the stream, and nothing tells the mesh which identity made a pull consumer,
	// so the attacker's share cannot be bounded per identity.
	t.Run("a new agent's own presence watch is refused while the attacker holds the rest", func(t *testing.T) {
		late := mint(t, m, "late-watcher", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
		lp := newPeer(t, m, late)
		lkv, err := lp.jetStream(t).KeyValue(ctx, n.PresenceBucket())
		if err != nil {
			t.Fatal(lp.explain(err))
		}
		w, err := lkv.WatchAll(ctx)
		if err == nil {
			_ = w.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), "maximum consumers limit reached") {
			t.Fatalf("a new agent's presence watch: %v; want the maximum consumers refusal (if it now works, update RELIABILITY.md)", err)
		}
	})
	t.Run("the delivery service's presence loop, restarted under the full cap, comes back and durable copies are still fanned out", func(t *testing.T) {
		svc, err := m.Delivery("main")
		if err != nil {
			t.Fatal(err)
		}
		release, err := svc.Interrupt(delivery.LoopPresence)
		if err != nil {
			t.Fatal(err)
		}
		// While it is down, a durable copy is still routed: presence serves @mentions only.
		sendAndAwaitCopy(ctx, t, m, v, "carol", 1)
		release()
		await.True(t, 10*time.Second, "the delivery service to be healthy again", func() bool { return svc.Healthy() == nil })
		sendAndAwaitCopy(ctx, t, m, v, "carol", 2)
	})
	t.Run("the mesh still creates a new agent's consumers", func(t *testing.T) {
		late := mint(t, m, "late", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
		if err := bind(n.DMStream(), n.DMConsumer(late.ID), false)(ctx, t, newPeer(t, m, late)); err != nil {
			t.Fatalf("a new agent cannot bind its dm_: %v", err)
		}
	})
}

// A mesh restarted while an attacker's durable consumers hold the whole presence consumer cap
// starts, and fans a durable copy out to an offline member (issue 12 item 4).
func TestAMeshStartsAndFansOutUnderAFullPresenceConsumerCap(t *testing.T) {
	t.Parallel()
	const limit = 10
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := space.Options{Dir: t.TempDir(), ReconcileInterval: -1}
	opts.Limits.WatchConsumers, opts.Limits.WatchesPerIdentity = limit, limit
	start := func() *space.Mesh {
		m, err := space.Start(ctx, opts)
		if err != nil {
			t.Fatalf("start the mesh: %v", err)
		}
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		return m
	}
	m := start()
	grants := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, grants)
	bob := mint(t, m, "bob", provisioner.ProfileAgent, grants)
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	joinDurablyAndLeave(ctx, t, m, carol, "general")
	fillWatchCap(t, newPeer(t, m, mallory), wire.KVStream(wire.NewNames("main").PresenceBucket()), limit)
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}

	m = start()
	sendAndAwaitCopy(ctx, t, m, newPeer(t, m, bob), "carol", 1)
}

// 20 000 publishes the broker denies write a bounded number of log lines, the first of them
// in full.
func TestDeniedPublishesWriteBoundedLogLines(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	m := spacetest.New(t, func(o *space.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, provisioner.Grants{})
	p := newPeer(t, m, mallory)
	denied := wire.NewNames("main").ChatSubject("someone-else", "general")
	for range 20000 {
		if err := p.nc.Publish(denied, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.settle(); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("denied publishes settled with %v; want a permissions violation", err)
	}
	lines := strings.Count(logs.String(), "Publish Violation")
	if lines == 0 || lines > 2 {
		t.Fatalf("20 000 denied publishes wrote %d log lines naming the violation; want the first, and at most one summary:\n%.2000s", lines, logs)
	}
}

// unboundedLayout is the space's streams as the layout before stream limits had them.
func unboundedLayout(n wire.Names) []jetstream.StreamConfig {
	specs := n.Streams()
	for i := range specs {
		specs[i].MaxBytes, specs[i].MaxConsumers, specs[i].ConsumerInactiveLimit = wire.Unlimited, wire.Unlimited, 0
		if specs[i].Name == n.DMStream() || specs[i].Name == n.TaskStream() {
			specs[i].MaxMsgsPerSubject, specs[i].Discard, specs[i].DiscardNewPerSubject = 0, wire.DiscardOld, false
		}
	}
	return jsconfig.Streams(specs, jetstream.FileStorage)
}

// A data directory whose streams carry no limits, and hold more than the new ones allow,
// starts under the limits: every stream takes its bounds and is trimmed to them, and the
// agents' credentials keep working.
func TestAnUnboundedDataDirectoryStartsUnderTheLimits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir, n := t.TempDir(), wire.NewNames("main")
	store, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.EnsureSpace("main"); err != nil {
		t.Fatal(err)
	}
	// The provisioner's own credential: the one identity that may update the streams.
	prov, err := store.InfraCredential("main", provisioner.ProfileProvisioner)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}

	first := startOn(ctx, t, dir)
	old := connect(t, first, prov)
	oldJS, err := jetstream.New(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range unboundedLayout(n) {
		if _, err := oldJS.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("set the old layout on %s: %v", cfg.Name, err)
		}
	}
	mallory := mint(t, first, "mallory", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	js := newPeer(t, first, mallory).jetStream(t)
	body := make([]byte, 8<<10)
	for i := range 3 << 20 / len(body) {
		if _, err := js.Publish(ctx, n.InstSubject(fmt.Sprintf("madeup%d", i), mallory.ID), body); err != nil {
			t.Fatalf("DM %d into the old layout: %v", i, err)
		}
	}
	old.Close()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}

	const dmBytes = 1 << 20
	second, err := space.Start(ctx, space.Options{Dir: dir, Limits: space.Limits{DMBytes: dmBytes}})
	if err != nil {
		t.Fatalf("start under the limits on an unbounded data directory: %v", err)
	}
	t.Cleanup(func() { _ = second.Close(context.Background()) })
	p := newPeer(t, second, mallory)
	info := streamState(ctx, t, p, n.DMStream(), "")
	if info.State.Bytes > dmBytes || info.Config.MaxBytes != dmBytes || info.Config.MaxMsgsPerSubject != wire.Unlimited {
		t.Fatalf("DM after the restart holds %d bytes under max_bytes %d and %d per subject; want at most %d bytes and %d per subject",
			info.State.Bytes, info.Config.MaxBytes, info.Config.MaxMsgsPerSubject, dmBytes, wire.Unlimited)
	}
	if task := streamState(ctx, t, p, n.TaskStream(), "").Config; task.Discard != jetstream.DiscardNew || task.MaxBytes != wire.DefaultTaskBytes {
		t.Fatalf("TASK after the restart discards %v with max_bytes %d", task.Discard, task.MaxBytes)
	}
	if _, err := p.jetStream(t).Publish(ctx, n.InstSubject("madeup0", mallory.ID), []byte("after")); err != nil {
		t.Fatalf("a DM after the restart: %v", err)
	}
}
