package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

func TestSendMulticastArrivesAsChannelDelivery(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Channels = []string{"team.backend"} })
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"team.backend"} })

	r, err := alice.Send(ctxT(t), "team.backend", text("hello"), endpoint.WithMentions("Bob"), endpoint.WithContextID("ctx-1"))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if r.Stream != h.names.ChatStream() || r.Seq == 0 || r.Duplicate {
		t.Fatalf("receipt %+v, want stored in %s", r, h.names.ChatStream())
	}
	await.True(t, settle, "bob's channel delivery", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	// bob's join is durable too, so its copy may come live or, when the live copy is late (a
	// loaded machine), from the backstop first; either is surfaced once.
	d := bob.rec.withID(r.ID)[0]
	if d.Meta.Kind != endpoint.MetaChannel || d.Meta.Channel != "team.backend" || d.Meta.Historical {
		t.Errorf("meta %+v, want a channel delivery on team.backend", d.Meta)
	}
	if d.Message.From.ID != alice.ID() || d.Message.ContextID != "ctx-1" || len(d.Message.Mentions) != 1 || d.Message.Mentions[0] != "bob" {
		t.Errorf("message %+v lost its sender, context or lowercased mention", d.Message)
	}
	await.True(t, settle, "alice's own echo counted", func() bool { return alice.Stats().OwnEchoes == 1 })
	if got := alice.rec.withID(r.ID); len(got) != 0 {
		t.Errorf("alice surfaced her own message %d times with EchoOwn off", len(got))
	}
}

func TestSendUnicastArrivesAsDM(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob")

	r, err := alice.SendDM(ctxT(t), bob.ID(), text("direct note"))
	if err != nil {
		t.Fatalf("send dm: %v", err)
	}
	if r.Stream != h.names.DMStream() {
		t.Errorf("receipt stream %s, want %s", r.Stream, h.names.DMStream())
	}
	await.True(t, settle, "bob's DM", func() bool { return len(bob.rec.withID(r.ID)) == 1 })
	if d := bob.rec.withID(r.ID)[0]; d.Meta.Kind != endpoint.MetaDM || d.Message.To != bob.ID() {
		t.Errorf("delivery %+v, want kind dm addressed to bob", d.Meta)
	}
	await.True(t, settle, "the DM acknowledged", func() bool {
		info := h.consumerInfo(h.names.DMStream(), h.names.DMConsumer(bob.ID()))
		return info.NumAckPending == 0 && info.NumPending == 0
	})
}

func TestSendAnycastReachesExactlyOneHolderOfTheRole(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	r1 := h.connect("reviewer-1", func(o *endpoint.Options) { o.Role = "reviewer" })
	r2 := h.connect("reviewer-2", func(o *endpoint.Options) { o.Role = "reviewer" })

	const n = 20
	ids := make([]string, n)
	for i := range ids {
		r, err := alice.SendAnycast(ctxT(t), "reviewer", text(fmt.Sprintf("task %d", i)))
		if err != nil {
			t.Fatalf("send anycast: %v", err)
		}
		ids[i] = r.ID
	}
	await.True(t, settle, "every task handled", func() bool { return len(r1.rec.all())+len(r2.rec.all()) >= n })
	for _, id := range ids {
		got := append(r1.rec.withID(id), r2.rec.withID(id)...)
		if len(got) != 1 {
			t.Fatalf("task %s reached %d reviewers, want exactly one", id, len(got))
		}
		if got[0].Meta.Kind != endpoint.MetaAnycast {
			t.Errorf("task %s arrived as %s, want anycast", id, got[0].Meta.Kind)
		}
	}
}

