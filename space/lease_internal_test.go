package space

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/internal/await"
	"github.com/cotal-go/cotal/wire"
)

// stallingKV is a lease bucket that, once stalled, fails every write: a holder cut off from
// JetStream, which can neither renew nor release.
type stallingKV struct {
	jetstream.KeyValue
	stalled atomic.Bool
}

var errStalled = errors.New("stalled")

// countingKV counts the creates a contender sends, so a test can wait for it to have tried.
type countingKV struct {
	jetstream.KeyValue
	creates atomic.Int64
}

func (k *countingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	k.creates.Add(1)
	return k.KeyValue.Create(ctx, key, value, opts...)
}

func (k *stallingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if k.stalled.Load() {
		return 0, errStalled
	}
	return k.KeyValue.Create(ctx, key, value, opts...)
}

func (k *stallingKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if k.stalled.Load() {
		return 0, errStalled
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

func (k *stallingKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if k.stalled.Load() {
		return errStalled
	}
	return k.KeyValue.Delete(ctx, key, opts...)
}

// lostAnswerKV is a lease bucket whose next update, once armed, is stored but answered with
// an error, as a renewal is whose answer is lost or whose caller stops waiting; lost runs then.
type lostAnswerKV struct {
	jetstream.KeyValue
	armed atomic.Bool
	lost  func()
	// updates counts the updates answered without error.
	updates atomic.Int64
}

func (k *lostAnswerKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	r, err := k.KeyValue.Update(ctx, key, value, rev)
	if err == nil && k.armed.CompareAndSwap(true, false) {
		k.lost()
		return 0, context.DeadlineExceeded
	}
	if err == nil {
		k.updates.Add(1)
	}
	return r, err
}

// backstopBucket is the backstop bucket of a new test mesh's space main, as the delivery
// identity reaches it.
func backstopBucket(ctx context.Context, t *testing.T) jetstream.KeyValue {
	t.Helper()
	m := startTestMesh(t, Options{Memory: true})
	rt, err := m.runtime("main")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(rt.dlvConn)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, rt.names.BackstopBucket())
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// holders counts who runs what a lease guards, and fails the test if two ever do at once.
type holders struct {
	t       *testing.T
	running atomic.Int32
	mu      sync.Mutex
	log     []string
}

func (h *holders) run(name string) func(context.Context) {
	return func(ctx context.Context) {
		if n := h.running.Add(1); n > 1 {
			h.t.Errorf("%s took the lease while another holder still ran (%d running)", name, n)
		}
		h.mu.Lock()
		h.log = append(h.log, name)
		h.mu.Unlock()
		<-ctx.Done()
		h.running.Add(-1)
	}
}

func (h *holders) took() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

// TestTheBackstopLeaseHasOneHolder: of two contenders one wins; a winner that can no longer
// renew stops before the other takes over, once the record expires; a winner that stops
// releases the lease, and the other takes it within a tick. The lease is held through the
// delivery identity's grants.
func TestTheBackstopLeaseHasOneHolder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	raw := backstopBucket(ctx, t)
	h := &holders{t: t}
	contend := func(name string, kv jetstream.KeyValue) (stop func()) {
		l := &lease{kv: kv, holder: name, tick: 100 * time.Millisecond, renewWithin: time.Second}
		lctx, lcancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { l.hold(lctx, h.run(name)) })
		return func() { lcancel(); wg.Wait() }
	}
	a := &stallingKV{KeyValue: raw}
	stopA := contend("a", a)
	defer stopA()
	await.True(t, 5*time.Second, "a takes the free lease", func() bool { return len(h.took()) == 1 })
	b := &countingKV{KeyValue: raw}
	stopB := contend("b", b)
	defer stopB()
	await.True(t, 5*time.Second, "b to try for the lease five times while a renews", func() bool { return b.creates.Load() >= 5 })
	if got := h.took(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("holders %v, want a alone", got)
	}

	stalled := time.Now()
	a.stalled.Store(true)
	await.True(t, wire.BackstopLeaseTTL+3*time.Second, "b takes the lease a can no longer renew", func() bool { return len(h.took()) == 2 })
	t.Logf("b took over %v after a stalled (record TTL %v)", time.Since(stalled), wire.BackstopLeaseTTL)
	if got := h.took(); got[1] != "b" {
		t.Fatalf("holders %v", got)
	}
	if holder, err := leaseHolder(ctx, raw); err != nil || holder != "b" {
		t.Fatalf("the lease names %q (%v), want b", holder, err)
	}

	a.stalled.Store(false)
	released := time.Now()
	stopB()
	// Released, not left to expire: the record is gone (or already a's) once b has stopped, so
	// a takes it at its next tick, however loaded the machine.
	if holder, err := leaseHolder(ctx, raw); err != nil || holder == "b" {
		t.Fatalf("after b stopped the lease names %q (%v); b did not release it", holder, err)
	}
	await.True(t, testWait, "a takes the lease b released", func() bool { return len(h.took()) == 3 })
	t.Logf("a took over %v after b released the lease", time.Since(released))
}

// TestARenewalWhoseAnswerWasLostKeepsTheLease: the record a lost renewal moved on still names
// the holder, so it goes on holding (and renewing) rather than stopping until the record's TTL;
// and a holder stopped with such a renewal outstanding still releases the record.
func TestARenewalWhoseAnswerWasLostKeepsTheLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		stop bool // the holder is stopped as the lost answer comes back
	}{
		{"the holder goes on", false},
		{"the holder stops", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testWait)
			defer cancel()
			raw := backstopBucket(ctx, t)
			h := &holders{t: t}
			var wg sync.WaitGroup
			defer wg.Wait()
			lctx, lcancel := context.WithCancel(ctx)
			defer lcancel()
			kv := &lostAnswerKV{KeyValue: raw, lost: func() {}}
			if tt.stop {
				kv.lost = lcancel
			}
			l := &lease{kv: kv, holder: "a", tick: 100 * time.Millisecond, renewWithin: time.Second}
			wg.Go(func() { l.hold(lctx, h.run("a")) })
			await.True(t, 5*time.Second, "a takes the lease", func() bool { return len(h.took()) == 1 })
			kv.armed.Store(true)
			if tt.stop {
				wg.Wait()
				if holder, err := leaseHolder(ctx, raw); err != nil || holder != "" {
					t.Fatalf("after a stopped the lease names %q (%v); a did not release it", holder, err)
				}
				return
			}
			await.True(t, 5*time.Second, "the lost answer", func() bool { return !kv.armed.Load() })
			after := kv.updates.Load()
			await.True(t, 5*time.Second, "three renewals after the lost one", func() bool { return kv.updates.Load() >= after+3 })
			if got := h.took(); len(got) != 1 || h.running.Load() != 1 {
				t.Fatalf("holders %v, %d running; want a, holding throughout", got, h.running.Load())
			}
		})
	}
}
