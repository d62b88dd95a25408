package delivery

import (
	"context"
	"sync"
)

// fence runs the view changes that need the CHAT cursor, a join's or a leave's, under the join
// fence (doc.go) in batches: the changes that arrive while the fence is held by someone else
// share the next hold and one cursor read. Each change still reads its cursor and updates the
// view in one hold of memberView.mu, so the fence argument holds for each; batching only saves
// the fan-out, which waits on the same lock, one broker round trip per change.
type fence struct {
	mu   sync.Mutex  // a leaf, guards open
	open *fenceBatch // the batch still taking changes, nil when none waits
}

// fenceBatch is the changes of one hold of the fence.
type fenceBatch struct {
	apply []func(cursor uint64) // each called with memberView.mu held
	done  chan struct{}         // closed once every change is applied, or err is set
	err   error
}

// underFence calls apply with the CHAT cursor while holding the fence, together with every change
// that joins the same batch, and returns once it has been called or the cursor could not be
// read. The first change of a batch leads it: it waits for the fence, closes the batch, reads
// the cursor with its own ctx and applies the batch; the others wait for it.
func (r *registry) underFence(ctx context.Context, apply func(cursor uint64)) error {
	f := &r.fence
	f.mu.Lock()
	if b := f.open; b != nil {
		b.apply = append(b.apply, apply)
		f.mu.Unlock()
		<-b.done
		return b.err
	}
	b := &fenceBatch{apply: []func(uint64){apply}, done: make(chan struct{})}
	f.open = b
	f.mu.Unlock()

	r.view.mu.Lock()
	f.mu.Lock()
	f.open = nil // later changes form the next batch, behind this hold
	f.mu.Unlock()
	cursor, err := r.chatLastSeq(ctx)
	if err == nil {
		for _, a := range b.apply {
			a(cursor)
		}
	}
	r.view.mu.Unlock()
	b.err = err
	close(b.done)
	return err
}
