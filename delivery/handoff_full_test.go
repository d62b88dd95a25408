package delivery

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/internal/jsconfig"
	"github.com/cotal-go/cotal/wire"
	"github.com/nats-io/nats.go/jetstream"
)

// setHandoffBound sets DLV_<s>'s max_msgs_per_subject to bound (wire.Unlimited: none) and
// restarts the fan-out and the reader, which read the bound when they start, waiting until
// both are up again.
func (h *harness) setHandoffBound(bound int64) {
	h.t.Helper()
	spec := testNames.MessageStreams(wire.DefaultStreamLimits())[4]
	spec.MaxMsgsPerSubject = bound
	if _, err := h.js.UpdateStream(context.Background(), jsconfig.Stream(spec, jetstream.FileStorage)); err != nil {
		h.t.Fatalf("update %s: %v", spec.Name, err)
	}
	for _, name := range []string{LoopFanout, LoopReader} {
		h.svc.StopLoop(h.t, name)()
		await.Check(h.t, waitFor, pollEvery, func() error {
			if h.svc.sup.isDown(name) {
				return fmt.Errorf("loop %s is not up again", name)
			}
			return nil
		})
	}
}

// gapCount sums the sequences in ranges.
func gapCount(ranges []wire.SeqRange) uint64 {
	var n uint64
	for _, r := range ranges {
		n += r.Last - r.First + 1
	}
	return n
}

func TestAMemberOfflinePastTheHandoffBoundSeesEveryDroppedCopyAsAGap(t *testing.T) {
	const bound, sent, later = 5, 12, 3
	h := newHarness(t)
	h.setHandoffBound(bound)
	alice, bob := h.newAgent("alice", "team"), h.newAgent("bob", "team")
	bob.join("team")
	var owed []string
	var seqs []uint64
	for range sent {
		m, seq := alice.publish("team")
		owed, seqs = append(owed, m.ID), append(seqs, seq)
	}
	// bob was offline for all of them: he gets the oldest bound copies, once each.
	if got := bob.received(); !slices.Equal(got, owed[:bound]) {
		t.Fatalf("bob got %q, want the oldest %d he was owed %q", got, bound, owed[:bound])
	}
	if st := h.svc.Stats(); st.ReaderDroppedFull != sent-bound || st.ReaderDelivered != bound {
		t.Fatalf("dropped full = %d, delivered = %d; want %d and %d", st.ReaderDroppedFull, st.ReaderDelivered, sent-bound, bound)
	}
	if got := h.svc.DroppedCopies(bob.id); !maps.Equal(got, map[string]int64{"team": sent - bound}) {
		t.Fatalf("dropped copies of bob = %v, want %d on team", got, sent-bound)
	}
	var list wire.ListMembershipsReply
	h.decodeOK(bob.control(wire.OpListMemberships, nil), &list)
	if len(list.Memberships) != 1 {
		t.Fatalf("memberships = %+v, want one", list.Memberships)
	}
	gaps := list.Memberships[0].Gaps
	if gapCount(gaps) != sent-bound || gaps[0].First != seqs[bound] || gaps[len(gaps)-1].Last != seqs[sent-1] {
		t.Fatalf("gaps = %+v, want the %d sequences %d..%d", gaps, sent-bound, seqs[bound], seqs[sent-1])
	}
	// The losses are written into bob's membership record as they are counted, not only at
	// Close, and a mesh restarted on the same store lists them again.
	await.Check(t, waitFor, pollEvery, func() error {
		lost := h.storedLosses("team", bob.id)
		if lost == nil || lost.Refused != sent-bound || !slices.Equal(lost.Ranges, gaps) {
			return fmt.Errorf("bob's record holds losses %+v; want %d refused in %+v", lost, sent-bound, gaps)
		}
		return nil
	})
	h.restartMesh()
	if got := h.svc.DroppedCopies(bob.id); !maps.Equal(got, map[string]int64{"team": sent - bound}) {
		t.Fatalf("after a restart, dropped copies of bob = %v, want %d on team", got, sent-bound)
	}
	h.decodeOK(bob.control(wire.OpListMemberships, nil), &list)
	if len(list.Memberships) != 1 || !slices.Equal(list.Memberships[0].Gaps, gaps) {
		t.Fatalf("after a restart, memberships = %+v, want one with gaps %+v", list.Memberships, gaps)
	}
	// Once bob has acknowledged what he got, his handoff has room again.
	var next []string
	for range later {
		m, _ := alice.publish("team")
		next = append(next, m.ID)
	}
	if got := bob.received(); !slices.Equal(got, next) {
		t.Fatalf("after draining bob got %q, want %q", got, next)
	}
	if st := h.svc.Stats(); st.ReaderDroppedFull != 0 {
		t.Fatalf("dropped full = %d since the restart after draining, want 0", st.ReaderDroppedFull)
	}
}

// storedLosses reads the losses kept in the stored membership record of channel and owner.
func (h *harness) storedLosses(channel, owner string) *lostCopies {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	kv, err := h.js.KeyValue(ctx, testNames.DurableMembersBucket())
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := kv.Get(ctx, wire.MemberKey(channel, owner))
	if err != nil {
		h.t.Fatal(err)
	}
	_, lost, err := decodeMember(e.Key(), e.Value())
	if err != nil {
		h.t.Fatal(err)
	}
	return lost
}
