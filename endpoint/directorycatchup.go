package endpoint

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A member that joins a shared directory whose watch already runs must not read a roster
// that has not yet caught up with what the bucket held when it joined: an Endpoint created
// right after others announced themselves would miss them. So each member's Loaded waits
// for the watch to have applied the bucket's last revision at its join (its frontier), or
// for a watch begun after the join to have delivered its initial values. A revision the
// watch will never deliver (a record that expired meanwhile) is waited for at most
// initialLoadWait.

// catchUp is one member's wait for the directory to reach its frontier.
type catchUp struct {
	frontier uint64
	joined   time.Time
	done     chan struct{}
}

// presenceFrontier is the presence bucket's last revision now, the frontier of a member
// joining a shared directory.
func (e *Endpoint) presenceFrontier(ctx context.Context) (uint64, error) {
	var frontier uint64
	err := retryRead(ctx, readAttempt, func(ctx context.Context) error {
		st, err := e.presenceKV.Status(ctx)
		if err != nil {
			return err
		}
		if s, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			frontier = s.StreamInfo().State.LastSeq
		}
		return nil
	})
	return frontier, err
}

// waitFor returns a channel closed once the directory has caught up with frontier for a
// member that joined at joined.
func (d *directory) waitFor(frontier uint64, joined time.Time) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &catchUp{frontier: frontier, joined: joined, done: make(chan struct{})}
	d.catchUps = append(d.catchUps, c)
	d.releaseLocked(time.Now())
	return c.done
}

// releaseLocked closes the waits that are over: the watch has delivered its initial values
// and then reached the frontier, began after the join, or has run initialLoadWait past it.
func (d *directory) releaseLocked(now time.Time) {
	kept := d.catchUps[:0]
	for _, c := range d.catchUps {
		if d.watching && (d.applied >= c.frontier || d.watchStart.After(c.joined) || now.Sub(c.joined) > initialLoadWait) {
			close(c.done)
			continue
		}
		kept = append(kept, c)
	}
	d.catchUps = kept
}

// releaseAll closes every wait, when the directory stops.
func (d *directory) releaseAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.catchUps {
		close(c.done)
	}
	d.catchUps = nil
}
