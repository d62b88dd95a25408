package delivery

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestControlPoolAdmission(t *testing.T) {
	req := func(sender string) *nats.Msg {
		return &nats.Msg{Subject: testNames.CtlSubject(wire.DeliveryService, sender)}
	}
	p := newControlPool(3, 2)
	steps := []struct {
		name   string
		sender string
		done   bool // release one slot of sender (a worker answered it) instead of admitting
		want   string
	}{
		{"a sender's first request is admitted", "a", false, ""},
		{"its second is admitted", "a", false, ""},
		{"its third, past the per-sender bound, is refused with its own reason", "a", false, ReasonControlSenderBusy},
		{"another sender is admitted beside the flood", "b", false, ""},
		{"a request past the queue's bound is refused as busy", "c", false, ReasonControlBusy},
		{"a worker takes and answers one of the sender's requests", "a", true, ""},
		{"which frees a slot of the sender and of the queue", "a", false, ""},
		{"until the queue is full again", "c", false, ReasonControlBusy},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.done {
				<-p.queue
				p.done(st.sender)
				return
			}
			if got := p.admit(req(st.sender)); got != st.want {
				t.Fatalf("admit(%s) = %q, want %q", st.sender, got, st.want)
			}
		})
	}
	t.Run("a drained pool forgets its senders", func(t *testing.T) {
		for len(p.queue) > 0 {
			r := <-p.queue
			p.done(r.sender)
		}
		if len(p.inFlight) != 0 {
			t.Fatalf("in flight after draining = %v, want none", p.inFlight)
		}
	})
}

// TestConcurrentJoinsAreEachFenced joins several members at once while two publishers run,
// and checks each member's copies against its own cursor: the join fence must hold for every
// join of a concurrent batch, not only for a lone one (doc.go "The join fence").
func TestConcurrentJoinsAreEachFenced(t *testing.T) {
	h := newHarness(t)
	const joiners = 8
	members := make([]*agent, joiners)
	for i := range members {
		members[i] = h.newAgent(fmt.Sprintf("m%d", i), "team")
	}
	pubs := []*agent{h.newAgent("p1", "team"), h.newAgent("p2", "team")}
	var (
		mu      sync.Mutex
		seqs    = map[string]uint64{}
		pubWG   sync.WaitGroup
		started = make(chan struct{}, len(pubs))
		joined  = make(chan struct{})
	)
	for _, p := range pubs {
		pubWG.Go(func() {
			// Publish until every join has returned, then some more, so each cursor falls
			// strictly inside the run.
			for i, after := 0, -1; after < 20; i++ {
				if i == 20 {
					started <- struct{}{}
				}
				m, seq := p.publish("team")
				mu.Lock()
				seqs[m.ID] = seq
				mu.Unlock()
				select {
				case <-joined:
					after++
				default:
				}
			}
		})
	}
	for range pubs {
		<-started
	}
	replies, errs := make([]wire.DurableJoinReply, joiners), make([]error, joiners)
	var joinWG sync.WaitGroup
	for i, m := range members {
		joinWG.Go(func() { replies[i], errs[i] = tryJoin(h, m, "team") })
	}
	joinWG.Wait()
	close(joined)
	pubWG.Wait()

	for i, m := range members {
		if errs[i] != nil || !replies[i].Durable {
			t.Fatalf("join of %s = %+v, %v; want durable", m.name, replies[i], errs[i])
		}
		cursor := m.membership("team").JoinCursor
		var want []string
		for id, seq := range seqs {
			if seq > cursor {
				want = append(want, id)
			}
		}
		if len(want) == 0 || len(want) == len(seqs) {
			t.Fatalf("%s's join cursor %d did not fall inside the publishing run; the test proves nothing", m.name, cursor)
		}
		sameIDs(t, m.received(), want)
	}
}

