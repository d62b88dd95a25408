package chaos_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
)

// TestStartingAndClosingMeshesLeaksNothing starts and closes tier.leakMeshes meshes, each with
// two endpoints that exchange a DM, and requires that nothing outlives them: no goroutine
// (goleak), no broker connection after an Endpoint closes, no file descriptor. It is not
// parallel, so that goleak sees only its own goroutines.
func TestStartingAndClosingMeshesLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fds := openFDs(t)
	start := time.Now()
	for i := range tier.leakMeshes {
		if err := meshLifecycle(i); err != nil {
			t.Fatalf("mesh %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	leaked := openFDs(t) - fds
	record(t, fmt.Sprintf("leaks: %d meshes started and closed", tier.leakMeshes), fmt.Sprintf(
		"goroutines left: checked by goleak; file descriptors left: %d; %v per mesh with two endpoints and a DM",
		leaked, (elapsed/time.Duration(tier.leakMeshes)).Round(time.Millisecond)))
	if leaked > 0 {
		t.Errorf("%d file descriptors more after closing %d meshes", leaked, tier.leakMeshes)
	}
}

// meshLifecycle starts a mesh, connects two endpoints, sends a DM, closes one endpoint and
// checks that its connection is gone from the broker, then closes the mesh.
func meshLifecycle(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := space.Start(ctx, space.Options{Memory: true})
	if err != nil {
		return err
	}
	defer m.Close(ctx)
	seen := newSink()
	bob, err := m.Endpoint(ctx, space.AgentSpec{Name: "bob", Endpoint: endpoint.Options{Handler: seen.handler("bob", "bob")}})
	if err != nil {
		return err
	}
	clients := m.Broker().Server().NumClients()
	alice, err := m.Endpoint(ctx, space.AgentSpec{Name: "alice", Grants: provisioner.Grants{AllowPublish: []string{"x"}}})
	if err != nil {
		return err
	}
	r, err := alice.SendDM(ctx, bob.ID(), text(fmt.Sprintf("mesh %d", i)))
	if err != nil {
		return err
	}
	if !await.Until(30*time.Second, func() bool { return len(seen.metas(r.ID)) == 1 }) {
		return fmt.Errorf("the DM did not surface")
	}
	if err := alice.Close(ctx); err != nil {
		return fmt.Errorf("close alice: %w", err)
	}
	if !await.Until(10*time.Second, func() bool { return m.Broker().Server().NumClients() == clients }) {
		return fmt.Errorf("the broker holds %d connections after alice closed, want %d", m.Broker().Server().NumClients(), clients)
	}
	return m.Close(ctx)
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count file descriptors: %v", err)
	}
	return len(entries)
}
