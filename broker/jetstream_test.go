package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func jetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return js
}

// createStream creates stream name capturing "<lowercase name>.>".
func createStream(t testing.TB, js jetstream.JetStream, name string, storage jetstream.StorageType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: storage}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatalf("create stream %s: %v", name, err)
	}
}

func publish(t testing.TB, js jetstream.JetStream, subject string, payloads ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range payloads {
		if _, err := js.Publish(ctx, subject, []byte(p)); err != nil {
			t.Fatalf("publish %q to %s: %v", p, subject, err)
		}
	}
}

// readAll returns every message payload of stream, in order.
func readAll(t testing.TB, js jetstream.JetStream, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("look up stream %s: %v", stream, err)
	}
	last := s.CachedInfo().State.LastSeq
	var out []string
	for seq := s.CachedInfo().State.FirstSeq; seq <= last && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get message %d of %s: %v", seq, stream, err)
		}
		out = append(out, string(m.Data))
	}
	return out
}
