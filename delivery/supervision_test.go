package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/cotal-go/cotal/wire"

	"github.com/cotal-go/cotal/internal/await"
)

func TestHealthTurnsRedWhenALoopDiesAndGreenAfterRestart(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	if err := h.svc.Healthy(); err != nil {
		t.Fatalf("healthy after start: %v", err)
	}
	for _, name := range []string{LoopFanout, LoopReader, LoopControl, LoopMembers, LoopChannels, LoopPresence} {
		t.Run(name+" down is reported and restarted", func(t *testing.T) {
			restarts := h.svc.Stats().Restarts
			release := h.svc.StopLoop(t, name)
			err := h.svc.Healthy()
			if !errors.Is(err, ErrUnhealthy) || !strings.Contains(err.Error(), name+" is down") {
				t.Fatalf("Healthy() = %v, want %s named down", err, name)
			}
			if name == LoopFanout || name == LoopReader {
				want := reasonUnavailable + name + " is down"
				if r := bob.join("team"); r.Durable || r.Reason != want {
					t.Fatalf("join while %s is down = %+v, want reason %q", name, r, want)
				}
			}
			release()
			await.Check(t, waitFor, pollEvery, h.svc.Healthy)
			if got := h.svc.Stats().Restarts; got <= restarts {
				t.Fatalf("restarts = %d, want more than %d", got, restarts)
			}
		})
	}
	t.Run("delivery works after every loop was restarted", func(t *testing.T) {
		if r := bob.join("team"); !r.Durable {
			t.Fatalf("join = %+v", r)
		}
		m, _ := alice.publish("team")
		sameIDs(t, bob.received(), ids(m))
	})
}

func TestMeshRestartLosesNothingStored(t *testing.T) {
	h := newHarness(t)
	alice, bob, carol := h.newAgent("alice", "team"), h.newAgent("bob", "team"), h.newAgent("carol", "team")
	bob.join("team")
	carol.join("team")
	// carol's ACL is unknown, so her copies wait in INBOX, unread, when the mesh stops; bob's
	// messages wait in CHAT, their fan-out interrupted by the stop.
	h.acl.forget(carol.id)
	h.svc.StopLoop(t, LoopReader)
	var sent []*wire.CotalMessage
	for range 5 {
		m, _ := alice.publish("team")
		sent = append(sent, m)
	}
	await.Check(t, waitFor, pollEvery, h.fannedOut(10))
	h.restartMesh()
	h.acl.set(carol.id, "team")
	// The membership is reloaded from the registry, so later messages are fanned out too.
	for range 5 {
		m, _ := alice.publish("team")
		sent = append(sent, m)
	}
	sameIDs(t, bob.received(), ids(sent...))
	sameIDs(t, carol.received(), ids(sent...))
}

// TestStoppingTheFanOutMidBatchLosesAndDuplicatesNothing: the fan-out is stopped, as a
// crash would stop it, while it is handing a burst over; the copies it had stored are
// handed over again on redelivery and deduplicated.
func TestStoppingTheFanOutMidBatchLosesAndDuplicatesNothing(t *testing.T) {
	const members, burst = 4, 800
	h := newHarness(t)
	alice := h.newAgent("alice", "team")
	var team []*agent
	for i := range members {
		a := h.newAgent(fmt.Sprintf("m%d", i), "team")
		a.join("team")
		team = append(team, a)
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	var sent []*wire.CotalMessage
	var acks []jetstream.PubAckFuture
	for range burst {
		m := wire.NewChannelMessage(testSpace, alice.ref(), "team", wire.Part{Kind: "text", Text: "hi"})
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: testNames.ChatSubject(alice.id, "team"), Data: mustJSON(t, m)},
			jetstream.WithMsgID(m.ID))
		if err != nil {
			t.Fatal(err)
		}
		sent, acks = append(sent, m), append(acks, f)
	}
	await.Check(t, waitFor, time.Millisecond, func() error {
		if h.svc.Stats().ReaderDelivered == 0 {
			return fmt.Errorf("no copy handed over yet")
		}
		return nil
	})
	h.svc.StopLoop(t, LoopFanout)()
	stopped := h.svc.Stats().ReaderDelivered
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	if stopped >= members*burst {
		t.Fatalf("the fan-out had handed over all %d copies when it stopped; the test proves nothing", stopped)
	}
	for _, a := range team {
		sameIDs(t, a.received(), ids(sent...))
	}
}

