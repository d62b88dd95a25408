package space_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/space/spacetest"
	"github.com/cotal-go/cotal/wire"
)

// A pull followed at once by a drain leaves, more often than not, a request the consumer keeps
// to its expiry, tracked as interest in the storage account's response subject rather than in
// the requester's inbox (docs/durable.md "Pull requests nobody holds"). These tests drain
// ghostDrains times, so that on a broker that keeps such requests the copy sent next is handed
// to one of them all but always (each drain leaves one about 4 times in 5).
const ghostDrains = 3

// ghostBound is how soon an owed copy must reach the next live consumer after it binds: the
// 2 s the mesh promises, with room for a loaded machine, and far below both the 30 s a
// drained pull may wait and the 60 s ack wait a copy handed to it would wait.
const ghostBound = 5 * time.Second

// pullAndDrain does what the reference client's stop and nats.go's Consume followed by
// nc.Drain() do: pull stream/consumer with cred, then drain the connection at once, and wait
// for it to close.
func pullAndDrain(t *testing.T, m *space.Mesh, cred *provisioner.Credential, stream, consumer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	closed := make(chan struct{})
	nc := connect(t, m, cred, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The mesh makes svc_ again once no connection pulls it; a bind in that moment is
	// asked again, as an Endpoint does.
	var cons jetstream.Consumer
	await.Check(t, 10*time.Second, await.Interval, func() (err error) {
		cons, err = js.Consumer(ctx, stream, consumer)
		return err
	})
	if _, err := cons.Consume(func(jetstream.Msg) {}); err != nil {
		t.Fatalf("consume %s: %v", consumer, err)
	}
	if err := nc.Drain(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the drained connection did not close")
	}
}

// bindCounting connects cred's Endpoint with a Handler that counts what reaches it.
func bindCounting(t *testing.T, m *space.Mesh, cred *provisioner.Credential, got *atomic.Int64) *endpoint.Endpoint {
	t.Helper()
	creds, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds,
		Name: cred.Name, Handler: func(context.Context, endpoint.Delivery) error {
			got.Add(1)
			return nil
		}})
	if err != nil {
		t.Fatalf("connect %s: %v", cred.Name, err)
	}
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	return ep
}

// sender is an Endpoint that sends the owed copies.
func sender(t *testing.T, m *space.Mesh, grants ...provisioner.Grants) *endpoint.Endpoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := space.AgentSpec{Name: "alice"}
	for _, g := range grants {
		spec.Grants = g
	}
	ep, err := m.Endpoint(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// arrivesWithin fails t unless got reaches want within ghostBound of now, and logs how long
// it took.
func arrivesWithin(t *testing.T, what string, got *atomic.Int64, want int64) {
	t.Helper()
	start := time.Now()
	await.True(t, ghostBound, what, func() bool { return got.Load() >= want })
	t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
}

func TestADMOwedAfterADrainReachesTheNextEndpoint(t *testing.T) {
	m := spacetest.New(t)
	n := wire.NewNames("main")
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{})
	for range ghostDrains {
		pullAndDrain(t, m, bob, n.DMStream(), n.DMConsumer(bob.ID))
	}
	alice := sender(t, m)
	if _, err := alice.SendDM(context.Background(), bob.ID, []wire.Part{wire.TextPart("owed")}); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	bindCounting(t, m, bob, &got)
	arrivesWithin(t, "the DM reached bob's Endpoint", &got, 1)
}

func TestADurableCopyOwedAfterADrainReachesTheNextEndpoint(t *testing.T) {
	m := spacetest.New(t)
	n := wire.NewNames("main")
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{Subscribe: []string{"ops"}})
	joinDurablyAndLeave(context.Background(), t, m, bob, "ops")
	for range ghostDrains {
		pullAndDrain(t, m, bob, n.DLVStream(), n.DLVConsumer(bob.ID))
	}
	alice := sender(t, m, provisioner.Grants{AllowPublish: []string{"ops"}})
	if _, err := alice.Send(context.Background(), "ops", []wire.Part{wire.TextPart("owed")}); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	bindCounting(t, m, bob, &got)
	arrivesWithin(t, "the durable copy reached bob's Endpoint", &got, 1)
}

// An anycast sent while no holder of the role is online stays pending (`cotal send
// svc:reviewer`, then `cotal pending`), even right after a holder drained, and reaches the
// next holder when it binds.
func TestAnAnycastOwedAfterADrainStaysPending(t *testing.T) {
	m := spacetest.New(t)
	n := wire.NewNames("main")
	rev := mint(t, m, "rev", provisioner.ProfileAgent, provisioner.Grants{Role: "reviewer"})
	for range ghostDrains {
		pullAndDrain(t, m, rev, n.TaskStream(), n.SvcConsumer("reviewer"))
	}
	alice := sender(t, m)
	if _, err := alice.SendAnycast(context.Background(), "reviewer", []wire.Part{wire.TextPart("owed")}); err != nil {
		t.Fatal(err)
	}
	await.Check(t, ghostBound, await.Interval, func() error {
		b, err := m.Pending(context.Background(), "main", rev.ID)
		if err != nil {
			return err
		}
		if b.Anycast == nil || b.Anycast.Pending != 1 || b.Anycast.AckPending != 0 {
			return errors.New("the anycast is not pending: " + pendingText(b.Anycast))
		}
		return nil
	})
	var got atomic.Int64
	bindCounting(t, m, rev, &got)
	arrivesWithin(t, "the anycast reached the reviewer's Endpoint", &got, 1)
}

// A DM owed to an Endpoint that closed reaches its next Endpoint.
func TestADMOwedAfterAnEndpointClosesReachesTheNextOne(t *testing.T) {
	m := spacetest.New(t)
	bob := mint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{})
	for range ghostDrains {
		var none atomic.Int64
		ep := bindCounting(t, m, bob, &none)
		if err := ep.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	alice := sender(t, m)
	if _, err := alice.SendDM(context.Background(), bob.ID, []wire.Part{wire.TextPart("owed")}); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	bindCounting(t, m, bob, &got)
	arrivesWithin(t, "the DM reached bob's next Endpoint", &got, 1)
}

func pendingText(b *space.Backlog) string {
	if b == nil {
		return "no anycast backlog"
	}
	return fmt.Sprintf("%d pending, %d delivered and not acknowledged", b.Pending, b.AckPending)
}
