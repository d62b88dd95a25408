package space_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cotal-go/cotal/endpoint"
	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/space"
	"github.com/cotal-go/cotal/wire"
)

// backstopNode is the node that runs space main's backstop as node sees the lease, or "".
func backstopNode(ctx context.Context, node *space.Mesh) string {
	st, err := node.Status(ctx)
	if err != nil || st.Cluster == nil {
		return ""
	}
	for _, b := range st.Cluster.Backstops {
		if b.Space == "main" {
			return b.Node
		}
	}
	return ""
}

// TestTheBackstopSurvivesItsNode covers docs/durable.md "The cluster lease": the node that runs
// the backstop (usually the key-store node) has its server die in the middle of a burst to a
// durable channel whose member is offline, as in a kill -9, so its lease is neither renewed nor
// released; another node takes the lease once it expires and resumes from the stored cursors;
// the member, back through a surviving node, gets every acknowledged message exactly once, each
// through the backstop. A message the dead node's fan-out had in hand is redelivered to the new
// holder after the fanout consumer's AckWait (wire.DefaultAckWait, 60 s), so the test lasts
// that long when the stop catches one.
func TestTheBackstopSurvivesItsNode(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, true)
	// A CHAT message the dead node's fan-out had taken but not acknowledged comes back to the
	// new holder only after the fanout consumer's AckWait.
	ctx, cancel := context.WithTimeout(context.Background(), wire.DefaultAckWait+60*time.Second)
	defer cancel()
	if info, err := os.Stat(filepath.Join(nodes[0].Dir(), space.BackstopFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the backstop file: %v %v, want mode 0600", info, err)
	}
	// The key-store node usually takes the lease first, but one whose start waited on a lost
	// answer leaves it to another: the test stops whichever node holds it, and the agents
	// use the other two.
	var first string
	await.True(t, 10*time.Second, "every node sees the same backstop holder", func() bool {
		first = backstopNode(ctx, nodes[0])
		return first != "" && backstopNode(ctx, nodes[1]) == first && backstopNode(ctx, nodes[2]) == first
	})
	names := []string{"node0", "node1", "node2"} // startCluster's server names
	dead := slices.Index(names, first)
	if dead < 0 {
		t.Fatalf("the backstop runs on %q, not one of the three nodes", first)
	}
	left := slices.DeleteFunc([]int{0, 1, 2}, func(i int) bool { return i == dead })

	g := provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}}
	alice := mint(t, nodes[0], "alice", provisioner.ProfileAgent, g)
	bob := mint(t, nodes[0], "bob", provisioner.ProfileAgent, g)
	a := joinAt(ctx, t, nodes[left[0]], alice, make(chan endpoint.Delivery, 256), "general")
	b := joinAt(ctx, t, nodes[left[1]], bob, make(chan endpoint.Delivery, 256), "general")
	if res, ok := b.JoinStatus("general"); !ok || res.State != endpoint.JoinedDurable {
		t.Fatalf("bob's durable join: %+v", res)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// acked are the ids JetStream acknowledged: each must reach bob exactly once. A send
	// refused while node 0 leaves is sent again as a new message; the refused one may still
	// have been stored, and then it too must reach bob at most once.
	var mu sync.Mutex
	acked := map[string]bool{}
	send := func(i int) {
		for {
			r, err := a.Send(ctx, "general", []wire.Part{wire.TextPart(fmt.Sprint("burst ", i))})
			if err == nil {
				mu.Lock()
				acked[r.ID] = true
				mu.Unlock()
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond) // pacing: a refused send is sent again after a pause, not in a tight loop
		}
	}
	for i := range 20 {
		send(i)
	}
	stopped := time.Now()
	var closing sync.WaitGroup
	closing.Go(func() {
		if err := nodes[dead].Broker().Shutdown(ctx); err != nil {
			t.Errorf("stop %s's server: %v", first, err)
		}
	})
	for i := 20; i < 40; i++ {
		send(i)
	}
	var holder string
	await.True(t, 25*time.Second, "another node takes the backstop", func() bool {
		holder = backstopNode(ctx, nodes[left[0]])
		return holder != "" && holder != first
	})
	t.Logf("the backstop moved from %s to %s %v after %s's server began to stop", first, holder, time.Since(stopped), first)
	closing.Wait()
	survivor := nodes[left[0]]
	if names[left[1]] == holder {
		survivor = nodes[left[1]]
	}
	await.Check(t, 20*time.Second, 100*time.Millisecond, func() error {
		for _, h := range survivor.Health() {
			if h.Name == "space main delivery" {
				return h.Err
			}
		}
		return fmt.Errorf("%s reports no delivery health: %+v", holder, survivor.Health())
	})
	for i := 40; i < 60; i++ {
		send(i)
	}

	got := map[string]int{}
	back := make(chan endpoint.Delivery, 256)
	joinAt(ctx, t, nodes[left[1]], bob, back) // no join, so no backfill: every copy is a durable one
	missing := func() int {
		n := 0
		for id := range acked {
			if got[id] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		select {
		case d := <-back:
			if !d.Meta.Durable {
				t.Errorf("%q reached bob on another path than the backstop: %+v", d.Message.Parts[0].Text, d.Meta)
			}
			got[d.Message.ID]++
		case <-ctx.Done():
			t.Fatalf("%d of %d acknowledged messages never reached bob", missing(), len(acked))
		}
	}
	// Anything surfacing twice would do so within a redelivery or two.
	quiet := time.After(3 * time.Second)
	for done := false; !done; {
		select {
		case d := <-back:
			got[d.Message.ID]++
		case <-quiet:
			done = true
		}
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("message %s surfaced %d times", id, n)
		}
	}
	t.Logf("bob got %d messages, %d acknowledged to alice", len(got), len(acked))
}