func TestJoinRacingPublishersMissesNothingAfterTheCursor(t *testing.T) {
	h := newHarness(t)
	bob := h.newAgent("bob", "team")
	pubs := []*agent{h.newAgent("p1", "team"), h.newAgent("p2", "team")}
	const perPublisher = 150
	var (
		mu   sync.Mutex
		seqs = map[string]uint64{}
		wg   sync.WaitGroup
	)
	half := make(chan struct{}, len(pubs))
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perPublisher {
				if i == perPublisher/2 {
					half <- struct{}{}
				}
				m, seq := p.publish("team")
				mu.Lock()
				seqs[m.ID] = seq
				mu.Unlock()
			}
		}()
	}
	<-half
	joined := bob.join("team")
	wg.Wait()
	if !joined.Durable {
		t.Fatalf("join = %+v", joined)
	}
	cursor := bob.membership("team").JoinCursor
	var want []string
	for id, seq := range seqs {
		if seq > cursor {
			want = append(want, id)
		}
	}
	if len(want) == 0 || len(want) == len(seqs) {
		t.Fatalf("join cursor %d did not fall inside the publishing run; the test proves nothing", cursor)
	}
	sameIDs(t, bob.received(), want)
}

func TestMembershipRecordOverwrittenBehindOurBackIsRestored(t *testing.T) {
	h := newHarness(t)
	bob := h.newAgent("bob", "team")
	bob.join("team")
	kv, err := h.js.KeyValue(context.Background(), testNames.DurableMembersBucket())
	if err != nil {
		t.Fatal(err)
	}
	key := wire.MemberKey("team", bob.id)
	// What an injected reply subject makes JetStream write onto the key.
	if _, err := kv.Put(context.Background(), key, []byte(`{"stream":"CHAT_main","seq":7}`)); err != nil {
		t.Fatal(err)
	}
	await.Check(t, waitFor, pollEvery, func() error {
		e, err := kv.Get(context.Background(), key)
		if err != nil {
			return err
		}
		_, err = wire.DecodeMembership(key, e.Value())
		return err
	})
	if st := h.svc.Stats(); st.RegistryRepairs < 1 {
		t.Fatalf("repairs = %d, want at least 1", st.RegistryRepairs)
	}
}

func TestCloseLeavesNoGoroutineBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHarness(t)
	h.newAgent("bob", "team").join("team")
	h.stop()
}

// Presence serves @mention resolution only: while the presence loop is down, durable copies are
// still fanned out and mentions resolve on the last known rows, each such message counted. Once
// it is back, the follow takes presence written meanwhile.
func TestFanoutRoutesOnTheLastKnownPresenceWhileItsLoopIsDown(t *testing.T) {
	h := newHarness(t)
	h.setChannel("lobby", wire.ChannelConfig{DeliveryClass: wire.DeliveryLive})
	await.Check(t, waitFor, pollEvery, func() error { return h.classIs("lobby", wire.DeliveryLive) })
	alice, bob, carol := h.newAgent("alice", ">"), h.newAgent("bob", ">"), h.newAgent("carol", ">")
	bob.join("team")
	bob.announce(time.Now())
	h.waitPresence(bob)

	release := h.svc.StopLoop(t, LoopPresence)
	durable, _ := alice.publish("team")
	mention, _ := alice.publish("lobby", "bob")
	sameIDs(t, bob.received(), ids(durable, mention))
	if got := h.svc.Stats().MentionsStalePresence; got != 1 {
		t.Fatalf("mentions resolved on stale presence = %d, want 1", got)
	}

	carol.announce(time.Now())
	release()
	await.Check(t, waitFor, pollEvery, h.svc.Healthy)
	h.waitPresence(carol)
	late, _ := alice.publish("lobby", "carol")
	sameIDs(t, carol.received(), ids(late))
}
