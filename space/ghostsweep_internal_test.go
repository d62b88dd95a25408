package space

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// A DM the last puller of dm_<id> held when its connection ended reaches the one Endpoint of
// its owner that bound before the mesh gave dm_ back, without waiting for the ack wait: the
// give-back sweeps past a single Endpoint of the owner, whose dedup absorbs a copy it gets
// twice. The order the mesh meets under load (the end read, the Endpoint bound, then the
// give-back) is forced here: the connection is cut by the server, which gives nothing back,
// and the give-back is then run as the end of a connection closed by its client runs it.
func TestAGiveBackReachesTheOneEndpointThatBoundMeanwhile(t *testing.T) {
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	bob := testMint(t, m, "bob", provisioner.ProfileAgent, provisioner.Grants{})
	d := durableKey{rt.names.DMStream(), rt.names.DMConsumer(bob.ID)}

	js := agentJS(t, m, bob)
	cons, err := js.Consumer(context.Background(), d.stream, d.consumer)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}, 1)
	cc, err := cons.Consume(func(jetstream.Msg) { held <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	sender, err := m.Endpoint(context.Background(), AgentSpec{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sender.SendDM(context.Background(), bob.ID, []wire.Part{wire.TextPart("owed")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(testWait):
		t.Fatal("the DM did not reach the raw client")
	}
	cid, err := js.Conn().GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.broker.Server().DisconnectClientByID(cid); err != nil {
		t.Fatal(err)
	}
	await.True(t, testWait, "the cut connection's end read", func() bool { return rt.pulls.pullerCount(d) == 0 })

	var got atomic.Int64
	connectAs(t, m, bob, func(context.Context, endpoint.Delivery) error { got.Add(1); return nil })
	await.True(t, testWait, "bob's Endpoint pulls dm_", func() bool { return rt.pulls.pullerCount(d) == 1 })
	m.ghostWork(rt, nil, []durableKey{d})
	// The ack wait is a minute; what is given back comes within a pull.
	await.True(t, 10*time.Second, "the DM reached bob's Endpoint", func() bool { return got.Load() == 1 })
}

// connectAs is an Endpoint of cred in process, with h as its Handler.
func connectAs(t *testing.T, m *Mesh, cred *provisioner.Credential, h endpoint.Handler) *endpoint.Endpoint {
	t.Helper()
	creds, err := cred.Creds()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	e, err := endpoint.Connect(ctx, endpoint.Options{InProcess: m.InProcess(), Space: "main", Creds: creds, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}
