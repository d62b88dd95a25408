package space_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// TestCopiesPastAFullHandoffAreCountedNotEvicted: a member offline through more durable copies
// than DLV_<s> keeps for it gets the oldest it was owed, and every other one is reported as
// lost, in deliver pending, in listMemberships' gaps and in the metrics (docs/durable.md "Gaps
// and losses").
func TestCopiesPastAFullHandoffAreCountedNotEvicted(t *testing.T) {
	t.Parallel()
	const bound, sent = 3, 8
	m := spacetest.New(t, noPeriodicPass, func(o *space.Options) {
		o.Limits.HandoffPerSubject, o.HTTP = bound, "127.0.0.1:0"
	})
	n := wire.NewNames("main")
	ctx, cancel := context.WithTimeout(context.Background(), 4*answerWait)
	defer cancel()
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}))
	joinDurablyAndLeave(ctx, t, m, carol, "general")

	var owed []string
	for i := range sent {
		data := envelope(t, bob.cred, "general", fmt.Sprint(i))
		if _, err := bob.request(n.ChatSubject(bob.cred.ID, "general"), "", nil, data); err != nil {
			t.Fatal(err)
		}
		var msg wire.CotalMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatal(err)
		}
		owed = append(owed, msg.ID)
	}
	await.True(t, 2*answerWait, "every copy handed over or reported lost", func() bool {
		b, err := m.Pending(ctx, "main", "carol")
		return err == nil && b.Durable.Pending == bound && b.Dropped["general"] == sent-bound
	})

	c := newPeer(t, m, carol)
	if got := handoffIDs(ctx, t, c, n); !slices.Equal(got, owed[:bound]) {
		t.Fatalf("carol's handoff holds %q, want the oldest %d she was owed %q", got, bound, owed[:bound])
	}
	if gaps := memberGaps(t, c, n); len(gaps) != 1 || gaps[0].Last-gaps[0].First+1 != sent-bound {
		t.Fatalf("carol's membership gaps = %+v, want one range of %d", gaps, sent-bound)
	}
	_, body := get(t, m.HTTPURL()+"/metrics")
	if want := fmt.Sprintf(`cotal_backstop_total{event="dropped_handoff_full",space="main"} %d`, sent-bound); !strings.Contains(body, want) {
		t.Fatalf("/metrics lacks %s", want)
	}
}

// TestLostCopiesSurviveAMeshRestart: the copies refused past a full handoff are written into
// the membership record, so a mesh restarted on the same data directory still reports them, in
// deliver pending and in listMemberships' gaps (docs/durable.md "Gaps and losses").
func TestLostCopiesSurviveAMeshRestart(t *testing.T) {
	t.Parallel()
	const bound, sent = 3, 8
	ctx, cancel := context.WithTimeout(context.Background(), 8*answerWait)
	defer cancel()
	opts := space.Options{Dir: t.TempDir(), ReconcileInterval: -1}
	opts.Limits.HandoffPerSubject = bound
	start := func() *space.Mesh {
		m, err := space.Start(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		return m
	}
	m := start()
	n := wire.NewNames("main")
	carol := mint(t, m, "carol", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"general"}})
	bob := newPeer(t, m, mint(t, m, "bob", provisioner.ProfileAgent,
		provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}))
	joinDurablyAndLeave(ctx, t, m, carol, "general")
	for i := range sent {
		if _, err := bob.request(n.ChatSubject(bob.cred.ID, "general"), "", nil, envelope(t, bob.cred, "general", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	await.True(t, 2*answerWait, "every copy handed over or reported lost", func() bool {
		b, err := m.Pending(ctx, "main", "carol")
		return err == nil && b.Durable.Pending == bound && b.Dropped["general"] == sent-bound
	})
	before := memberGaps(t, newPeer(t, m, carol), n)
	if len(before) != 1 || before[0].Last-before[0].First+1 != sent-bound {
		t.Fatalf("carol's membership gaps = %+v, want one range of %d", before, sent-bound)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}

	m = start()
	b, err := m.Pending(ctx, "main", "carol")
	if err != nil {
		t.Fatal(err)
	}
	if b.Dropped["general"] != sent-bound || b.Durable.Pending != bound {
		t.Fatalf("after a restart carol's backlog is %d pending, dropped %v; want %d pending and %d lost on general",
			b.Durable.Pending, b.Dropped, bound, sent-bound)
	}
	if after := memberGaps(t, newPeer(t, m, carol), n); !slices.Equal(after, before) {
		t.Fatalf("after a restart carol's membership gaps = %+v, want %+v", after, before)
	}
}

// joinDurablyAndLeave connects cred's endpoint joined to channel durably, then closes it.
func joinDurablyAndLeave(ctx context.Context, t *testing.T, m *space.Mesh, cred *provisioner.Credential, channel string) {
	t.Helper()
	creds, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds,
		Name: cred.Name, Channels: []string{channel}})
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := ep.JoinStatus(channel); !ok || res.State != endpoint.JoinedDurable {
		t.Fatalf("%s's join of %s: %+v", cred.Name, channel, res)
	}
	if err := ep.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// handoffIDs reads, without acking, the ids of every copy waiting in p's own dlv_ consumer.
func handoffIDs(ctx context.Context, t *testing.T, p *peer, n wire.Names) []string {
	t.Helper()
	var ids []string
	for _, cm := range handoffCopies(ctx, t, p, n, 100) {
		ids = append(ids, cm.ID)
	}
	return ids
}

// handoffCopies fetches up to max of the durable copies waiting on p's dlv_<id>, decoded.
func handoffCopies(ctx context.Context, t *testing.T, p *peer, n wire.Names, max int) []wire.CotalMessage {
	t.Helper()
	cons, err := p.jetStream(t).Consumer(ctx, n.DLVStream(), n.DLVConsumer(p.cred.ID))
	if err != nil {
		t.Fatal(p.explain(err))
	}
	batch, err := cons.Fetch(max, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(p.explain(err))
	}
	var copies []wire.CotalMessage
	for msg := range batch.Messages() {
		var cm wire.CotalMessage
		if err := json.Unmarshal(msg.Data(), &cm); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, cm)
	}
	return copies
}

// memberGaps asks the delivery service for p's memberships and returns the gaps of the one.
func memberGaps(t *testing.T, p *peer, n wire.Names) []wire.SeqRange {
	t.Helper()
	subject := n.CtlSubject(wire.DeliveryService, p.cred.ID)
	body, err := json.Marshal(wire.ControlRequest{Op: wire.OpListMemberships, Args: json.RawMessage(`{}`),
		From: wire.EndpointRef{ID: p.cred.ID, Name: p.cred.Name}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := p.request(subject, subject+".reply."+wire.NewMessageID(), nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var reply wire.ControlReply
	var list wire.ListMembershipsReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil || !reply.OK {
		t.Fatalf("control reply %q: %v", msg.Data, err)
	}
	if err := json.Unmarshal(reply.Data, &list); err != nil || len(list.Memberships) != 1 {
		t.Fatalf("listMemberships %q: %v", reply.Data, err)
	}
	return list.Memberships[0].Gaps
}
