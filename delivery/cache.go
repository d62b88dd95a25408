package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// kvCache is an in-memory copy of a KV bucket, fed by one long-lived watch (docs/durable.md
// "Views kept in memory": never a Get or a key listing per message). Rows that do not decode,
// such as a JetStream acknowledgement written onto a key through an injected reply subject
// (docs/hostile-agents.md "Reply subjects are the requester's"), are dropped and counted, and
// the last valid row for that key is kept: an agent must not be able to erase a row by
// overwriting it.
type kvCache[T any] struct {
	bucket string
	decode func(key string, data []byte) (T, error)
	// quick, when set, takes a value from the key's previous row without decoding, when the
	// value differs from it only in what needs no validation (a presence heartbeat's ts).
	quick func(prev T, data []byte) (T, bool)
	// written, when set, is told the key of every write the follower sees.
	written func(key string)
	gate    *gate // open while rows is complete and the watch runs
	// loaded opens once rows was first complete and never closes: the fan-out routes on the
	// last known rows of a cache whose watch is down (see Service.waitViews).
	loaded  *gate
	invalid *atomic.Int64
	log     *slog.Logger

	mu   sync.RWMutex
	rows map[string]T
}

func newKVCache[T any](bucket string, decode func(string, []byte) (T, error), invalid *atomic.Int64, log *slog.Logger) *kvCache[T] {
	return &kvCache[T]{bucket: bucket, decode: decode, gate: newGate(), loaded: newGate(), invalid: invalid, log: log, rows: map[string]T{}}
}

// get returns the row under key.
func (c *kvCache[T]) get(key string) (T, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.rows[key]
	return v, ok
}

// each calls fn for every row, under the read lock; fn must not call back into c.
func (c *kvCache[T]) each(fn func(key string, v T)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k, v := range c.rows {
		fn(k, v)
	}
}

// run watches kv until ctx ends or the watch fails. A (re)started watch first rebuilds the
// rows from the bucket's current values, and only then opens the gate and reports up.
func (c *kvCache[T]) run(ctx context.Context, kv jetstream.KeyValue, up func()) error {
	defer c.gate.set(false)
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", c.bucket, err)
	}
	defer func() { _ = w.Stop() }()

	c.mu.RLock()
	prev := c.rows
	c.mu.RUnlock()
	staged := map[string]T{}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("watch of bucket %s closed", c.bucket)
			case e == nil && staged != nil:
				c.mu.Lock()
				c.rows = staged
				c.mu.Unlock()
				staged = nil
				c.open(up)
			case e == nil:
			case staged != nil:
				c.apply(staged, prev, e)
			default:
				c.mu.Lock()
				c.apply(c.rows, c.rows, e)
				c.mu.Unlock()
			}
		}
	}
}

// open marks the rows complete and current, and reports up.
func (c *kvCache[T]) open(up func()) {
	c.gate.set(true)
	c.loaded.set(true)
	up()
}

// apply records e in dst; an invalid value keeps prev's row for the key.
func (c *kvCache[T]) apply(dst, prev map[string]T, e jetstream.KeyValueEntry) {
	c.applyValue(dst, prev, e.Key(), e.Operation(), e.Value(), e.Revision())
}

// applyValue records a key's new value, or its deletion for any operation but a put, in dst;
// an invalid value keeps prev's row for the key. rev is for the log only (zero if unknown).
func (c *kvCache[T]) applyValue(dst, prev map[string]T, key string, op jetstream.KeyValueOp, value []byte, rev uint64) {
	if op != jetstream.KeyValuePut {
		delete(dst, key)
		return
	}
	if p, ok := prev[key]; ok && c.quick != nil {
		if v, ok := c.quick(p, value); ok {
			dst[key] = v
			return
		}
	}
	v, err := c.decode(key, value)
	if err != nil {
		c.invalid.Add(1)
		c.log.Warn("dropping an invalid value; keeping the last valid one",
			"bucket", c.bucket, "key", key, "revision", rev, "err", err)
		if p, ok := prev[key]; ok {
			dst[key] = p
		}
		return
	}
	dst[key] = v
}
