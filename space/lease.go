package space

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// lease is one node's claim on a space's backstop in a cluster (docs/durable.md "The cluster
// lease"): the key wire.BackstopLeaseKey of the space's backstop bucket holds the holder's node
// name. The bucket's records expire wire.BackstopLeaseTTL after their last write (the stream's
// MaxAge), so a holder that dies lets go by itself. A holder renews by compare-and-set every
// tick; a contender creates the key, which succeeds only while it is absent or deleted.
//
// At most one holder runs at a time: a holder counts its term from the moment it sent its last
// successful renewal, which the server stored no earlier, and gives up (stops what it runs)
// once renewWithin has passed without another, while the server keeps the record until ttl
// after storing it. renewWithin < ttl leaves the stopping holder ttl-renewWithin to wind down
// before anyone else can create the key.
type lease struct {
	kv          jetstream.KeyValue
	holder      string        // this node's name, the value written
	tick        time.Duration // how often a holder renews and a contender tries
	renewWithin time.Duration // a holder that has not renewed for this long gives up
}

// Lease timing for the backstop: renew and try every second, give up after three, while the
// record lives wire.BackstopLeaseTTL (five).
const (
	leaseTick        = time.Second
	leaseRenewWithin = 3 * time.Second
)

func newLease(kv jetstream.KeyValue, holder string) *lease {
	return &lease{kv: kv, holder: holder, tick: leaseTick, renewWithin: leaseRenewWithin}
}

// hold tries to take the lease every tick until ctx ends. Each time it holds the lease it runs
// held with a context that ends when the lease is lost (or ctx ends), and waits for held to
// return before trying again. When ctx ends while it holds the lease, it releases it, so
// another node takes over within a tick instead of a TTL.
func (l *lease) hold(ctx context.Context, held func(context.Context)) {
	t := time.NewTicker(l.tick)
	defer t.Stop()
	var (
		rev     uint64
		renewed time.Time // when the last successful write was sent
		cancel  context.CancelFunc
		running sync.WaitGroup
	)
	stop := func() {
		if cancel != nil {
			cancel()
			running.Wait()
			cancel = nil
		}
	}
	defer func() {
		stop()
		if rev != 0 {
			l.release(context.WithoutCancel(ctx), rev)
		}
	}()
	for {
		sent := time.Now()
		rctx, done := context.WithTimeout(ctx, l.tick)
		if rev == 0 {
			if r, err := l.kv.Create(rctx, wire.BackstopLeaseKey, []byte(l.holder)); err == nil {
				rev, renewed = r, sent
				hctx, c := context.WithCancel(ctx)
				cancel = c
				running.Go(func() { held(hctx) })
			}
		} else {
			r, err := l.kv.Update(rctx, wire.BackstopLeaseKey, []byte(l.holder), rev)
			switch {
			case err == nil:
				rev, renewed = r, sent
			case wrongRevision(err):
				// Another node holds it, or a renewal whose answer was lost moved the record
				// on; only then does it still name this holder, whose term still counts from
				// the last answered renewal.
				if rev = l.ours(rctx); rev == 0 {
					stop()
				}
			}
		}
		done()
		// A holder that cannot renew, or whose record may be gone by the time it learns,
		// gives up.
		if rev != 0 && time.Since(renewed) >= l.renewWithin {
			stop()
			rev = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ours returns the revision of the lease record when it names this holder, else 0. Only this
// holder writes its name, so such a record is its own, whatever revision it is at.
func (l *lease) ours(ctx context.Context) uint64 {
	e, err := l.kv.Get(ctx, wire.BackstopLeaseKey)
	if err != nil || string(e.Value()) != l.holder {
		return 0
	}
	return e.Revision()
}

// release deletes the lease record this holder wrote at rev, or at a later revision when a
// renewal's answer was lost (a stop that cut one short), so that another node takes over
// within a tick, not the record's TTL.
func (l *lease) release(ctx context.Context, rev uint64) {
	ctx, done := context.WithTimeout(ctx, l.renewWithin)
	defer done()
	err := l.kv.Delete(ctx, wire.BackstopLeaseKey, jetstream.LastRevision(rev))
	if wrongRevision(err) {
		if rev = l.ours(ctx); rev != 0 {
			_ = l.kv.Delete(ctx, wire.BackstopLeaseKey, jetstream.LastRevision(rev))
		}
	}
}

// wrongRevision reports whether err is a compare-and-set write refused because the key moved
// on: the record expired and another node created it.
func wrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// leaseHolder reads the node named in kv's lease, or "" when none holds it.
func leaseHolder(ctx context.Context, kv jetstream.KeyValue) (string, error) {
	e, err := kv.Get(ctx, wire.BackstopLeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}
