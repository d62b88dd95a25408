package delivery

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

func TestGapLog(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	g := &gapLog{}
	g.resume(10)
	steps := []struct {
		name string
		seq  uint64
		gap  wire.SeqRange
		ok   bool
	}{
		{"the next sequence is no gap", 11, wire.SeqRange{}, false},
		{"a jump is a gap of the skipped sequences", 15, wire.SeqRange{First: 12, Last: 14}, true},
		{"an older sequence is no gap", 13, wire.SeqRange{}, false},
		{"a jump of one is a gap of one", 17, wire.SeqRange{First: 16, Last: 16}, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			gap, ok := g.observe(s.seq)
			if ok != s.ok || gap != s.gap {
				t.Fatalf("observe(%d) = %+v, %v; want %+v, %v", s.seq, gap, ok, s.gap, s.ok)
			}
		})
	}
	affect := []struct {
		name string
		rec  wire.Membership
		want int
	}{
		{"a membership open across both gaps sees both", wire.Membership{JoinCursor: 5}, 2},
		{"a membership joined after the first gap sees the second", wire.Membership{JoinCursor: 14}, 1},
		{"a membership left before the second gap sees the first", wire.Membership{JoinCursor: 1, LeaveCursor: u(15)}, 1},
		{"a membership joined after both sees none", wire.Membership{JoinCursor: 16}, 0},
	}
	for _, a := range affect {
		t.Run(a.name, func(t *testing.T) {
			if got := g.affecting(a.rec); len(got) != a.want {
				t.Fatalf("affecting = %+v, want %d ranges", got, a.want)
			}
		})
	}
}

func TestEvictionBeforeFanoutIsReportedAsAGap(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	bob.join("team")
	release := h.svc.StopLoop(t, LoopFanout)
	// CHAT keeps 1000 messages per sender+channel subject: 3 more evict the oldest 3 before
	// the stopped fan-out can read them.
	const sent, evicted = wire.ChatPerSubject + 3, 3
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	for range sent {
		m := wire.NewChannelMessage(testSpace, alice.ref(), "team", wire.Part{Kind: "text", Text: "x"})
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: testNames.ChatSubject(alice.id, "team"), Data: mustJSON(t, m)},
			jetstream.WithMsgID(m.ID)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(waitFor):
		t.Fatal("publishes not acknowledged")
	}
	release()
	if got := len(bob.received()); got != sent-evicted {
		t.Fatalf("bob got %d copies, want %d", got, sent-evicted)
	}
	st := h.svc.Stats()
	if st.GapsDetected != 1 || st.GapMessages != evicted {
		t.Fatalf("gaps = %d covering %d messages, want 1 covering %d", st.GapsDetected, st.GapMessages, evicted)
	}
	var list wire.ListMembershipsReply
	h.decodeOK(bob.control(wire.OpListMemberships, nil), &list)
	if len(list.Memberships) != 1 || len(list.Memberships[0].Gaps) != 1 ||
		list.Memberships[0].Gaps[0].Last-list.Memberships[0].Gaps[0].First+1 != evicted {
		t.Fatalf("memberships = %+v, want one listing the gap of %d", list.Memberships, evicted)
	}
}

func TestDroppedLog(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	d := &droppedLog{}
	for _, seq := range []uint64{10, 11, 12, 20} {
		d.record("team", "bob", seq, true)
	}
	d.record("team", "bob", 30, false) // an @mention copy: counted, no membership gap
	d.record("ops", "bob", 40, true)
	cases := []struct {
		name string
		rec  wire.Membership
		want []wire.SeqRange
	}{
		{"consecutive refused sequences make one range", wire.Membership{Channel: "team", Owner: "bob", JoinCursor: 1},
			[]wire.SeqRange{{First: 10, Last: 12}, {First: 20, Last: 20}}},
		{"a membership joined after a range does not see it", wire.Membership{Channel: "team", Owner: "bob", JoinCursor: 12},
			[]wire.SeqRange{{First: 20, Last: 20}}},
		{"a membership left before a range does not see it", wire.Membership{Channel: "team", Owner: "bob", LeaveCursor: u(15)},
			[]wire.SeqRange{{First: 10, Last: 12}}},
		{"another member's membership sees none", wire.Membership{Channel: "team", Owner: "carol"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := d.of(c.rec); !slices.Equal(got, c.want) {
				t.Fatalf("of = %+v, want %+v", got, c.want)
			}
		})
	}
	if got := d.byChannel("bob"); !maps.Equal(got, map[string]int64{"team": 5, "ops": 1}) {
		t.Fatalf("byChannel = %v, want team 5 (one a mention) and ops 1", got)
	}
}
