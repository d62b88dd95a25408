package delivery

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"

	"github.com/cotal-go/cotal/internal/await"
)

// sameIDs fails unless got holds exactly want, each once, in any order.
func sameIDs(t *testing.T, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("got %d copies %v, want %d %v", len(got), got, len(want), want)
	}
}

func TestOfflineDurableMemberGetsEveryMessageOnce(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	for _, a := range []*agent{alice, bob} {
		if r := a.join("team"); !r.Durable || r.Generation != 1 {
			t.Fatalf("join = %+v, want durable generation 1", r)
		}
	}
	var sent []*wire.CotalMessage
	for range 20 {
		m, _ := alice.publish("team")
		sent = append(sent, m)
	}
	t.Run("the offline member gets every message exactly once", func(t *testing.T) {
		sameIDs(t, bob.received(), ids(sent...))
	})
	t.Run("the sender gets no copy of its own messages", func(t *testing.T) {
		sameIDs(t, alice.received(), nil)
	})
	if st := h.svc.Stats(); st.FannedOutDurable != 20 || st.ReaderDelivered != 20 {
		t.Fatalf("stats = %+v, want 20 fanned out and 20 delivered", st)
	}
}

func TestLiveChannelGivesNoDurableCopies(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", ">"), h.newAgent("bob", ">")
	h.setChannel("lobby", wire.ChannelConfig{DeliveryClass: wire.DeliveryLive})
	await.Check(t, waitFor, pollEvery, func() error { return h.classIs("lobby", wire.DeliveryLive) })
	if r := bob.join("lobby"); r.Durable || r.Reason != ReasonChannelLive {
		t.Fatalf("join of a live channel = %+v, want durable false with reason %q", r, ReasonChannelLive)
	}
	alice.publish("lobby")
	sameIDs(t, bob.received(), nil)
	if st := h.svc.Stats(); st.FannedOutDurable != 0 {
		t.Fatalf("fanned out %d durable entries on a live channel", st.FannedOutDurable)
	}
}

func TestLeaveIsAHardReadBoundary(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	gen := bob.join("team").Generation
	// Hold the fan-out so the pre-leave messages are handed over only after bob has left.
	release := h.svc.StopLoop(t, LoopFanout)
	var before []*wire.CotalMessage
	for range 3 {
		m, _ := alice.publish("team")
		before = append(before, m)
	}
	if r := bob.leave("team", gen); r.AlreadyLeft || r.Channel != "team" {
		t.Fatalf("leave = %+v, want left", r)
	}
	for range 3 {
		alice.publish("team")
	}
	release()
	t.Run("messages before the leave cursor are delivered, later ones are not", func(t *testing.T) {
		sameIDs(t, bob.received(), ids(before...))
	})
	t.Run("leaving again answers alreadyLeft", func(t *testing.T) {
		if r := bob.leave("team", gen); !r.AlreadyLeft {
			t.Fatalf("second leave = %+v, want alreadyLeft", r)
		}
	})
	t.Run("the left membership is no longer listed", func(t *testing.T) {
		var list wire.ListMembershipsReply
		h.decodeOK(bob.control(wire.OpListMemberships, nil), &list)
		if len(list.Memberships) != 0 {
			t.Fatalf("memberships after leave = %+v", list.Memberships)
		}
	})
}

func TestRejoinTakesANewCursor(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	first := bob.join("team")
	m1, _ := alice.publish("team")
	bob.leave("team", first.Generation)
	alice.publish("team") // published while bob was away: never durable for him
	second := bob.join("team")
	if second.Generation <= first.Generation {
		t.Fatalf("rejoin generation %d, want more than %d", second.Generation, first.Generation)
	}
	m3, seq := alice.publish("team")
	if rec := bob.membership("team"); rec.JoinCursor >= seq || rec.LeaveCursor != nil || rec.Generation != second.Generation {
		t.Fatalf("record after rejoin = %+v, want an open membership with a cursor before %d", rec, seq)
	}
	sameIDs(t, bob.received(), ids(m1, m3))
}

// TestANarrowingBeforeTheHandOverStopsTheCopies: the read ACL is checked when a copy is
// handed over, not when its message was published (SPEC §9 items 5, 6).
func TestANarrowingBeforeTheHandOverStopsTheCopies(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team", "other")
	bob.join("team")
	release := h.svc.StopLoop(t, LoopFanout)
	for range 3 {
		alice.publish("team")
	}
	h.acl.set(bob.id, "other") // re-minted without team
	release()
	sameIDs(t, bob.received(), nil)
	if st := h.svc.Stats(); st.ReaderDroppedUnauthorized != 3 || st.ReaderDelivered != 0 {
		t.Fatalf("dropped unauthorized = %d, delivered %d; want 3 and 0", st.ReaderDroppedUnauthorized, st.ReaderDelivered)
	}
}

// TestCopiesWaitingForAnUnknownACLAreCheckedAtTheHandOver: a member the ACL source does not
// know when its copy is routed gets it through INBOX and the trusted reader, which checks
// the ACL and the membership interval of that later moment.
func TestCopiesWaitingForAnUnknownACLAreCheckedAtTheHandOver(t *testing.T) {
	h := newHarness(t)
	alice := h.newAgent("alice", "team")
	bob, carol := h.newAgent("bob", "team"), h.newAgent("carol", "team")
	gen := bob.join("team").Generation
	carol.join("team")
	h.acl.forget(bob.id)
	h.acl.forget(carol.id)
	release := h.svc.StopLoop(t, LoopReader)
	var before []*wire.CotalMessage
	for range 2 {
		m, _ := alice.publish("team")
		before = append(before, m)
	}
	await.Check(t, waitFor, pollEvery, h.fannedOut(4))
	bob.leave("team", gen)
	alice.publish("team") // after bob's leave cursor
	h.acl.set(bob.id, "team")
	h.acl.set(carol.id, "other") // carol comes back narrowed
	release()
	t.Run("the member who left gets what preceded the leave", func(t *testing.T) {
		sameIDs(t, bob.received(), ids(before...))
	})
	t.Run("the narrowed member gets nothing", func(t *testing.T) {
		sameIDs(t, carol.received(), nil)
	})
	if st := h.svc.Stats(); st.ReaderDroppedUnauthorized != 3 {
		t.Fatalf("dropped unauthorized = %d, want 3 (carol's)", st.ReaderDroppedUnauthorized)
	}
}

