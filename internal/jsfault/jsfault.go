// Package jsfault lets a test lose the answer to a JetStream request, as a clustered
// JetStream does when a leader changes under the request: the metadata leader drops a create
// it can no longer propose, and a stream without a leader answers no info request. The
// request is not refused; it waits until its context ends, which is what a caller bounding
// its requests must survive.
package jsfault

import (
	"context"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// LoseFirst is a JetStream whose first Stream, KeyValue or CreateOrUpdateStream call, of
// all three together, gets no answer: it returns its context's error once the context ends.
// Every later call goes to the JetStream it wraps.
type LoseFirst struct {
	jetstream.JetStream
	asked atomic.Int64
}

// Asked is how many of those calls were made, the lost one included.
func (j *LoseFirst) Asked() int64 { return j.asked.Load() }

// lost counts a call and reports whether it is the one to lose, after waiting for ctx.
func (j *LoseFirst) lost(ctx context.Context) bool {
	if j.asked.Add(1) != 1 {
		return false
	}
	<-ctx.Done()
	return true
}

// Stream looks up a stream, losing the answer if it is the first call.
func (j *LoseFirst) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if j.lost(ctx) {
		return nil, ctx.Err()
	}
	return j.JetStream.Stream(ctx, name)
}

// KeyValue binds a bucket, losing the answer if it is the first call.
func (j *LoseFirst) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if j.lost(ctx) {
		return nil, ctx.Err()
	}
	return j.JetStream.KeyValue(ctx, bucket)
}

// CreateOrUpdateStream creates or updates a stream, losing the answer if it is the first call.
func (j *LoseFirst) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if j.lost(ctx) {
		return nil, ctx.Err()
	}
	return j.JetStream.CreateOrUpdateStream(ctx, cfg)
}