// TestControlFloodCannotStarveAnotherAgentsJoin floods the control service with one agent's
// durableJoins while another agent joins. The queue is smaller than the flood, so without the
// per-sender bound the flood would fill it and the other agent's joins would be refused as
// busy; with it, every one of them is served and durable, and the flood is answered with
// refusals, never left unanswered.
func TestControlFloodCannotStarveAnotherAgentsJoin(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ControlWorkers, c.ControlQueue, c.ControlPerSender = 2, 8, 2 })
	mallory, bob := h.newAgent("mallory", "team.>"), h.newAgent("bob", "team.>")
	subject := testNames.CtlSubject(wire.DeliveryService, mallory.id)
	var answered, refused atomic.Int64
	// The flood keeps up to 64 requests unanswered, far past the per-sender bound, yet bounded
	// so that the test's own connection is not what overflows.
	window := make(chan struct{}, 64)
	sub, err := h.nc.Subscribe(subject+".reply.>", func(m *nats.Msg) {
		<-window
		answered.Add(1)
		if r, err := wire.DecodeControlReply(m.Data); err == nil && (r.Error == ReasonControlSenderBusy || r.Error == ReasonControlBusy) {
			refused.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	stop := make(chan struct{})
	var sent atomic.Int64
	var flood sync.WaitGroup
	flood.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case window <- struct{}{}:
			}
			args := wire.DurableJoinArgs{Channel: fmt.Sprintf("team.f%d", i%50)}
			data, err := encodeRequest(wire.OpDurableJoin, args, mallory)
			if err == nil {
				err = h.nc.PublishRequest(subject, wire.ControlReplySubject(subject), data)
			}
			if err != nil {
				t.Error(err)
				return
			}
			sent.Add(1)
		}
	})
	stopFlood := sync.OnceFunc(func() {
		close(stop)
		flood.Wait()
	})
	t.Cleanup(stopFlood)
	await.True(t, waitFor, "mallory's flood is refused", func() bool { return refused.Load() > 0 })
	for i := range 5 {
		if r := bob.join(fmt.Sprintf("team.b%d", i)); !r.Durable {
			t.Fatalf("bob's join %d during the flood = %+v, want durable", i, r)
		}
	}
	stopFlood()
	await.Check(t, waitFor, pollEvery, func() error {
		if a, s := answered.Load(), sent.Load(); a != s {
			return fmt.Errorf("%d of mallory's %d requests answered", a, s)
		}
		return nil
	})
	if st := h.svc.Stats(); st.ControlRefusedBusy < refused.Load() {
		t.Fatalf("ControlRefusedBusy = %d, want at least the %d refusals mallory saw", st.ControlRefusedBusy, refused.Load())
	}
}

// tryJoin is agent.join for a goroutine other than the test's: it returns what went wrong.
func tryJoin(h *harness, a *agent, channel string) (wire.DurableJoinReply, error) {
	var out wire.DurableJoinReply
	data, err := encodeRequest(wire.OpDurableJoin, wire.DurableJoinArgs{Channel: channel}, a)
	if err != nil {
		return out, err
	}
	subject := testNames.CtlSubject(wire.DeliveryService, a.id)
	reply := wire.ControlReplySubject(subject)
	sub, err := h.nc.SubscribeSync(reply)
	if err != nil {
		return out, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := h.nc.PublishRequest(subject, reply, data); err != nil {
		return out, err
	}
	m, err := sub.NextMsg(waitFor)
	if err != nil {
		return out, fmt.Errorf("no reply to %s: %w", subject, err)
	}
	r, err := wire.DecodeControlReply(m.Data)
	if err != nil {
		return out, err
	}
	if !r.OK {
		return out, fmt.Errorf("join refused: %s", r.Error)
	}
	return out, json.Unmarshal(r.Data, &out)
}

// encodeRequest encodes a control request of op from a.
func encodeRequest(op string, args any, a *agent) ([]byte, error) {
	req, err := wire.NewControlRequest(op, args, a.ref())
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// TestConcurrentRejoinsOfOneMemberAreSerialized sends one member's joins of one channel at
// once. They are served by different workers, but the record's writes are serialized by its
// key's lock: each join gets its own generation, no compare-and-set write conflicts with a
// sibling's (which would count as a repair), and the stored record is the last one.
func TestConcurrentRejoinsOfOneMemberAreSerialized(t *testing.T) {
	h := newHarness(t)
	bob := h.newAgent("bob", "team")
	const joins = 4
	gens, errs := make([]uint64, joins), make([]error, joins)
	var wg sync.WaitGroup
	for i := range joins {
		wg.Go(func() {
			r, err := tryJoin(h, bob, "team")
			gens[i], errs[i] = r.Generation, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(gens)
	if want := []uint64{1, 2, 3, 4}; !slices.Equal(gens, want) {
		t.Fatalf("generations = %v, want %v", gens, want)
	}
	if rec := bob.membership("team"); rec.Generation != joins {
		t.Fatalf("stored generation = %d, want the last join's %d", rec.Generation, joins)
	}
	if st := h.svc.Stats(); st.RegistryRepairs != 0 {
		t.Fatalf("repairs = %d, want 0: a write raced a sibling's", st.RegistryRepairs)
	}
}
