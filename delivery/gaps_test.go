package delivery

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

func TestGapLog(t *testing.T) {
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
}

// viewOf is a membership view holding recs.
func viewOf(recs ...wire.Membership) *memberView {
	v := newMemberView()
	for _, rec := range recs {
		v.putLocked(member{rec: rec})
	}
	return v
}

func TestAFanoutGapIsRecordedInEveryMembershipItOverlaps(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	recs := []wire.Membership{
		{Channel: "team", Owner: "open-across-both", JoinCursor: 5},
		{Channel: "ops", Owner: "joined-after-the-first", JoinCursor: 14},
		{Channel: "team", Owner: "left-before-the-second", JoinCursor: 1, LeaveCursor: u(15)},
		{Channel: "ops", Owner: "joined-after-both", JoinCursor: 16},
	}
	v := viewOf(recs...)
	for _, g := range []wire.SeqRange{{First: 12, Last: 14}, {First: 16, Last: 16}} {
		v.gap(g)
	}
	for i, want := range [][]wire.SeqRange{
		{{First: 12, Last: 14}, {First: 16, Last: 16}},
		{{First: 16, Last: 16}},
		{{First: 12, Last: 14}},
		nil,
	} {
		t.Run("a membership "+recs[i].Owner+" sees its own", func(t *testing.T) {
			if got := v.gapsOf(recs[i]); !slices.Equal(got, want) {
				t.Fatalf("gaps = %+v, want %+v", got, want)
			}
		})
	}
	if got := len(v.takeDirty()); got != 3 {
		t.Fatalf("%d records marked for writing, want the 3 affected", got)
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
	gap := list.Memberships[0].Gaps
	h.restartMesh()
	h.decodeOK(bob.control(wire.OpListMemberships, nil), &list)
	if len(list.Memberships) != 1 || !slices.Equal(list.Memberships[0].Gaps, gap) {
		t.Fatalf("after a restart, memberships = %+v, want one listing the gap %+v", list.Memberships, gap)
	}
}

func TestRefusedCopies(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	v := viewOf(wire.Membership{Channel: "team", Owner: "bob"}, wire.Membership{Channel: "ops", Owner: "bob"})
	for _, seq := range []uint64{10, 11, 12, 20} {
		v.refused("team", "bob", seq, true)
	}
	v.refused("team", "bob", 30, false) // an @mention copy: counted, no membership gap
	v.refused("ops", "bob", 40, true)
	v.refused("live", "bob", 50, false) // an @mention copy on a channel bob holds no record of
	cases := []struct {
		name string
		rec  wire.Membership
		want []wire.SeqRange
	}{
		{"consecutive refused sequences make one range", wire.Membership{Channel: "team", Owner: "bob", JoinCursor: 1},
			[]wire.SeqRange{{First: 10, Last: 12}, {First: 20, Last: 20}}},
		{"a membership joined inside a range sees the rest of it", wire.Membership{Channel: "team", Owner: "bob", JoinCursor: 11},
			[]wire.SeqRange{{First: 12, Last: 12}, {First: 20, Last: 20}}},
		{"a membership left before a range does not see it", wire.Membership{Channel: "team", Owner: "bob", LeaveCursor: u(15)},
			[]wire.SeqRange{{First: 10, Last: 12}}},
		{"another member's membership sees none", wire.Membership{Channel: "team", Owner: "carol"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := v.gapsOf(c.rec); !slices.Equal(got, c.want) {
				t.Fatalf("gaps = %+v, want %+v", got, c.want)
			}
		})
	}
	if got := v.refusedBy("bob"); !maps.Equal(got, map[string]int64{"team": 5, "ops": 1, "live": 1}) {
		t.Fatalf("refusedBy = %v, want team 5 (one a mention), ops 1 and live 1", got)
	}
}

func TestLostCopiesKeepTheLatestRangesAndTheTotal(t *testing.T) {
	var l lostCopies
	for i := range uint64(maxGapRanges + 10) {
		l.refuse(2*i+1, true) // never consecutive: one range each
	}
	if l.Refused != maxGapRanges+10 || len(l.Ranges) != maxGapRanges || l.Ranges[0].First != 21 {
		t.Fatalf("refused %d in %d ranges from %d; want %d in the latest %d, from 21",
			l.Refused, len(l.Ranges), l.Ranges[0].First, maxGapRanges+10, maxGapRanges)
	}
}

// A membership record carries its losses under "lost": decodable by the membership record's own
// strict decoder (wire.DecodeMembership), read back whole by the registry, and absent from an
// older record.
func TestLossesRideInTheMembershipRecord(t *testing.T) {
	rec := wire.Membership{Channel: "team", Owner: "bob", State: wire.MemberDurableActive, JoinCursor: 3,
		Activated: true, Generation: 2, WriterIdentity: WriterIdentity, UpdatedAt: 1}
	key := wire.MemberKey("team", "bob")
	lost := &lostCopies{Refused: 7, Ranges: []wire.SeqRange{{First: 4, Last: 9}, {First: 12, Last: 12}}}
	data, err := json.Marshal(storedMember{Membership: rec, Lost: lost})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := wire.DecodeMembership(key, data); err != nil || *got != rec {
		t.Fatalf("the record with losses decodes as %+v, %v; want %+v", got, err, rec)
	}
	m, got, err := decodeMember(key, data)
	if err != nil || m.rec != rec || got == nil || got.Refused != lost.Refused || !slices.Equal(got.Ranges, lost.Ranges) {
		t.Fatalf("decodeMember = %+v, %+v, %v; want the record and %+v", m, got, err, lost)
	}
	older, err := json.Marshal(storedMember{Membership: rec})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(older), "lost") {
		t.Fatalf("a record with no losses writes %s", older)
	}
	if _, got, err := decodeMember(key, older); err != nil || got != nil {
		t.Fatalf("a record from before losses were kept decodes with %+v, %v", got, err)
	}
	inverted := []byte(strings.Replace(string(data), `"first":12`, `"first":13`, 1))
	if _, got, err := decodeMember(key, inverted); err != nil || len(got.Ranges) != 1 {
		t.Fatalf("a stored inverted range decodes as %+v, %v; want it dropped", got, err)
	}
}
