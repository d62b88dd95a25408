package endpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/wire"
)

func TestControlRequestReachesServeAndReturnsItsReply(t *testing.T) {
	h := newHarness(t)
	alice := h.connect("alice")
	svc := h.connect("svc")
	var from atomic.Value
	stop, err := svc.Serve("echo", func(_ context.Context, req *wire.ControlRequest) (any, error) {
		from.Store(req.From.ID)
		if req.Op == "fail" {
			return nil, errors.New("op \"fail\" failed on purpose")
		}
		return map[string]any{"op": req.Op, "args": req.Args}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	r, err := alice.Request(ctxT(t), "echo", "ping", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Op   string         `json:"op"`
		Args map[string]int `json:"args"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil || data.Op != "ping" || data.Args["n"] != 1 || from.Load() != alice.ID() {
		t.Fatalf("reply %s (from %v), want the echo of ping from alice", r.Data, from.Load())
	}
	if r, err := alice.Request(ctxT(t), "echo", "fail", nil); !errors.Is(err, wire.ErrControlRefused) || r == nil || r.OK {
		t.Fatalf("failing op: reply %+v, err %v; want ok false wrapped in ErrControlRefused", r, err)
	}
	if _, err := alice.Request(ctxT(t), "nobody", "ping", nil); !errors.Is(err, endpoint.ErrNoResponders) {
		t.Fatalf("unserved service: %v, want ErrNoResponders", err)
	}
}

func TestControlServeRefusesSpoofedSendersAndForeignReplySubjects(t *testing.T) {
	h := newHarness(t)
	svc := h.connect("svc")
	var calls atomic.Int32
	stop, err := svc.Serve("echo", func(context.Context, *wire.ControlRequest) (any, error) {
		calls.Add(1)
		return "pong", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	mallory, alice := newID(t), newID(t)
	req, err := wire.NewControlRequest("ping", nil, wire.EndpointRef{ID: alice, Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// ask publishes a request on subject with reply subject reply and returns the reply.
	ask := func(t *testing.T, subject string) *wire.ControlReply {
		t.Helper()
		reply := wire.ControlReplySubject(subject)
		sub, err := h.nc.SubscribeSync(reply)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := h.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: data}); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.DecodeControlReply(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("a request signed as another sender gets sender-mismatch", func(t *testing.T) {
		if r := ask(t, h.names.CtlSubject("echo", mallory)); r.OK || r.Error != wire.ReasonSenderMismatch {
			t.Fatalf("reply %+v, want ok false with sender-mismatch", r)
		}
		if calls.Load() != 0 {
			t.Fatal("the handler ran for a spoofed request")
		}
	})
	t.Run("a reply subject outside the request's subtree gets no answer", func(t *testing.T) {
		subject := h.names.CtlSubject("echo", alice)
		foreign := []string{h.names.PresenceKVSubject(alice), h.nc.NewInbox(), subject + ".reply"}
		var subs []*nats.Subscription
		for _, reply := range foreign {
			sub, err := h.nc.SubscribeSync(reply)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			subs = append(subs, sub)
			if err := h.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: data}); err != nil {
				t.Fatal(err)
			}
		}
		// The server handles requests in order and its replies arrive in order, so once a
		// valid request is answered, any answer to the earlier ones would be queued already.
		if r := ask(t, subject); !r.OK {
			t.Fatalf("valid request refused: %+v", r)
		}
		for i, sub := range subs {
			if n, _, _ := sub.Pending(); n != 0 {
				t.Errorf("the server answered onto %s", foreign[i])
			}
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("the handler ran %d times, want once for the valid request", n)
		}
	})
}
