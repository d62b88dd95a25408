// Package jsfault lets a test lose the answer to a JetStream request, as a clustered
// JetStream does when a leader changes under the request: the metadata leader drops a create
// it can no longer propose, and a stream without a leader answers no info request. The
// request is not refused; it waits until its context ends, which is what a caller bounding
// its requests must survive.
package jsfault

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LoseFirst is a JetStream whose first Stream, KeyValue, CreateOrUpdateStream or
// CreateOrUpdateConsumer call, of all four together, gets no answer: it returns its context's error once the context ends.
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

// CreateOrUpdateConsumer creates or updates a consumer, losing the answer if it is the first
// call.
func (j *LoseFirst) CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if j.lost(ctx) {
		return nil, ctx.Err()
	}
	return j.JetStream.CreateOrUpdateConsumer(ctx, stream, cfg)
}

// JetStream starts a bare embedded nats-server with JetStream for t, connects to it in
// process and returns the connection's JetStream: the real thing a LoseFirst wraps in a test
// that needs no mesh. The server and connection end with t.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	srv, err := server.NewServer(&server.Options{ServerName: "jsfault", DontListen: true,
		JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("embedded nats-server not ready within 10s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