func TestSendRefusesWhatItMustNotPublish(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	tests := []struct {
		name string
		send func() error
		want error
	}{
		{"a wildcard channel is not a publish target", func() error {
			_, err := alice.Send(ctxT(t), "team.>", text("x"))
			return err
		}, wire.ErrInvalidChannel},
		{"a message signed as another instance is refused", func() error {
			m := wire.NewChannelMessage(h.space, wire.EndpointRef{ID: newID(t), Name: "mallory"}, "team", wire.TextPart("x"))
			_, err := alice.Publish(ctxT(t), m)
			return err
		}, endpoint.ErrNotOwnSender},
		{"a unicast target that is not a routing token is refused", func() error {
			_, err := alice.SendDM(ctxT(t), "bob.smith", text("x"))
			return err
		}, wire.ErrInvalidMessage},
		{"a message for another space is refused", func() error {
			m := wire.NewChannelMessage("other", endpoint.Ref(alice.Endpoint), "team", wire.TextPart("x"))
			_, err := alice.Publish(ctxT(t), m)
			return err
		}, wire.ErrInvalidMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.send(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSendSameIDTwiceStoresOnce(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	first, err := alice.Send(ctxT(t), "team", text("once"), endpoint.WithMessageID("fixed-id-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := alice.Send(ctxT(t), "team", text("once"), endpoint.WithMessageID("fixed-id-1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("first %+v, again %+v: want the resend reported as a duplicate of the same seq", first, again)
	}
}

func TestSendAsyncReceiptsAreSelectableAndInOrder(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Role = "reviewer" })
	bob := h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"bulk"} })
	for _, tc := range []struct {
		name string
		send func(i int) (*endpoint.PendingReceipt, error)
	}{
		{"channel", func(i int) (*endpoint.PendingReceipt, error) { return alice.SendAsync("bulk", text(fmt.Sprint(i))) }},
		{"dm", func(i int) (*endpoint.PendingReceipt, error) { return alice.SendDMAsync(bob.ID(), text(fmt.Sprint(i))) }},
		{"anycast", func(i int) (*endpoint.PendingReceipt, error) {
			return alice.SendAnycastAsync("reviewer", text(fmt.Sprint(i)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pending := make([]*endpoint.PendingReceipt, 50)
			for i := range pending {
				p, err := tc.send(i)
				if err != nil {
					t.Fatal(err)
				}
				pending[i] = p
			}
			var prev uint64
			for i, p := range pending {
				select {
				case <-p.Done():
				case <-ctxT(t).Done():
					t.Fatalf("receipt %d never done", i)
				}
				r := p.Receipt()
				if p.Err() != nil || r.ID != p.ID() || r.Seq <= prev {
					t.Fatalf("receipt %d is %+v, %v; want message %s stored after seq %d", i, r, p.Err(), p.ID(), prev)
				}
				if again, err := p.Wait(ctxT(t)); err != nil || again != r {
					t.Fatalf("Wait after Done = %+v, %v; want %+v", again, err, r)
				}
				prev = r.Seq
			}
		})
	}
	await.True(t, settle, "bob got the channel messages and DMs", func() bool { return len(bob.rec.all()) == 100 })
}

func TestSendAsyncRefusesAWrongTargetBeforeSending(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	if _, err := alice.SendDMAsync("bob", text("x")); !errors.Is(err, endpoint.ErrNotInstanceID) {
		t.Errorf("SendDMAsync to a name: %v, want ErrNotInstanceID", err)
	}
	if _, err := alice.SendAnycastAsync("two words", text("x")); !errors.Is(err, wire.ErrInvalidMessage) {
		t.Errorf("SendAnycastAsync to an invalid role: %v, want ErrInvalidMessage", err)
	}
	if got := alice.Stats().Published; got != 0 {
		t.Errorf("Published = %d after refused sends, want 0", got)
	}
}

func TestReceiveHandlerErrorRedeliversAndSuccessAcks(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	bob := h.connect("bob")
	var calls atomic.Int32
	bob.rec.setFail(func(endpoint.Delivery) error {
		if calls.Add(1) == 1 {
			return errors.New("transient failure")
		}
		return nil
	})
	r, err := alice.SendDM(ctxT(t), bob.ID(), text("retry me"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "the redelivery", func() bool { return len(bob.rec.withID(r.ID)) == 2 })
	got := bob.rec.withID(r.ID)
	if got[0].Meta.Redelivered || !got[1].Meta.Redelivered {
		t.Errorf("redelivered flags %v, %v; want false then true", got[0].Meta.Redelivered, got[1].Meta.Redelivered)
	}
	await.True(t, settle, "the ack after success", func() bool {
		info := h.consumerInfo(h.names.DMStream(), h.names.DMConsumer(bob.ID()))
		return info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream > 0
	})
	st := bob.Stats()
	if st.Naks != 1 || st.HandlerErrors != 1 || st.Redeliveries != 1 || st.Surfaced.DM != 1 {
		t.Errorf("stats %+v, want one nak, one handler error, one redelivery, one surfaced DM", st)
	}
}

func TestReceiveEchoOwnSurfacesTheInstancesOwnChannelMessages(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice", func(o *endpoint.Options) { o.Channels = []string{"team"}; o.EchoOwn = true })
	r, err := alice.Send(ctxT(t), "team", text("note to self"))
	if err != nil {
		t.Fatal(err)
	}
	await.True(t, settle, "alice's own message", func() bool { return len(alice.rec.withID(r.ID)) == 1 })
	if d := alice.rec.withID(r.ID)[0]; d.Meta.Kind != endpoint.MetaChannel || d.Message.From.ID != alice.ID() {
		t.Fatalf("echo %+v, want her own channel message", d.Meta)
	}
}

func TestCloseNaksTheCopiesPulledButNotSurfaced(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	var calls atomic.Int32
	entered := make(chan struct{})
	bob := h.connect("bob", func(o *endpoint.Options) {
		o.Handler = func(ctx context.Context, _ endpoint.Delivery) error {
			if calls.Add(1) == 1 {
				close(entered)
				<-ctx.Done() // the first copy is in the Handler when Close begins, and succeeds
			}
			return nil
		}
	})
	const sent = 5
	for i := range sent {
		if _, err := alice.SendDM(ctxT(t), bob.ID(), text(fmt.Sprintf("dm %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	stream, consumer := h.names.DMStream(), h.names.DMConsumer(bob.ID())
	await.True(t, settle, "every copy pulled by bob", func() bool {
		return h.consumerInfo(stream, consumer).NumAckPending == sent
	})
	<-entered
	if err := bob.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the Handler ran %d times, want once: nothing is surfaced once Close has begun", n)
	}
	// The ack wait is a minute: only naks have the copies redelivered within settle.
	again := h.connect("bob again", func(o *endpoint.Options) { o.ID = bob.ID() })
	await.True(t, settle, "the buffered copies redelivered to bob's next incarnation", func() bool {
		return len(again.rec.all()) == sent-1
	})
}

// Close settles every asynchronous send still awaiting its acknowledgement: each receipt is
// done when Close returns, stored or failed with ErrClosed, and a send after Close fails.
func TestCloseSettlesEveryPendingAsyncSend(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	h.connect("bob", func(o *endpoint.Options) { o.Channels = []string{"bulk"} })
	pending := make([]*endpoint.PendingReceipt, 500)
	for i := range pending {
		p, err := alice.SendAsync("bulk", text(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		pending[i] = p
	}
	if err := alice.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	stored, closed := 0, 0
	for i, p := range pending {
		select {
		case <-p.Done():
		default:
			t.Fatalf("receipt %d not done when Close returned", i)
		}
		switch err := p.Err(); {
		case err == nil:
			stored++
		case errors.Is(err, endpoint.ErrClosed):
			closed++
		default:
			t.Fatalf("receipt %d: %v, want stored or ErrClosed", i, err)
		}
	}
	t.Logf("%d stored, %d ended by Close", stored, closed)
	if _, err := alice.SendAsync("bulk", text("late")); !errors.Is(err, endpoint.ErrClosed) {
		t.Fatalf("SendAsync after Close: %v, want ErrClosed", err)
	}
}
