package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cotal-go/cotal/wire"
)

// followBuffer is how many bucket writes a follow subscription holds before the server counts
// it a slow consumer; a drop restarts the follow from a fresh snapshot.
const followBuffer = 8192

// followFlush bounds the round trip that registers a follow subscription with the server.
const followFlush = 10 * time.Second

// followCheck is how often a follow looks for writes its subscription dropped.
const followCheck = time.Second

// follow keeps c current without a JetStream consumer (docs/hostile-agents.md "Bounded
// shares"): the presence bucket caps consumers, and an agent can hold every slot with busy pull
// consumers of its own, which would leave a watch of the mesh's refused. The delivery
// connection lives in the storage account, where every write to the bucket is published, so it
// subscribes to the bucket's subjects with a core subscription, then takes a snapshot of the
// current values (STREAM.INFO with a subjects filter, then the last message of each subject by
// STREAM.MSG.GET), and only then opens the gate and reports up. Writes seen by the subscription
// are applied after the snapshot in the order they were published, so the rows end as the
// bucket's latest values.
//
// What it trades: a write the stream refuses (its bucket full, a failed compare-and-set) is
// still applied. The presence bucket is written only by each instance on its own key, through
// a put, and its rows feed @mention resolution only; the decode validates each one.
func (c *kvCache[T]) follow(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, up func()) error {
	defer c.gate.set(false)
	prefix := "$KV." + c.bucket + "."
	ch := make(chan *nats.Msg, followBuffer)
	sub, err := nc.ChanSubscribe(prefix+">", ch)
	if err != nil {
		return fmt.Errorf("subscribe to bucket %s: %w", c.bucket, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The subscription is registered with the server before the snapshot is read, so no write
	// falls between the two.
	fctx, cancel := context.WithTimeout(ctx, followFlush)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("subscribe to bucket %s: %w", c.bucket, err)
	}
	rows, err := c.snapshot(ctx, js, prefix)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.rows = rows
	c.mu.Unlock()
	c.open(up)

	tick := time.NewTicker(followCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-ch:
			key := strings.TrimPrefix(m.Subject, prefix)
			c.mu.Lock()
			c.applyValue(c.rows, c.rows, key, kvOp(m.Header), m.Data, 0)
			c.mu.Unlock()
			if c.written != nil {
				c.written(key)
			}
		case <-tick.C:
			if !sub.IsValid() {
				return fmt.Errorf("subscription to bucket %s closed", c.bucket)
			}
			if n, err := sub.Dropped(); err != nil || n > 0 {
				return fmt.Errorf("subscription to bucket %s dropped %d writes (%v); taking a fresh snapshot", c.bucket, n, err)
			}
		}
	}
}

// snapshot reads the bucket's current value of every key without a consumer. A key whose
// value expired between the listing and its read is left out.
func (c *kvCache[T]) snapshot(ctx context.Context, js jetstream.JetStream, prefix string) (map[string]T, error) {
	stream, err := js.Stream(ctx, wire.KVStream(c.bucket))
	if err != nil {
		return nil, fmt.Errorf("snapshot of bucket %s: %w", c.bucket, err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, fmt.Errorf("snapshot of bucket %s: %w", c.bucket, err)
	}
	c.mu.RLock()
	prev := c.rows
	c.mu.RUnlock()
	rows := make(map[string]T, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		m, err := stream.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot of bucket %s, key %s: %w", c.bucket, subject, err)
		}
		c.applyValue(rows, prev, strings.TrimPrefix(subject, prefix), kvOp(m.Header), m.Data, m.Sequence)
	}
	return rows, nil
}

// kvOp is the KV operation a bucket message's KV-Operation header names: a put without one.
func kvOp(h nats.Header) jetstream.KeyValueOp {
	switch h.Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	return jetstream.KeyValuePut
}
