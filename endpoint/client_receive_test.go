package endpoint_test

import (
	"encoding/json"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestReceiveTerminatesPermanentAnomaliesOnce(t *testing.T) {
	h := newHarness(t)
	bob := h.connect("bob")
	mallory := newID(t)
	alice := newID(t)
	spoofed, err := json.Marshal(wire.NewDirectMessage(h.space, wire.EndpointRef{ID: alice, Name: "alice"}, bob.ID(), wire.TextPart("trust me")))
	if err != nil {
		t.Fatal(err)
	}
	valid := func(sender string) []byte {
		b, err := json.Marshal(wire.NewDirectMessage(h.space, wire.EndpointRef{ID: sender, Name: "x"}, bob.ID(), wire.TextPart("x")))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dm := h.names.Prefix() + ".inst." + bob.ID() + "."
	tests := []struct {
		name    string
		subject string
		data    []byte
		reason  string
	}{
		{"a payload signed as another sender is terminated as sender-mismatch", dm + mallory, spoofed, wire.ReasonSenderMismatch},
		{"a payload that is not JSON is terminated as malformed-json", dm + mallory, []byte("{not json"), wire.ReasonMalformedJSON},
		{"a JetStream ack written onto the inbox has no from and is terminated as sender-mismatch", dm + mallory, []byte(`{"stream":"DM_main","seq":1}`), wire.ReasonSenderMismatch},
		{"a subject with an unsanitized sender token is terminated as malformed-subject", dm + "bad$sender", valid("bad$sender"), wire.ReasonMalformedSubject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := bob.Stats().Terminated.Of(tt.reason)
			h.publishRaw(tt.subject, tt.data)
			await.True(t, settle, "the termination", func() bool { return bob.Stats().Terminated.Of(tt.reason) == before+1 })
			await.True(t, settle, "nothing pending on dm_bob", func() bool {
				info := h.consumerInfo(h.names.DMStream(), h.names.DMConsumer(bob.ID()))
				return info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0
			})
		})
	}
	if got := bob.rec.all(); len(got) != 0 {
		t.Fatalf("bob surfaced %d anomalies, want none", len(got))
	}
	if st := bob.Stats(); st.Redeliveries != 0 {
		t.Fatalf("%d redeliveries of terminated messages, want none", st.Redeliveries)
	}
}

func TestReceiveSpoofedLiveChannelCopyIsDroppedAndCounted(t *testing.T) {
	h := newHarness(t)
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })
	mallory, alice := newID(t), newID(t)
	m := wire.NewChannelMessage(h.space, wire.EndpointRef{ID: alice, Name: "alice"}, "team", wire.TextPart("x"))
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h.publishRaw(h.names.ChatSubject(mallory, "team"), data)
	await.True(t, settle, "the sender mismatch counted", func() bool {
		return bob.Stats().Terminated.Of(wire.ReasonSenderMismatch) == 1
	})
	if len(bob.rec.all()) != 0 {
		t.Fatal("bob surfaced a spoofed channel message")
	}
}

func TestReceiveDurableCopyAndLiveCopySurfaceOnce(t *testing.T) {
	h := newBareHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team"} })

	r, err := alice.Send(ctxT(t), "team", text("both ways"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the live copy", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	copyOf := func(id string) []byte {
		entries := h.chatMessages(t, "team")
		for _, m := range entries {
			if m.ID == id {
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("message %s not in CHAT", id)
		return nil
	}
	// The trusted reader hands the same message over on dlv_<bob>.
	h.publishRaw(h.names.DLVSubject(bob.ID()), copyOf(r.ID))
	await.True(t, settle, "the durable copy acked as a duplicate", func() bool {
		info := h.consumerInfo(h.names.DLVStream(), h.names.DLVConsumer(bob.ID()))
		return bob.Stats().Duplicates == 1 && info.NumAckPending == 0 && info.NumPending == 0
	})
	if n := len(bob.rec.withID(r.ID)); n != 1 {
		t.Fatalf("message surfaced %d times, want once", n)
	}

	// A durable copy of a message bob never saw live surfaces as durable, kind channel.
	missed := wire.NewChannelMessage(h.space, endpoint.Ref(alice.Endpoint), "team", wire.TextPart("missed live"))
	data, err := json.Marshal(missed)
	if err != nil {
		t.Fatal(err)
	}
	h.publishRaw(h.names.DLVSubject(bob.ID()), data)
	await.True(t, settle, "the durable copy", func() bool { return len(bob.rec.withID(missed.ID)) == 1 })
	if d := bob.rec.withID(missed.ID)[0]; d.Meta.Kind != endpoint.MetaChannel || !d.Meta.Durable || d.Meta.Channel != "team" {
		t.Fatalf("meta %+v, want a durable channel delivery on team", d.Meta)
	}
}

func TestReceiveDurableCopyThatIsNotAChannelMessageIsTerminated(t *testing.T) {
	h := newHarness(t)
	bob := h.connect("bob")
	alice := newID(t)
	dm, err := json.Marshal(wire.NewDirectMessage(h.space, wire.EndpointRef{ID: alice, Name: "alice"}, bob.ID(), wire.TextPart("x")))
	if err != nil {
		t.Fatal(err)
	}
	h.publishRaw(h.names.DLVSubject(bob.ID()), dm)
	await.True(t, settle, "the termination", func() bool { return bob.Stats().Terminated.Of(wire.ReasonMalformedJSON) == 1 })
	if len(bob.rec.all()) != 0 {
		t.Fatal("a unicast message surfaced from the durable path")
	}
}

// chatMessages reads every message on channel from CHAT.
func (h *harness) chatMessages(t *testing.T, channel string) []*wire.CotalMessage {
	t.Helper()
	s, err := h.js.Stream(ctxT(t), h.names.ChatStream())
	if err != nil {
		t.Fatal(err)
	}
	var out []*wire.CotalMessage
	for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
		raw, err := s.GetMsg(ctxT(t), seq)
		if err != nil {
			continue
		}
		if m, err := wire.DecodeMessage(raw.Data); err == nil && m.Channel == channel {
			out = append(out, m)
		}
	}
	return out
}
