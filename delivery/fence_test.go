package delivery

import (
	"context"
	"sync"
	"testing"

	"github.com/cotal-go/cotal/internal/await"
)

func TestChangesWaitingForTheFenceShareOneHold(t *testing.T) {
	h := newHarness(t)
	r := h.svc.members
	const changes = 5
	var (
		mu      sync.Mutex
		cursors []uint64
		wg      sync.WaitGroup
	)
	// Hold the fence as the fan-out does while deciding recipients, and queue changes behind it.
	r.view.mu.Lock()
	for range changes {
		wg.Go(func() {
			err := r.underFence(context.Background(), func(cursor uint64) {
				mu.Lock()
				cursors = append(cursors, cursor)
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	await.True(t, waitFor, "every change waits in one batch", func() bool {
		r.fence.mu.Lock()
		defer r.fence.mu.Unlock()
		return r.fence.open != nil && len(r.fence.open.apply) == changes
	})
	_, seq := h.newAgent("alice", "team").publish("team")
	r.view.mu.Unlock()
	wg.Wait()

	if len(cursors) != changes {
		t.Fatalf("%d changes applied, want each of %d once", len(cursors), changes)
	}
	for _, c := range cursors {
		if c != seq {
			t.Fatalf("cursors = %v, want every one %d: the frontier read in the batch's one hold", cursors, seq)
		}
	}
	r.fence.mu.Lock()
	defer r.fence.mu.Unlock()
	if r.fence.open != nil {
		t.Fatal("the batch is still open after it was applied")
	}
}
