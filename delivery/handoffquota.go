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

// handoffQuota keeps each member's DLV subject from evicting a copy the member has not acknowledged
// (docs/durable.md "DLV hand-over"). DLV_<s> keeps max_msgs_per_subject copies per member and
// discards the oldest (docs/storage.md "Streams"), acknowledged or not, so a member offline past
// that bound would lose its oldest owed copies with nothing reported. Refusing in the stream
// (discard new per subject) does not fit: acknowledged copies stay in a limits stream, so a
// member that had read its bound once would be refused for good. The fan-out and the reader
// therefore refuse the new copy themselves when the member's unacknowledged copies fill the
// bound, and report it as a gap.
//
// est is an upper bound of each member's unacknowledged copies: the count at the last refresh
// plus every copy admitted since. Only the backstop adds copies and a member's acks only
// lower the count, so while est is under the bound no copy can be evicted unread, and the
// consumer is asked only when est reaches it, or for a member with no estimate yet (after a
// start, whose earlier copies only the consumer knows).
//
// The consumer's num_pending cannot be the count on its own: the server raises it when the
// stream signals the consumer, asynchronously after the PubAck, so copies handed over just
// before the question are missing from it. undelivered keeps the stream sequence of every
// copy handed over past the consumer's last delivered sequence, and inflight counts the
// copies admitted whose publish has not settled, which both loops may have in flight for one
// member; the count adds them.
type handoffQuota struct {
	mu          sync.Mutex
	bound       int64 // DLV_<s>'s max_msgs_per_subject; 0 or less means no bound
	est         map[string]int64
	inflight    map[string]int64
	undelivered map[string][]uint64
	logged      map[string]time.Time
}

// handoffState is what a member's dlv_<id> consumer reports of its copies.
type handoffState struct {
	pending    int64  // num_pending, possibly behind the last handoffs
	ackPending int64  // delivered, not yet acknowledged
	delivered  uint64 // the stream sequence of the last copy delivered
}

// load reads the bound from DLV_<s>; each loop that hands copies over calls it when it
// (re)starts. The estimates stay: they remain upper bounds across a loop's restart.
func (r *handoffQuota) load(ctx context.Context, js jetstream.JetStream, names wire.Names) error {
	st, err := js.Stream(ctx, names.DLVStream())
	if err != nil {
		return fmt.Errorf("read the config of %s: %w", names.DLVStream(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bound = st.CachedInfo().Config.MaxMsgsPerSubject
	if r.est == nil {
		r.est, r.inflight, r.undelivered = map[string]int64{}, map[string]int64{}, map[string][]uint64{}
		r.logged = map[string]time.Time{}
	}
	return nil
}

// settled records that an admitted copy for member was stored at stream sequence seq, or,
// with seq 0, that its publish failed.
func (r *handoffQuota) settled(member string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound <= 0 {
		return
	}
	if r.inflight[member]--; r.inflight[member] <= 0 {
		delete(r.inflight, member)
	}
	if seq > 0 {
		r.undelivered[member] = append(r.undelivered[member], seq)
	}
}

// admit reports whether one more copy for member fits in its DLV subject without evicting an
// unacknowledged one, and counts it if so; the caller then reports how its publish settled.
// state asks the member's consumer; an error there admits the copy, as the stream alone
// would.
func (r *handoffQuota) admit(member string, state func() (handoffState, error)) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound <= 0 {
		return true, nil
	}
	if est, ok := r.est[member]; !ok || est >= r.bound {
		r.mu.Unlock()
		st, err := state()
		r.mu.Lock()
		if err != nil {
			r.inflight[member]++ // est stays as it was, so the next copy asks again
			return true, err
		}
		r.est[member] = r.unacked(member, st)
	}
	if r.est[member] >= r.bound {
		return false, nil
	}
	r.est[member]++
	r.inflight[member]++
	return true, nil
}

// unacked counts member's unacknowledged copies from its consumer's state, the copies handed
// over that the consumer has not delivered, forgetting those it has, and the copies in flight.
func (r *handoffQuota) unacked(member string, st handoffState) int64 {
	seqs := r.undelivered[member]
	i := 0
	for i < len(seqs) && seqs[i] <= st.delivered {
		i++
	}
	seqs = append(seqs[:0], seqs[i:]...)
	if len(seqs) == 0 {
		delete(r.undelivered, member)
	} else {
		r.undelivered[member] = seqs
	}
	return st.ackPending + max(st.pending, int64(len(seqs))) + r.inflight[member]
}

// shouldLog reports whether member's handoff is due a log line, at most once per
// fullLogEvery; the counters and gaps record every refused copy.
func (r *handoffQuota) shouldLog(member string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.logged[member]) < fullLogEvery {
		return false
	}
	r.logged[member] = now
	return true
}

// handoffState reads member's dlv_<id> consumer.
func (s *Service) handoffState(ctx context.Context, member string) (handoffState, error) {
	c, err := s.js.Consumer(ctx, s.names.DLVStream(), s.names.DLVConsumer(member))
	if err != nil {
		return handoffState{}, fmt.Errorf("open %s: %w", s.names.DLVConsumer(member), err)
	}
	info := c.CachedInfo()
	return handoffState{pending: int64(info.NumPending), ackPending: int64(info.NumAckPending),
		delivered: info.Delivered.Stream}, nil
}
