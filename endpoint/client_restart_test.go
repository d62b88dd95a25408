package endpoint_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// surfacedIDs records the ids a Handler surfaced, by id.
type surfacedIDs struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *surfacedIDs) handle(_ context.Context, d endpoint.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[d.Message.ID]++
	return nil
}

func (s *surfacedIDs) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

func startPersistentMesh(t *testing.T, dir, listen string) *space.Mesh {
	t.Helper()
	m, err := space.Start(ctxT(t), space.Options{Dir: dir, Listen: listen, Sync: "interval"})
	if err != nil {
		t.Fatalf("start mesh: %v", err)
	}
	return m
}

// A whole-mesh restart on the same data directory under endpoints connected over TCP: each
// reconnects and gets its subscriptions, consumers and presence back, and a DM sent while the
// mesh was down is stored once it is back and surfaced.
func TestEndpointsRecoverFromAMeshRestart(t *testing.T) {
	dir := t.TempDir()
	m := startPersistentMesh(t, dir, "127.0.0.1:0")
	link, err := m.Link("main")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := wire.ParseLink(link)
	listen := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
	connect := func(name string, h endpoint.Handler) *endpoint.Endpoint {
		cred, err := m.Mint(ctxT(t), provisioner.MintRequest{Space: "main", Name: name, Profile: provisioner.ProfileAgent,
			Grants: provisioner.Grants{Subscribe: []string{"team"}, AllowPublish: []string{"team"}}})
		if err != nil {
			t.Fatal(err)
		}
		creds, _ := cred.Creds()
		ep, err := endpoint.Connect(ctxT(t), endpoint.Options{Link: link, Creds: creds, Handler: h,
			Channels: []string{"team"}, MaxReconnects: 600, ReconnectWait: 50 * time.Millisecond,
			Heartbeat: 200 * time.Millisecond, LivenessWindow: 2 * time.Second})
		if err != nil {
			t.Fatalf("connect %s: %v", name, err)
		}
		t.Cleanup(func() { _ = ep.Close(context.Background()) })
		return ep
	}
	got := &surfacedIDs{ids: map[string]int{}}
	alice := connect("alice", func(context.Context, endpoint.Delivery) error { return nil })
	bob := connect("bob", got.handle)

	if err := m.Close(ctxT(t)); err != nil {
		t.Fatalf("stop mesh: %v", err)
	}
	type sent struct {
		r   endpoint.Receipt
		err error
	}
	during := make(chan sent, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := alice.SendDM(ctx, bob.ID(), text("sent while the mesh was down"))
		during <- sent{r, err}
	}()
	m = startPersistentMesh(t, dir, listen)
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	// The publish is retried with the same Nats-Msg-Id until it is stored, so a send that
	// started while the mesh was down completes once it is back, and is surfaced once.
	d := <-during
	if d.err != nil {
		t.Fatalf("a DM sent during the outage was not stored after the restart: %v", d.err)
	}
	await.True(t, settle, "the DM sent during the outage", func() bool { return got.count(d.r.ID) == 1 })
	dm, err := alice.SendDM(ctxT(t), bob.ID(), text("after the restart"))
	if err != nil {
		t.Fatalf("DM after restart: %v", err)
	}
	live, err := alice.Send(ctxT(t), "team", text("channel after the restart"))
	if err != nil {
		t.Fatalf("multicast after restart: %v", err)
	}
	await.True(t, settle, "the DM and the channel message after the restart", func() bool {
		return got.count(dm.ID) == 1 && got.count(live.ID) == 1
	})
	await.True(t, settle, "alice online in bob's roster again", func() bool {
		p, ok := bob.Roster().Peer(alice.ID())
		return ok && p.Online
	})
}
