package space_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// TestPerTestMeshIsReadyAtStartAndLeavesNothingAtClose holds the per-test mesh to what the
// fast start must not trade away: when Start returns, a DM between two freshly minted agents
// goes through (streams, consumers and authentication in place), and Close leaves no
// goroutine and no temporary data directory behind.
func TestPerTestMeshIsReadyAtStartAndLeavesNothingAtClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	dir := m.Dir()
	inbox := make(chan endpoint.Delivery, 1)
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice"})
	if err != nil {
		t.Fatalf("connect alice: %v", err)
	}
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Endpoint: endpoint.Options{Handler: queue(inbox)}})
	if err != nil {
		t.Fatalf("connect bob: %v", err)
	}
	if _, err := alice.SendDM(ctx, bob.ID(), []wire.Part{wire.TextPart("ready")}); err != nil {
		t.Fatalf("DM right after start: %v", err)
	}
	select {
	case d := <-inbox:
		if d.Message.Parts[0].Text != "ready" {
			t.Fatalf("bob got %q; want %q", d.Message.Parts[0].Text, "ready")
		}
	case <-ctx.Done():
		t.Fatal("bob never received the DM sent right after start")
	}
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary data directory %s outlived Close (stat: %v)", dir, err)
	}
}

// TestMemoryMeshOnAKeptStoreCreatesItsAgentsConsumers starts a memory mesh twice on one data
// directory: the second broker is fresh, so Start skips listing consumers, yet the agent
// minted in the first run must find its bind-only consumers in place when Start returns.
func TestMemoryMeshOnAKeptStoreCreatesItsAgentsConsumers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, n := t.TempDir(), wire.NewNames("main")
	opts := space.Options{Dir: dir, Memory: true}
	first, err := space.Start(ctx, opts)
	if err != nil {
		t.Fatalf("first start: %v", err)
	}
	alice := mint(t, first, "alice", provisioner.ProfileAgent, provisioner.Grants{})
	if err := first.Close(ctx); err != nil {
		t.Fatalf("close the first mesh: %v", err)
	}
	second, err := space.Start(ctx, opts)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	t.Cleanup(func() { _ = second.Close(context.Background()) })
	js := newPeer(t, second, alice).jetStream(t)
	for _, c := range n.InstanceConsumerSpecs(alice.ID, "", 0) {
		if _, err := js.Consumer(ctx, c.Stream, c.Name); err != nil {
			t.Errorf("consumer %s on %s after the second start: %v", c.Name, c.Stream, err)
		}
	}
}

// queue is a Handler that hands each delivery to in.
func queue(in chan<- endpoint.Delivery) endpoint.Handler {
	return func(ctx context.Context, d endpoint.Delivery) error {
		select {
		case in <- d:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
