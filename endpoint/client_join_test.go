package endpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestJoinLateJoinerGetsHistoryOnceAndThenLive(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Channels = []string{"team.backend"} })
	var early []string
	for i := range 3 {
		r, err := alice.Send(ctxT(t), "team.backend", text(fmt.Sprintf("early %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		early = append(early, r.ID)
	}
	if _, err := alice.Send(ctxT(t), "team.other", text("elsewhere")); err != nil {
		t.Fatal(err)
	}

	bob := h.connect("bob")
	res, err := bob.Join(ctxT(t), "team.backend")
	if err != nil {
		t.Fatal(err)
	}
	if res.State != endpoint.JoinedLive || res.Class != wire.DeliveryLive || res.Backfilled != 3 || res.BackfillErr != nil {
		t.Fatalf("join result %+v, want joined live with 3 backfilled", res)
	}
	for _, id := range early {
		got := bob.rec.withID(id)
		if len(got) != 1 || !got[0].Meta.Historical || got[0].Meta.Kind != endpoint.MetaChannel {
			t.Fatalf("early message %s surfaced as %+v, want once with historical=true", id, got)
		}
	}
	r, err := alice.Send(ctxT(t), "team.backend", text("live"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the live message", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	if d := bob.rec.withID(r.ID)[0]; d.Meta.Historical {
		t.Error("the live message was marked historical")
	}
	if n := len(bob.rec.all()); n != 4 {
		t.Fatalf("bob surfaced %d messages, want 3 historical and 1 live", n)
	}
	if _, err := h.js.Consumer(ctxT(t), h.names.ChatStream(), h.names.HistoryConsumer(bob.ID())); err == nil {
		t.Error("the history consumer was left behind")
	}
}

func TestJoinHonoursTheChannelRegistry(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	off := false
	h.setChannel("quiet", wire.ChannelConfig{Replay: &off})
	if _, err := alice.Send(ctxT(t), "quiet", text("old")); err != nil {
		t.Fatal(err)
	}
	bob := h.connect("bob")
	res, err := bob.Join(ctxT(t), "quiet")
	if err != nil {
		t.Fatal(err)
	}
	if res.Backfilled != 0 || len(bob.rec.all()) != 0 {
		t.Fatalf("replay=false backfilled %d, want none", res.Backfilled)
	}
	if got := bob.Joined(); len(got) != 1 || got[0] != "quiet" {
		t.Fatalf("joined %v, want [quiet]", got)
	}
	h.setChannel("recent", wire.ChannelConfig{ReplayWindow: "1h"})
	if _, err := alice.Send(ctxT(t), "recent", text("within the window")); err != nil {
		t.Fatal(err)
	}
	if res, err := bob.Join(ctxT(t), "recent"); err != nil || res.Backfilled != 1 {
		t.Fatalf("join with a replay window: %+v, %v; want the recent message backfilled", res, err)
	}
	if err := bob.Leave(ctxT(t), "recent"); err != nil {
		t.Fatal(err)
	}
	if err := bob.Leave(ctxT(t), "quiet"); err != nil {
		t.Fatal(err)
	}
	if got := bob.Joined(); len(got) != 0 {
		t.Fatalf("joined %v after leave, want none", got)
	}
	if err := bob.Leave(ctxT(t), "quiet"); !errors.Is(err, endpoint.ErrNotJoined) {
		t.Fatalf("second leave: %v, want ErrNotJoined", err)
	}
}

// fakeDelivery serves the delivery control service (docs/storage.md "Control service") with a
// switchable answer.
type fakeDelivery struct {
	mu     sync.Mutex
	accept bool
	ops    []string
	leaves []map[string]any
}

func (f *fakeDelivery) serve(_ context.Context, req *wire.ControlRequest) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, req.Op)
	switch req.Op {
	case "durableJoin":
		if !f.accept {
			return map[string]any{"durable": false, "reason": "membership registry unavailable"}, nil
		}
		return map[string]any{"durable": true, "generation": 7}, nil
	case "durableLeave":
		var args map[string]any
		if err := json.Unmarshal(req.Args, &args); err != nil {
			return nil, err
		}
		f.leaves = append(f.leaves, args)
		return args, nil
	}
	return nil, fmt.Errorf("op %q not supported on the delivery control service", req.Op)
}

func (f *fakeDelivery) setAccept(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accept = v
}

func TestJoinDurableChannelWithoutBackstopReportsItAndRetries(t *testing.T) {
	h := newBareHarness(t)
	h.setDefaults(wire.ChannelDefaults{DeliveryClass: wire.DeliveryDurable})
	var mu sync.Mutex
	var events []endpoint.Event
	bob := h.connect("bob", func(o *endpoint.Options) {
		o.OnEvent = func(ev endpoint.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		}
	})

	res, err := bob.Join(ctxT(t), "team")
	if err != nil {
		t.Fatal(err)
	}
	if res.State != endpoint.JoinedLiveBackstopUnavailable || res.Class != wire.DeliveryDurable || res.Reason == "" {
		t.Fatalf("join result %+v, want joined live with the backstop unavailable and a reason", res)
	}

	fake := &fakeDelivery{}
	server := h.connect("delivery")
	stop, err := server.Serve(wire.DeliveryService, fake.serve)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fake.setAccept(true)
	await.True(t, settle, "the background retry to establish the backstop", func() bool {
		st, ok := bob.JoinStatus("team")
		return ok && st.State == endpoint.JoinedDurable
	})
	mu.Lock()
	kinds := map[endpoint.EventKind]bool{}
	for _, ev := range events {
		kinds[ev.Kind] = true
	}
	mu.Unlock()
	if !kinds[endpoint.EventDurableUnavailable] || !kinds[endpoint.EventDurableEstablished] {
		t.Errorf("events %v, want durable-unavailable then durable-established", kinds)
	}

	if err := bob.Leave(ctxT(t), "team"); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.leaves) != 1 || fake.leaves[0]["channel"] != "team" || fake.leaves[0]["generation"] != float64(7) {
		t.Fatalf("durableLeave args %v, want channel team generation 7", fake.leaves)
	}
}

