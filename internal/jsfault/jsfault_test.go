package jsfault

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestOnlyTheFirstAnswerIsLost: the first call waits for its context and fails with its
// error; the next ones reach the server.
func TestOnlyTheFirstAnswerIsLost(t *testing.T) {
	js := JetStream(t)
	lose := &LoseFirst{JetStream: js}
	cfg := jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.MemoryStorage}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := lose.CreateOrUpdateStream(short, cfg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first call = %v, want the context's deadline", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := lose.CreateOrUpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := lose.Stream(ctx, "S"); err != nil {
		t.Fatal(err)
	}
	if _, err := lose.KeyValue(ctx, "missing"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("KeyValue = %v, want the server's not found", err)
	}
	if _, err := lose.CreateOrUpdateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "C"}); err != nil {
		t.Fatal(err)
	}
	if got := lose.Asked(); got != 5 {
		t.Errorf("Asked = %d, want 5", got)
	}
}