// TestAHandOverRedoneAfterACrashIsStoredOnce: a fan-out that stored a message's DLV copies
// and crashed before acking the CHAT message redoes the hand-over on redelivery; DLV
// deduplicates it by Nats-Msg-Id, so the member gets each message once.
func TestAHandOverRedoneAfterACrashIsStoredOnce(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	bob.join("team")
	release := h.svc.StopLoop(t, LoopFanout)
	var sent []*wire.CotalMessage
	for range 3 {
		m, _ := alice.publish("team")
		sent = append(sent, m)
	}
	for _, m := range sent[:2] { // what the crashed fan-out had stored
		if _, err := h.js.PublishMsg(context.Background(), &nats.Msg{Subject: testNames.DLVSubject(bob.id),
			Data: mustJSON(t, m)}, jetstream.WithMsgID(dlvMsgID(m.ID, bob.id))); err != nil {
			t.Fatal(err)
		}
	}
	release()
	sameIDs(t, bob.received(), ids(sent...))
}

func TestUnknownMemberIsRetriedThenGivenUpLoudly(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	bob.join("team")
	h.acl.forget(bob.id)
	alice.publish("team")
	// The reader gives up after its retries, each delayed; wait for that, then check that
	// nothing reached bob.
	await.Check(t, waitFor, pollEvery, func() error {
		if n := h.svc.Stats().ReaderGaveUpUnknown; n != 1 {
			return fmt.Errorf("gave up = %d, want 1", n)
		}
		return nil
	})
	sameIDs(t, bob.received(), nil)
}

func TestMentionOnLiveChannel(t *testing.T) {
	h := newHarness(t)
	h.setChannel("lobby", wire.ChannelConfig{DeliveryClass: wire.DeliveryLive})
	await.Check(t, waitFor, pollEvery, func() error { return h.classIs("lobby", wire.DeliveryLive) })
	alice := h.newAgent("alice", ">")
	now := time.Now()
	bob := h.newAgent("bob", "lobby")      // authorized, present, not reading
	eve := h.newAgent("eve", "elsewhere")  // present but not authorized
	carol1 := h.newAgent("carol", "lobby") // two present carols: ambiguous
	carol2 := h.newAgent("carol", "lobby")
	dave := h.newAgent("dave", "lobby")   // authorized, stale presence: crashed or away
	frank := h.newAgent("frank", "lobby") // authorized, announced offline: closed gracefully
	for _, a := range []*agent{bob, eve, carol1, carol2} {
		a.announce(now)
	}
	dave.announce(now.Add(-time.Minute))
	frank.announceStatus(now, wire.StatusOffline)
	h.waitPresence(bob, eve, carol1, carol2, dave, frank)

	m, _ := alice.publish("lobby", "Bob", "eve", "carol", "dave", "frank", "nobody")
	tests := []struct {
		name string
		who  *agent
		want []string
	}{
		{"an authorized present target gets one durable copy", bob, ids(m)},
		{"a target outside its read ACL gets nothing", eve, nil},
		{"an ambiguous name gets nothing", carol1, nil},
		{"the other holder of the ambiguous name gets nothing", carol2, nil},
		{"an authorized target whose heartbeat went stale still gets its copy (SPEC §4)", dave, ids(m)},
		{"an authorized target that announced offline still gets its copy (SPEC §4)", frank, ids(m)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { sameIDs(t, tc.who.received(), tc.want) })
	}
	if st := h.svc.Stats(); st.FannedOutMention != 3 {
		t.Fatalf("mention entries = %d, want 3 (bob, dave, frank)", st.FannedOutMention)
	}
}

// TestNoCopyIsHandedOverUnderAJoinNotYetWritten: a copy routed while a join's record is being
// written waits in INBOX, since the write may fail and the join be rolled back; the reader
// hands it over once the record is written and drops it if the join was rolled back.
func TestNoCopyIsHandedOverUnderAJoinNotYetWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written bool
	}{{"the join is written", true}, {"the join is rolled back", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
			v := h.svc.members.view
			v.mu.Lock() // a join between its fence and its registry write (registry.join)
			v.putLocked(member{rec: wire.Membership{Channel: "team", Owner: bob.id, State: wire.MemberDurableActive,
				Activated: true, Generation: 1}, joining: true})
			v.mu.Unlock()
			m, _ := alice.publish("team")
			await.Check(t, waitFor, pollEvery, h.fannedOut(1))
			if got := h.svc.Stats().ReaderDelivered; got != 0 {
				t.Fatalf("%d copies handed over under a join not yet written", got)
			}
			v.mu.Lock()
			if tc.written {
				rec, _ := v.lookupLocked("team", bob.id)
				rec.joining = false
				v.putLocked(rec)
			} else {
				v.removeLocked("team", bob.id)
			}
			v.mu.Unlock()
			var want []string
			if tc.written {
				want = ids(m)
			}
			sameIDs(t, bob.received(), want)
		})
	}
}
