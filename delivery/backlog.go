package delivery

import (
	"context"
	"sync"
	"time"

	"github.com/cotal-go/cotal/wire"
)

// maxMemberBacklog bounds one member's INBOX entries written but not yet taken by the trusted
// reader. INBOX keeps 1000 entries per member subject and discards the oldest (docs/storage.md
// "Streams"), so a member's unread entries beyond that would be evicted silently. The bound
// leaves room for the batch the reader is settling; past it the fan-out waits, and the pressure
// moves to CHAT, where an eviction is detected as a gap and reported (docs/durable.md "Gaps and
// losses").
const maxMemberBacklog = 1000 - pullBatch - 64

// backlogResync is how long the fan-out waits for the reader before it asks the server whether
// the reader has caught up, which clears any drift of the in-memory counts.
const backlogResync = 250 * time.Millisecond

// backlog counts, per member, the INBOX entries the fan-out published and the reader has not
// taken yet.
type backlog struct {
	mu      sync.Mutex
	n       map[string]int
	drained chan struct{} // signalled, without blocking, after the reader takes entries
}

func newBacklog() *backlog { return &backlog{n: map[string]int{}, drained: make(chan struct{}, 1)} }

// taken records the reader's first delivery of one of member's entries.
func (b *backlog) taken(member string) {
	b.mu.Lock()
	if b.n[member]--; b.n[member] <= 0 {
		delete(b.n, member)
	}
	b.mu.Unlock()
	select {
	case b.drained <- struct{}{}:
	default:
	}
}

// tryReserve counts one more entry for each target and reports true, unless a target is at
// the bound.
func (b *backlog) tryReserve(targets []recipient) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range targets {
		if b.n[t.id] >= maxMemberBacklog {
			return false
		}
	}
	for _, t := range targets {
		b.n[t.id]++
	}
	return true
}

func (b *backlog) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.n)
}

// reserveInbox waits until every target has room under maxMemberBacklog, then counts the
// entries about to be published.
func (s *Service) reserveInbox(ctx context.Context, targets []recipient) error {
	if len(targets) == 0 || s.backlog.tryReserve(targets) {
		return nil
	}
	t := time.NewTimer(backlogResync)
	defer t.Stop()
	for !s.backlog.tryReserve(targets) {
		select {
		case <-s.backlog.drained:
		case <-t.C:
			s.resyncBacklog(ctx)
			t.Reset(backlogResync)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// resyncBacklog clears the counts when the server says the reader has taken every entry; the
// counts drift when a publish fails after being counted, or across a reader restart.
func (s *Service) resyncBacklog(ctx context.Context) {
	c, err := s.js.Consumer(ctx, s.names.InboxStream(), wire.ReaderConsumer)
	if err != nil {
		s.log.Warn("could not read the reader's backlog", "err", err)
		return
	}
	if c.CachedInfo().NumPending == 0 {
		s.backlog.reset()
	}
}
