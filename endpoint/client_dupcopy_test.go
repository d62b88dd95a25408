package endpoint_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

// These tests drive the receive path's undecoded duplicate drop (duplicateCopy in
// receive.go): a copy byte for byte equal to a surfaced channel copy, found by the id in its
// Nats-Msg-Id header, is acked and counted as a duplicate without being decoded; any other
// copy takes the full SPEC §5 path whatever its header says.

// publishWithID publishes data on subject through JetStream with Nats-Msg-Id msgID, as the
// delivery service writes a DLV copy (<id>:<member>) or a sender a chat message (<id>).
func (h *harness) publishWithID(subject, msgID string, data []byte) {
	h.t.Helper()
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(nats.MsgIdHdr, msgID)
	if _, err := h.js.PublishMsg(ctxT(h.t), msg); err != nil {
		h.t.Fatalf("publish %s: %v", subject, err)
	}
}

// storedBytes returns message id's payload as CHAT stored it: the bytes every copy carries.
func (h *harness) storedBytes(t *testing.T, id string) []byte {
	t.Helper()
	s, err := h.js.Stream(ctxT(t), h.names.ChatStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		raw, err := s.GetMsg(ctxT(t), seq)
		if err == nil && raw.Header.Get(nats.MsgIdHdr) == id {
			return raw.Data
		}
	}
	t.Fatalf("message %s not in CHAT", id)
	return nil
}

// dlvClean reports whether bob's durable consumer holds nothing pending or unacked.
func (h *harness) dlvClean(bob *peer) bool {
	info := h.consumerInfo(h.names.DLVStream(), h.names.DLVConsumer(bob.ID()))
	return info.NumAckPending == 0 && info.NumPending == 0
}

func TestReceiveDurableCopyOfASurfacedMessageIsAckedUndecoded(t *testing.T) {
	h := newBareHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })

	r, err := alice.Send(ctxT(t), "team", text("seen live"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the live copy", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	h.publishWithID(h.names.DLVSubject(bob.ID()), r.ID+":"+bob.ID(), h.storedBytes(t, r.ID))
	await.True(t, settle, "the durable copy acked as an undecoded duplicate", func() bool {
		return bob.Stats().Duplicates == 1 && endpoint.UncheckedDuplicates(bob.Endpoint) == 1 && h.dlvClean(bob)
	})
	st := bob.Stats()
	if n := len(bob.rec.withID(r.ID)); n != 1 {
		t.Fatalf("message surfaced %d times, want once", n)
	}
	if st.Terminated.Total() != 0 || st.Naks != 0 {
		t.Fatalf("terminated %v, %d naks; want none", st.Terminated, st.Naks)
	}
}

// A header only finds the copy to compare with: a copy that is not byte for byte the handled
// message is checked in full, so a malformed body is terminated and counted as the anomaly
// it is (SPEC §5), not hidden as a duplicate, and a valid message under another message's id
// surfaces.
func TestReceiveCopyWithASeenHeaderButOtherBytesIsCheckedInFull(t *testing.T) {
	h := newBareHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })
	send := func(s string) string {
		r, err := alice.Send(ctxT(t), "team", text(s))
		if err != nil {
			t.Fatal(err)
		}
		await.True(t, settle, "the live copy", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
		return r.ID
	}
	dlv := h.names.DLVSubject(bob.ID())

	t.Run("a malformed body under a surfaced id is terminated as malformed-json", func(t *testing.T) {
		seen := send("one")
		h.publishWithID(dlv, seen+":"+bob.ID(), []byte(`{"id":"`+seen+`", not json`))
		await.True(t, settle, "the termination", func() bool {
			return bob.Stats().Terminated.Of(wire.ReasonMalformedJSON) == 1 && h.dlvClean(bob)
		})
	})
	t.Run("a new message under a surfaced id surfaces", func(t *testing.T) {
		seen := send("two")
		fresh := wire.NewChannelMessage(h.space, endpoint.Ref(alice.Endpoint), "team", wire.TextPart("new"))
		data, err := json.Marshal(fresh)
		if err != nil {
			t.Fatal(err)
		}
		h.publishWithID(dlv, seen+":"+bob.ID(), data)
		await.True(t, settle, "the new message", func() bool { return len(bob.rec.withID(fresh.ID)) == 1 })
	})
	t.Run("a surfaced message's bytes on another sender's subject are a sender mismatch", func(t *testing.T) {
		seen := send("three")
		mallory := newID(t)
		h.publishWithID(h.names.ChatSubject(mallory, "team"), seen, h.storedBytes(t, seen))
		await.True(t, settle, "the sender mismatch", func() bool {
			return bob.Stats().Terminated.Of(wire.ReasonSenderMismatch) == 1
		})
	})
	if n := endpoint.UncheckedDuplicates(bob.Endpoint); n != 0 {
		t.Fatalf("%d copies dropped undecoded, want none", n)
	}
}

func TestReceiveForgedHeaderOnANewMessageDoesNotSuppressTheRealOne(t *testing.T) {
	h := newBareHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })
	dlv := h.names.DLVSubject(bob.ID())
	encode := func(m *wire.CotalMessage) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	forged := wire.NewChannelMessage(h.space, endpoint.Ref(alice.Endpoint), "team", wire.TextPart("forged"))
	real := wire.NewChannelMessage(h.space, endpoint.Ref(alice.Endpoint), "team", wire.TextPart("real"))

	// The forged copy carries the real message's id in its header before the real message
	// exists anywhere: it surfaces as itself and must not claim the real message's id.
	h.publishWithID(dlv, real.ID+":"+bob.ID(), encode(forged))
	await.True(t, settle, "the forged copy surfaced as itself", func() bool { return len(bob.rec.withID(forged.ID)) == 1 })
	// The real message arrives later, under the same header.
	h.publishWithID(h.names.ChatSubject(alice.ID(), "team"), real.ID, encode(real))
	await.True(t, settle, "the real message", func() bool { return len(bob.rec.withID(real.ID)) == 1 })
	st := bob.Stats()
	if st.Duplicates != 0 || endpoint.UncheckedDuplicates(bob.Endpoint) != 0 || st.Terminated.Total() != 0 {
		t.Fatalf("duplicates %d (undecoded %d), terminated %v; want none", st.Duplicates,
			endpoint.UncheckedDuplicates(bob.Endpoint), st.Terminated)
	}
}
