package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStalled means a run stopped making progress before everything it waited for arrived.
var ErrStalled = errors.New("bench: no progress")

// stallAfter is how long a run may go without a single arrival before it is given up.
const stallAfter = 10 * time.Second

// tally counts arrivals from any number of goroutines and notes when the last one came.
type tally struct {
	n    atomic.Int64
	last atomic.Int64 // UnixNano of the latest arrival
}

func (t *tally) add() {
	t.n.Add(1)
	t.last.Store(time.Now().UnixNano())
}

func (t *tally) count() int64 { return t.n.Load() }

// lastAt is the time of the latest arrival; zero before the first.
func (t *tally) lastAt() time.Time {
	ns := t.last.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// waitCount waits until the tally reaches want.
func (t *tally) waitCount(ctx context.Context, want int64) error {
	return await(ctx, fmt.Sprintf("%d arrivals", want), t.count, func() (bool, error) {
		return t.count() >= want, nil
	})
}

// await polls done every pollEvery until it holds, failing with ErrStalled when progress has
// not moved for stallAfter, or with ctx's error or done's.
func await(ctx context.Context, what string, progress func() int64, done func() (bool, error)) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	seen, since := progress(), time.Now()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
		if n := progress(); n != seen {
			seen, since = n, time.Now()
		} else if time.Since(since) > stallAfter {
			return fmt.Errorf("%w for %v waiting for %s (progress %d)", ErrStalled, stallAfter, what, n)
		}
	}
}

// pollEvery is how often await checks: fine enough not to blur a run of a second.
const pollEvery = time.Millisecond

// probe times single messages in flight: the sender marks the start, every receiver reports
// its arrival, and the sender waits for the arrivals it expects.
type probe struct {
	start   atomic.Int64 // UnixNano of the current send
	arrived chan time.Duration
	mu      sync.Mutex
	samples []time.Duration
}

func newProbe(receivers int) *probe {
	return &probe{arrived: make(chan time.Duration, 4*receivers)}
}

// hit records one arrival of the message in flight. Arrivals outside a probe are ignored.
func (p *probe) hit() {
	s := p.start.Load()
	if s == 0 {
		return
	}
	select {
	case p.arrived <- time.Since(time.Unix(0, s)):
	default:
	}
}

// round sends one message with send and waits for n arrivals, keeping their latencies.
func (p *probe) round(ctx context.Context, n int, send func(context.Context) error) error {
	p.start.Store(time.Now().UnixNano())
	defer p.start.Store(0)
	if err := send(ctx); err != nil {
		return err
	}
	timeout := time.NewTimer(stallAfter)
	defer timeout.Stop()
	for range n {
		select {
		case d := <-p.arrived:
			p.mu.Lock()
			p.samples = append(p.samples, d)
			p.mu.Unlock()
		case <-timeout.C:
			return fmt.Errorf("%w: a message in flight did not arrive within %v", ErrStalled, stallAfter)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// rounds runs count rounds of n arrivals each and returns every latency measured.
func (p *probe) rounds(ctx context.Context, count, n int, send func(context.Context) error) ([]time.Duration, error) {
	for range count {
		if err := p.round(ctx, n, send); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.samples, nil
}
