package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// fullLogEvery bounds how often the reader logs that one member's handoff is full.
const fullLogEvery = time.Minute

// dlvRoom keeps each member's DLV subject from evicting a copy the member has not acknowledged
// (issue 12 item 9). DLV_<s> keeps max_msgs_per_subject copies per member and discards the
// oldest (LAYOUT.md), acknowledged or not, so a member offline past that bound would lose its
// oldest owed copies with nothing reported. Refusing in the stream (discard new per subject)
// does not fit: acknowledged copies stay in a limits stream, so a member that had read its
// bound once would be refused for good. The reader therefore refuses the new copy itself
// when the member's unacknowledged copies fill the bound, and reports it as a gap.
//
// est is an upper bound of each member's unacknowledged copies: the count the member's
// dlv_<id> consumer reported at the last refresh plus every copy handed over since. Only the
// reader adds copies and a member's acks only lower the count, so while est is under the
// bound no copy can be evicted unread, and the consumer is asked only when est reaches it.
type dlvRoom struct {
	mu     sync.Mutex
	bound  int64 // DLV_<s>'s max_msgs_per_subject; 0 or less means no bound
	est    map[string]int64
	logged map[string]time.Time
}

// load reads the bound from DLV_<s> when the reader (re)starts and forgets the estimates.
func (r *dlvRoom) load(ctx context.Context, js jetstream.JetStream, names wire.Names) error {
	st, err := js.Stream(ctx, names.DLVStream())
	if err != nil {
		return fmt.Errorf("read the config of %s: %w", names.DLVStream(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bound, r.est = st.CachedInfo().Config.MaxMsgsPerSubject, map[string]int64{}
	if r.logged == nil {
		r.logged = map[string]time.Time{}
	}
	return nil
}

// admit reports whether one more copy for member fits in its DLV subject without evicting an
// unacknowledged one, and counts it if so. unacked asks the member's consumer; an error
// there admits the copy, as the stream alone would.
func (r *dlvRoom) admit(member string, unacked func() (int64, error)) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound <= 0 {
		return true, nil
	}
	if r.est[member] >= r.bound {
		n, err := unacked()
		if err != nil {
			return true, err
		}
		r.est[member] = n
	}
	if r.est[member] >= r.bound {
		return false, nil
	}
	r.est[member]++
	return true, nil
}

// shouldLog reports whether member's handoff is due a log line, at most once per
// fullLogEvery; the counters and gaps record every refused copy.
func (r *dlvRoom) shouldLog(member string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.logged[member]) < fullLogEvery {
		return false
	}
	r.logged[member] = now
	return true
}

// unackedCopies returns how many copies member's dlv_<id> consumer has not had acknowledged.
// The caller settles the reader's publishes in flight first, so none is missing from the count.
func (s *Service) unackedCopies(ctx context.Context, member string) (int64, error) {
	c, err := s.js.Consumer(ctx, s.names.DLVStream(), s.names.DLVConsumer(member))
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", s.names.DLVConsumer(member), err)
	}
	info := c.CachedInfo()
	return int64(info.NumPending) + int64(info.NumAckPending), nil
}