func TestJoinLateRefusalDropsTheChannelAndEndsItsMembership(t *testing.T) {
	h := newBareHarness(t)
	h.setChannel("ops", wire.ChannelConfig{DeliveryClass: wire.DeliveryDurable})
	fake := &fakeDelivery{accept: true}
	server := h.connect("delivery")
	stop, err := server.Serve(wire.DeliveryService, fake.serve)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	refused := make(chan endpoint.Event, 1)
	bob := h.connect("bob", func(o *endpoint.Options) {
		o.OnEvent = func(ev endpoint.Event) {
			if ev.Kind == endpoint.EventJoinRefused {
				refused <- ev
			}
		}
	})
	if res, err := bob.Join(ctxT(t), "ops"); err != nil || res.State != endpoint.JoinedDurable {
		t.Fatalf("join %+v, %v; want joined durable", res, err)
	}
	violation := fmt.Errorf("%w: Permissions Violation for Subscription to %q", nats.ErrPermissionViolation, h.names.ChatFilter("ops"))
	endpoint.InjectAsyncError(bob.Endpoint, violation)
	select {
	case ev := <-refused:
		if ev.Channel != "ops" {
			t.Fatalf("refusal event for %q, want ops", ev.Channel)
		}
	case <-ctxT(t).Done():
		t.Fatal("no join-refused event")
	}
	if got := bob.Joined(); len(got) != 0 {
		t.Fatalf("joined %v after a late refusal, want none", got)
	}
	await.True(t, settle, "the membership removed", func() bool {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return len(fake.leaves) == 1 && fake.leaves[0]["channel"] == "ops"
	})
}

func TestJoinDurableChannelWithBackstopIsJoinedDurable(t *testing.T) {
	h := newBareHarness(t)
	h.setChannel("ops", wire.ChannelConfig{DeliveryClass: wire.DeliveryDurable})
	fake := &fakeDelivery{accept: true}
	server := h.connect("delivery")
	stop, err := server.Serve(wire.DeliveryService, fake.serve)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	bob := h.connect("bob")
	res, err := bob.Join(ctxT(t), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if res.State != endpoint.JoinedDurable || res.Class != wire.DeliveryDurable {
		t.Fatalf("join result %+v, want joined durable", res)
	}
	again, err := bob.Join(ctxT(t), "ops")
	if err != nil || again.State != endpoint.JoinedDurable {
		t.Fatalf("second join %+v, %v; want the current state", again, err)
	}
}

// A Handler may itself join a channel while the backfill of another is being surfaced: the
// nested join waits for the first history read, which goes on without the Handler, and every
// historical copy is surfaced once, oldest first.
func TestAHandlerJoinsAChannelWhileABackfillIsSurfaced(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	const n = 600 // more than one history pull
	sent := sendN(t, alice, "team.backend", n)
	sendN(t, alice, "team.other", 1)
	var (
		bob      *endpoint.Endpoint
		mu       sync.Mutex
		backend  []string
		nested   endpoint.JoinResult
		errJoin  error
		joinedAt = -1
	)
	bob = h.connect("bob", func(o *endpoint.Options) {
		o.Handler = func(ctx context.Context, d endpoint.Delivery) error {
			if d.Message.Channel != "team.backend" || !d.Meta.Historical {
				return nil
			}
			mu.Lock()
			backend = append(backend, d.Message.ID)
			first := len(backend) == 1
			mu.Unlock()
			if first {
				res, err := bob.Join(ctx, "team.other")
				mu.Lock()
				nested, errJoin, joinedAt = res, err, len(backend)
				mu.Unlock()
			}
			return nil
		}
	}).Endpoint
	res, err := bob.Join(ctxT(t), "team.backend")
	if err != nil || res.Backfilled != n || res.BackfillErr != nil {
		t.Fatalf("join: %+v, %v; want %d backfilled", res, err, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if errJoin != nil || nested.Backfilled != 1 || joinedAt != 1 {
		t.Fatalf("the Handler's join: %+v, %v, after %d copies; want 1 backfilled after the first", nested, errJoin, joinedAt)
	}
	if !slices.Equal(backend, sent) {
		t.Fatalf("surfaced %d historical copies, want the %d sent, once each, oldest first", len(backend), n)
	}
}
