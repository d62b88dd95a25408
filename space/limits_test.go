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
	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/internal/testlog"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// The resource-bound suite (docs/hostile-agents.md "Bounded shares"): one agent credential,
// used through raw nats.go as an attacker would, against a mesh with small limits. Each test
// repeats an abuse that worked before the limits and requires the broker to bound it.

// limitedMesh starts a mesh with the limits change sets and mints an attacker and a victim.
func limitedMesh(t *testing.T, change func(*space.Limits)) (m *space.Mesh, attacker, victim *provisioner.Credential) {
	t.Helper()
	m, attacker, victim, _ = limitedMeshLogged(t, change)
	return m, attacker, victim
}

// loggedMesh is a test mesh with change applied to its options and its log lines kept.
func loggedMesh(t *testing.T, change func(*space.Options)) (*space.Mesh, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	m := spacetest.New(t, func(o *space.Options) {
		change(o)
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	return m, logs
}

// limitedMeshLogged is limitedMesh with the mesh's log lines kept.
func limitedMeshLogged(t *testing.T, change func(*space.Limits)) (m *space.Mesh, attacker, victim *provisioner.Credential, logs *testlog.Buffer) {
	t.Helper()
	m, logs = loggedMesh(t, func(o *space.Options) { change(&o.Limits) })
	grants := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}, Role: "builder"}
	return m, mint(t, m, "mallory", provisioner.ProfileAgent, grants), mint(t, m, "victim", provisioner.ProfileAgent, grants), logs
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
		l.FloodCheck = -1 // the stream's own bound, without the mesh taking DMs back
	})
	n := wire.NewNames("main")
	p := newPeer(t, m, mallory)
	js := p.jetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body := make([]byte, 8<<10)

	t.Run("DMs to one recipient past the task bound are all kept: DM has no per-subject bound", func(t *testing.T) {
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
	t.Run("DMs to made-up ids are refused past the DM stream's bytes", func(t *testing.T) {
		sent, err := flood(ctx, js, n, mallory, body, 4*streamBytes/len(body))
		if !maximumBytes(err) {
			t.Fatalf("after %d DMs of %d bytes: %v; want JetStream's maximum bytes refusal", sent, len(body), p.explain(err))
		}
		if got := streamState(ctx, t, p, n.DMStream(), "").State.Bytes; got > streamBytes {
			t.Fatalf("DM stream holds %d bytes after 4 MiB of DMs; limit %d", got, streamBytes)
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
	t.Run("the pass takes back the tasks for roles nobody holds and keeps a held role's", func(t *testing.T) {
		held := n.SvcSubject("builder", mallory.ID)
		before := streamState(ctx, t, p, n.TaskStream(), held).State
		rep, err := m.Reconcile(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		after := streamState(ctx, t, p, n.TaskStream(), held).State
		if rep.PurgedTasks == 0 || uint64(rep.PurgedTasks) != before.Msgs-after.Msgs || after.Msgs != before.Subjects[held] {
			t.Fatalf("the pass purged %d tasks; TASK went from %d to %d messages, %d of them for the held role builder",
				rep.PurgedTasks, before.Msgs, after.Msgs, before.Subjects[held])
		}
		if _, err := js.Publish(ctx, held, body); err != nil {
			t.Fatalf("an anycast to a held role after the reclaim: %v", p.explain(err))
		}
	})
}

// flood publishes DMs of body from sender to made-up ids until one is refused or limit were
// sent, and returns how many were stored and the refusal.
func flood(ctx context.Context, js jetstream.JetStream, n wire.Names, sender *provisioner.Credential, body []byte, limit int) (int, error) {
	for i := range limit {
		if _, err := js.Publish(ctx, n.InstSubject(fmt.Sprintf("madeup%d", i), sender.ID), body); err != nil {
			return i, err
		}
	}
	return limit, nil
}

// maximumBytes reports whether err is JetStream refusing a message because its stream is full.
func maximumBytes(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.ErrorCode(server.JSStreamStoreFailedF) &&
		strings.Contains(apiErr.Description, "maximum bytes")
}

// readDMs fetches up to want DMs waiting on p's dm_ queue without acknowledging them (ack
// reports whether to) and returns their subjects.
func readDMs(ctx context.Context, t *testing.T, p *peer, want int, ack bool) []string {
	t.Helper()
	n := wire.NewNames("main")
	c, err := p.jetStream(t).Consumer(ctx, n.DMStream(), n.DMConsumer(p.cred.ID))
	if err != nil {
		t.Fatal(p.explain(err))
	}
	var subjects []string
	for len(subjects) < want {
		batch, err := c.Fetch(want-len(subjects), jetstream.FetchMaxWait(answerWait))
		if err != nil {
			t.Fatal(p.explain(err))
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			subjects = append(subjects, msg.Subject())
			if ack {
				if err := msg.DoubleAck(ctx); err != nil {
					t.Fatal(p.explain(err))
				}
			}
		}
		if err := batch.Error(); err != nil {
			t.Fatal(p.explain(err))
		}
		if got == 0 {
			break
		}
	}
	return subjects
}

// A flood of DMs to made-up ids fills the DM stream and is then refused; it evicts none of
// the DMs waiting for a real agent, which stay readable, and an Endpoint's DM is refused with
// ErrStoreFull. The mesh's pass takes the made-up recipients' DMs back, and DMs flow again:
// in one request when the flooder DMs no agent, subject by subject when it also wrote to one.
func TestADMFloodIsRefusedAndReclaimedNotEvicted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		alsoDMsAgent bool
	}{
		{"a flooder that DMs no agent", false},
		{"a flooder that also DMs a real agent", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dmFloodIsReclaimed(t, tc.alsoDMsAgent)
		})
	}
}

func dmFloodIsReclaimed(t *testing.T, alsoDMsAgent bool) {
	const streamBytes = 1 << 20
	// The stream is left to fill: only the pass reclaims (TestADMFlooderIsCutOff covers the
	// check between passes).
	m, mallory, victim, logs := limitedMeshLogged(t, func(l *space.Limits) { l.DMBytes, l.FloodCheck = streamBytes, -1 })
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := mint(t, m, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	a, v, p := newPeer(t, m, alice), newPeer(t, m, victim), newPeer(t, m, mallory)
	waiting := 20
	for i := range waiting {
		if _, err := a.jetStream(t).Publish(ctx, n.InstSubject(victim.ID, alice.ID), []byte(fmt.Sprintf("dm %d", i))); err != nil {
			t.Fatalf("alice's DM %d: %v", i, a.explain(err))
		}
	}
	if alsoDMsAgent {
		if _, err := p.jetStream(t).Publish(ctx, n.InstSubject(victim.ID, mallory.ID), []byte("first")); err != nil {
			t.Fatalf("mallory's DM to the victim: %v", p.explain(err))
		}
		waiting++
	}
	// Large DMs first, then small ones, until not even a small one fits.
	sent, err := flood(ctx, p.jetStream(t), n, mallory, make([]byte, 8<<10), 4*streamBytes/(8<<10))
	if !maximumBytes(err) {
		t.Fatalf("after %d DMs of 8 KiB to made-up ids: %v; want JetStream's maximum bytes refusal", sent, p.explain(err))
	}
	small, err := flood(ctx, p.jetStream(t), n, mallory, []byte("x"), streamBytes)
	if !maximumBytes(err) {
		t.Fatalf("after %d more DMs of 1 byte to made-up ids: %v; want JetStream's maximum bytes refusal", small, p.explain(err))
	}
	t.Logf("the DM stream took %d DMs of 8 KiB and %d of 1 byte before refusing", sent, small)
	sent += small

	t.Run("the DMs waiting for a real agent are all still there", func(t *testing.T) {
		got := 0
		for _, count := range streamState(ctx, t, v, n.DMStream(), n.Prefix()+".inst."+victim.ID+".*").State.Subjects {
			got += int(count)
		}
		if got != waiting {
			t.Fatalf("the DM stream keeps %d of the %d DMs to the victim", got, waiting)
		}
	})
	t.Run("an Endpoint's DM is refused as a full DM store", func(t *testing.T) {
		ep, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Grants: provisioner.Grants{Subscribe: []string{"general"}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ep.SendDM(ctx, victim.ID, []wire.Part{wire.TextPart("hello")})
		if !errors.Is(err, endpoint.ErrStoreFull) || !strings.Contains(err.Error(), "DM store") {
			t.Fatalf("a DM into the full DM stream: %v; want %v naming the DM store", err, endpoint.ErrStoreFull)
		}
	})
	t.Run("the pass takes the made-up recipients' DMs back, closes the flooder, and DMs flow again", func(t *testing.T) {
		start := time.Now()
		rep, err := m.Reconcile(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the pass purged %d DMs to %d made-up ids in %v", rep.PurgedDMs, sent, time.Since(start))
		if rep.PurgedDMs != int64(sent) {
			t.Fatalf("the pass purged %d DMs; mallory stored %d to made-up ids", rep.PurgedDMs, sent)
		}
		if want := fmt.Sprintf("mallory (%s)=%d", mallory.ID, sent); !strings.Contains(logs.String(), want) {
			t.Errorf("the reclaim's log line does not name the flooder (%s):\n%.2000s", want, logs)
		}
		if want := "flooded DMs to ids no credential was minted for"; !strings.Contains(logs.String(), want) {
			t.Errorf("the pass purged %d of mallory's DMs from a full store and did not say it closed her connections (%q):\n%.2000s", sent, want, logs)
		}
		if _, err := a.jetStream(t).Publish(ctx, n.InstSubject(victim.ID, alice.ID), []byte("after")); err != nil {
			t.Fatalf("a DM after the pass: %v", a.explain(err))
		}
		if got := readDMs(ctx, t, v, waiting+1, false); len(got) != waiting+1 {
			t.Fatalf("the victim reads %d DMs; want the %d waiting and alice's last", len(got), waiting)
		}
	})
}

// When the DM stream runs full, the pass also takes back the DMs their recipient has
// acknowledged, never one still waiting.
func TestAFullDMStreamReclaimsAcknowledgedDMs(t *testing.T) {
	t.Parallel()
	const streamBytes = 1 << 20
	m, alice, victim := limitedMesh(t, func(l *space.Limits) { l.DMBytes, l.FloodCheck = streamBytes, -1 }) // the pass alone
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, v := newPeer(t, m, alice), newPeer(t, m, victim)
	subject := n.InstSubject(victim.ID, alice.ID)
	body := make([]byte, 8<<10)
	read := 100 // 800 KiB, above three quarters of the stream
	for i := range read + 3 {
		if _, err := a.jetStream(t).Publish(ctx, subject, body); err != nil {
			t.Fatalf("DM %d: %v", i, a.explain(err))
		}
	}
	if got := readDMs(ctx, t, v, read, true); len(got) != read {
		t.Fatalf("the victim read %d DMs; want %d", len(got), read)
	}
	rep, err := m.Reconcile(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if rep.PurgedDMs != int64(read) {
		t.Fatalf("the pass purged %d DMs; the victim acknowledged %d", rep.PurgedDMs, read)
	}
	if got := streamState(ctx, t, v, n.DMStream(), subject).State.Subjects[subject]; got != 3 {
		t.Fatalf("the DM stream keeps %d DMs to the victim; want the 3 unread", got)
	}
	t.Run("a stream with room keeps acknowledged DMs as history", func(t *testing.T) {
		if got := readDMs(ctx, t, v, 3, true); len(got) != 3 {
			t.Fatalf("the victim read %d DMs; want 3", len(got))
		}
		rep, err := m.Reconcile(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if rep.PurgedDMs != 0 {
			t.Fatalf("the pass purged %d DMs from a stream with room", rep.PurgedDMs)
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

// One identity holds at most Limits.ConnectionsPerIdentity connections: of cap+5 opened one
// after another, the broker closes the five newest just after they connect and keeps the
// others; another agent still connects, and the mesh's own identities are not capped.
func TestConnectionsPastTheIdentityLimitAreClosed(t *testing.T) {
	t.Parallel()
	const limit = 5
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// An infrastructure credential of the space, taken from the key store before the mesh
	// holds it, as the exempt identity.
	dir := t.TempDir()
	store, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.EnsureSpace("main"); err != nil {
		t.Fatal(err)
	}
	infra, err := store.InfraCredential("main", provisioner.ProfileDelivery)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	m, err := space.Start(ctx, space.Options{Dir: dir, Memory: true, Limits: space.Limits{ConnectionsPerIdentity: limit},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	grants := provisioner.Grants{Subscribe: []string{"general"}}
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, grants)

	conns := make([]*watched, limit+5)
	connected := make([]time.Time, len(conns))
	for i := range conns {
		if i < limit {
			conns[i] = watchConn(t, m, mallory)
		} else {
			// Under load the broker may close an extra one before its handshake completes.
			conns[i] = watchConnMayEnd(t, m, mallory)
		}
		connected[i] = time.Now()
	}
	var slowest time.Duration
	for i, w := range conns[limit:] {
		select {
		case <-w.closed:
			slowest = max(slowest, w.closedAt.Sub(connected[limit+i]))
		case <-ctx.Done():
			t.Fatalf("connection %d of %d of one identity is still open; the limit is %d", limit+i+1, len(conns), limit)
		}
	}
	t.Logf("each extra connection was closed within %v of its connect returning", slowest)
	for i, w := range conns[:limit] {
		if err := w.nc.FlushTimeout(answerWait); err != nil {
			t.Fatalf("connection %d, within the limit, was closed: %v", i+1, err)
		}
	}
	// The broker counts a closure just after it closes the connection, which the client may
	// see first.
	await.True(t, 5*time.Second, "the broker to count 5 closed connections", func() bool {
		return m.Broker().ConnectionsClosed() == 5
	})
	if n := strings.Count(logs.String(), "closed a connection past its identity's connection limit"); n != 1 {
		t.Fatalf("five closures wrote %d log lines; want one, the rest summarised later:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "name=mallory") {
		t.Fatalf("the closure is not logged with the agent's name:\n%s", logs)
	}

	t.Run("another agent still connects", func(t *testing.T) {
		victim := mint(t, m, "victim", provisioner.ProfileAgent, grants)
		if err := newPeer(t, m, victim).nc.FlushTimeout(answerWait); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the mesh's own identities are not capped", func(t *testing.T) {
		var own []*nats.Conn
		for range limit + 5 {
			own = append(own, connect(t, m, infra, nats.NoReconnect()))
		}
		// Another connection of mallory's is closed after every one of these was seen.
		late := watchConnMayEnd(t, m, mallory)
		select {
		case <-late.closed:
		case <-ctx.Done():
			t.Fatal("a sixth connection of mallory's stayed open")
		}
		for i, nc := range own {
			if err := nc.FlushTimeout(answerWait); err != nil {
				t.Fatalf("the mesh's own connection %d was closed: %v", i+1, err)
			}
		}
	})
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
// starts, and fans a durable copy out to an offline member.
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
	logs := &testlog.Buffer{}
	// An interval longer than the flood: on a loaded machine 20 000 publishes have taken 19 s,
	// past the default 10 s, which rightly wrote a second summary.
	m := spacetest.New(t, func(o *space.Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.Limits.ViolationLogInterval = time.Hour
	})
	mallory := mint(t, m, "mallory", provisioner.ProfileAgent, provisioner.Grants{})
	p := newPeer(t, m, mallory)
	denied := wire.NewNames("main").ChatSubject("someone-else", "general")
	for i := range 20000 {
		if err := p.nc.Publish(denied, []byte("x")); err != nil {
			t.Fatal(err)
		}
		// A round trip now and then keeps the broker's -ERR replies from piling up unread on
		// a loaded machine, where the server would close the connection as a slow consumer.
		if i%1000 == 999 {
			if err := p.nc.Flush(); err != nil {
				t.Fatal(err)
			}
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
	// Read as a newcomer: mallory's 3 MiB of DMs to made-up ids may have her cut off by now
	// (flood.go).
	p := newPeer(t, second, mint(t, second, "alice", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}}))
	info := streamState(ctx, t, p, n.DMStream(), "")
	if info.State.Bytes > dmBytes || info.Config.MaxBytes != dmBytes || info.Config.MaxMsgsPerSubject != wire.Unlimited {
		t.Fatalf("DM after the restart holds %d bytes under max_bytes %d and %d per subject; want at most %d bytes and %d per subject",
			info.State.Bytes, info.Config.MaxBytes, info.Config.MaxMsgsPerSubject, dmBytes, wire.Unlimited)
	}
	if task := streamState(ctx, t, p, n.TaskStream(), "").Config; task.Discard != jetstream.DiscardNew || task.MaxBytes != wire.DefaultTaskBytes {
		t.Fatalf("TASK after the restart discards %v with max_bytes %d", task.Discard, task.MaxBytes)
	}
	if _, err := p.jetStream(t).Publish(ctx, n.InstSubject("madeup0", p.cred.ID), []byte("after")); err != nil {
		t.Fatalf("a DM after the restart: %v", err)
	}
}

// TestAPresenceFloodClosesTheFloodersConnections: an agent that rewrites its presence row
// hundreds of times a second, sending every watcher each write, has its connections closed
// and is named in the log; another agent stays connected.
func TestAPresenceFloodClosesTheFloodersConnections(t *testing.T) {
	t.Parallel()
	m, mallory, victim, logs := limitedMeshLogged(t, func(*space.Limits) {})
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, v := newPeer(t, m, mallory), newPeer(t, m, victim)
	row, err := json.Marshal(wire.Presence{Card: wire.AgentCard{ID: mallory.ID, Name: "mallory", Kind: wire.CardKindAgent},
		Status: wire.StatusWorking, Activity: strings.Repeat("x", 1000), TS: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000 && p.nc.IsConnected(); i++ {
		_ = p.nc.Publish(n.PresenceKVSubject(mallory.ID), row)
	}
	await.True(t, 10*time.Second, "mallory's connection closed", func() bool { return !p.nc.IsConnected() })
	await.True(t, 10*time.Second, "a log line naming mallory", func() bool {
		return strings.Contains(logs.String(), "rewrites its presence") && strings.Contains(logs.String(), "agent=mallory")
	})
	if err := v.nc.FlushWithContext(ctx); err != nil || !v.nc.IsConnected() {
		t.Fatalf("the victim's connection: %v, connected %v", err, v.nc.IsConnected())
	}
}
